package iterator

import "github.com/bloomkv/bloomkv/internal/base"

// NewMerging returns an iterator over the union of iters in
// base.CompareInternal order. Children are given newest source first; ties
// between equal internal keys (which unique sequence numbers rule out) go to
// the earlier child going forwards. Closing the result closes every child.
func NewMerging(iters ...base.InternalIterator) base.InternalIterator {
	m := &mergingIter{children: make([]mergeChild, len(iters))}
	for i, it := range iters {
		m.children[i] = mergeChild{iter: it, index: i}
	}
	m.heap.items = make([]*mergeChild, 0, len(iters))
	m.skippers = skipSeekers(iters)
	return m
}

// mergingIter implements NewMerging. See the package doc for the position
// invariant that makes direction switches cheap: only a step per child.
type mergingIter struct {
	children []mergeChild
	heap     mergeHeap // valid children; heap.reverse says the walk direction
	err      error
	// prefixSeek: positioned by SeekPrefixGE, so children that skipped a
	// prefix do not rest where the position invariant says; turning
	// around re-seeks them all. seekKey is scratch for that.
	// A child that skipped tables on a range filter (SkipSeeker) is in
	// the same case: prefixSeek is also set after such a seek.
	prefixSeek bool
	seekKey    []byte
	skippers   []SkipSeeker // the children that can skip (skipping.go)
}

// positionAll applies move to every child and rebuilds the heap for the
// given direction.
func (m *mergingIter) positionAll(reverse bool, move func(base.InternalIterator) bool) bool {
	m.err = nil
	m.prefixSeek = false
	for i := range m.children {
		c := &m.children[i]
		c.valid = move(c.iter)
		if !c.valid && m.noteChildError(c) {
			break
		}
	}
	return m.rebuild(reverse)
}

// noteChildError records c's error, if it has one, and reports whether it did.
func (m *mergingIter) noteChildError(c *mergeChild) bool {
	if err := c.iter.Error(); err != nil {
		m.err = err
		return true
	}
	return false
}

// rebuild refills the heap from the valid children.
func (m *mergingIter) rebuild(reverse bool) bool {
	m.heap.reverse = reverse
	m.heap.items = m.heap.items[:0]
	if m.err != nil {
		return false
	}
	for i := range m.children {
		c := &m.children[i]
		if c.valid {
			c.key = c.iter.Key()
			m.heap.items = append(m.heap.items, c)
		}
	}
	m.heap.init()
	return len(m.heap.items) > 0
}

func (m *mergingIter) SeekGE(ikey []byte) bool {
	ok := m.positionAll(false, func(it base.InternalIterator) bool { return it.SeekGE(ikey) })
	m.prefixSeek = m.anySkipped()
	return ok
}

// SeekPrefixGE seeks every child to ikey, letting those that can skip a
// prefix (base.PrefixSeeker) do so.
func (m *mergingIter) SeekPrefixGE(prefix, ikey []byte) bool {
	ok := m.positionAll(false, func(it base.InternalIterator) bool {
		if ps, isPS := it.(base.PrefixSeeker); isPS {
			return ps.SeekPrefixGE(prefix, ikey)
		}
		return it.SeekGE(ikey)
	})
	m.prefixSeek = true
	return ok
}

var _ base.PrefixSeeker = (*mergingIter)(nil)

func (m *mergingIter) SeekLT(ikey []byte) bool {
	ok := m.positionAll(true, func(it base.InternalIterator) bool { return it.SeekLT(ikey) })
	m.prefixSeek = m.anySkipped()
	return ok
}

func (m *mergingIter) First() bool {
	return m.positionAll(false, base.InternalIterator.First)
}

func (m *mergingIter) Last() bool {
	return m.positionAll(true, base.InternalIterator.Last)
}

func (m *mergingIter) Next() bool {
	if !m.Valid() {
		return false
	}
	if m.heap.reverse {
		return m.switchDirection(false)
	}
	return m.advanceTop(base.InternalIterator.Next)
}

func (m *mergingIter) Prev() bool {
	if !m.Valid() {
		return false
	}
	if !m.heap.reverse {
		return m.switchDirection(true)
	}
	return m.advanceTop(base.InternalIterator.Prev)
}

// advanceTop steps the current child in the walk direction and restores the
// heap: the steady-state cost of Next/Prev is one child step and O(log n)
// comparisons.
func (m *mergingIter) advanceTop(step func(base.InternalIterator) bool) bool {
	top := m.heap.items[0]
	if step(top.iter) {
		top.key = top.iter.Key()
		m.heap.fixTop()
		return true
	}
	top.valid = false
	if m.noteChildError(top) {
		m.heap.items = m.heap.items[:0]
		return false
	}
	m.heap.popTop()
	return len(m.heap.items) > 0
}

// switchDirection turns the walk around at the current entry. Going
// forwards, every other child rests on its first entry after the current one,
// so one Prev puts it on its last entry before the current one (an exhausted
// child's last entry is Last); symmetrically going backwards. Then the
// current child itself steps past the current entry. Ties need no special
// case because the (key, index) order is total.
func (m *mergingIter) switchDirection(reverse bool) bool {
	if m.prefixSeek {
		return m.reseek(reverse)
	}
	cur := m.heap.items[0]
	for i := range m.children {
		c := &m.children[i]
		if c == cur {
			continue
		}
		switch {
		case c.valid && reverse:
			c.valid = c.iter.Prev()
		case c.valid:
			c.valid = c.iter.Next()
		case reverse:
			c.valid = c.iter.Last()
		default:
			c.valid = c.iter.First()
		}
		if !c.valid && m.noteChildError(c) {
			return m.rebuild(reverse)
		}
	}
	if reverse {
		cur.valid = cur.iter.Prev()
	} else {
		cur.valid = cur.iter.Next()
	}
	if !cur.valid {
		m.noteChildError(cur)
	}
	return m.rebuild(reverse)
}

// reseek turns the walk around after a prefix seek by seeking every child
// from the current entry: to the last entry before it, or to the first
// after it (internal keys are unique, so only the current child holds the
// entry itself).
func (m *mergingIter) reseek(reverse bool) bool {
	m.seekKey = append(m.seekKey[:0], m.heap.items[0].key...)
	if reverse {
		return m.SeekLT(m.seekKey)
	}
	if m.SeekGE(m.seekKey) && base.CompareInternal(m.Key(), m.seekKey) == 0 {
		return m.advanceTop(base.InternalIterator.Next)
	}
	return m.Valid()
}

func (m *mergingIter) Valid() bool { return m.err == nil && len(m.heap.items) > 0 }

func (m *mergingIter) Key() []byte { return m.heap.items[0].key }

func (m *mergingIter) Value() []byte { return m.heap.items[0].iter.Value() }

func (m *mergingIter) Error() error { return m.err }

// Close closes every child and returns the first error any of them reported.
func (m *mergingIter) Close() error {
	var first error
	for i := range m.children {
		if err := m.children[i].iter.Close(); err != nil && first == nil {
			first = err
		}
		m.children[i].valid = false
	}
	m.heap.items = m.heap.items[:0]
	return first
}
