package iterator

import "github.com/bloomkv/bloomkv/internal/base"

// mergeChild is one input of a merging iterator.
type mergeChild struct {
	iter  base.InternalIterator
	index int    // position among the children; breaks ties between equal keys
	key   []byte // iter.Key(), cached while the child is valid
	valid bool   // whether iter is positioned on an entry
}

// mergeHeap is a binary heap of the valid children, ordered by (key, index)
// ascending when forward and descending when reversed, so items[0] is always
// the merged iterator's current entry. A hand-written heap (rather than
// container/heap) avoids an interface call per comparison on the hot path.
type mergeHeap struct {
	items   []*mergeChild
	reverse bool
}

// less reports whether items[i] comes before items[j] in the walk direction.
func (h *mergeHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	c := base.CompareInternal(a.key, b.key)
	if c == 0 {
		c = a.index - b.index
	}
	if h.reverse {
		return c > 0
	}
	return c < 0
}

// init establishes the heap property over all items.
func (h *mergeHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// fixTop restores the heap after items[0]'s key changed.
func (h *mergeHeap) fixTop() { h.down(0) }

// popTop removes items[0].
func (h *mergeHeap) popTop() {
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	if n > 0 {
		h.down(0)
	}
}

func (h *mergeHeap) down(i int) {
	n := len(h.items)
	for {
		first := i
		if l := 2*i + 1; l < n && h.less(l, first) {
			first = l
		}
		if r := 2*i + 2; r < n && h.less(r, first) {
			first = r
		}
		if first == i {
			return
		}
		h.items[i], h.items[first] = h.items[first], h.items[i]
		i = first
	}
}
