package memtable

import (
	"errors"
	"fmt"

	"github.com/google/btree"

	"github.com/bloomkv/bloomkv/kv"
)

// BTreeG has no cursor: each Ascend/Descend call descends from the root,
// O(log n). Rather than one descent per step, the iterator copies a window
// of consecutive entries into a buffer with one call and steps through the
// buffer; it refills when it walks off either end. The first fill after a
// seek is small, because a merging iterator often seeks and reads a few
// entries; each refill in a row doubles the window up to maxWindow, so a
// long scan costs one descent per few hundred entries.
const (
	minWindow = 16
	maxWindow = 256
)

var errClosed = errors.New("bloomkv/memtable: iterator used after Close")

// iterator implements kv.Iterator over a read-only clone of a
// memtable's tree.
//
// The window win holds consecutive tree entries in ascending order; pos
// indexes it, and pos == -1 or pos == len(win) mean "just before" or "just
// after" the window, which is where Prev and Next land when they run off an
// end of the tree (so a later Next or Prev steps back onto it). atFirst says
// nothing in the tree precedes the window, atLast that nothing follows it.
// When the window is empty these still say which way entries lie: after a
// SeekGE that found nothing every entry is before the position (atLast), and
// after a SeekLT that found nothing every entry is after it (atFirst).
type iterator struct {
	tree    *btree.BTreeG[entry]
	win     []entry
	spare   []entry // the next window is built here, then swapped in
	pos     int
	atFirst bool
	atLast  bool
	size    int // size of the next refill
	err     error

	// State of one fill: collect appends to spare until it holds limit
	// entries, skipping the first entry visited if it equals anchor
	// (turning the tree's inclusive Ascend/Descend bounds exclusive).
	limit      int
	anchor     entry
	skipAnchor bool
	collectFn  func(entry) bool // it.collect, bound once to avoid an allocation per fill
	mem        *Memtable        // for its filter (SeekPrefixGE); nil in tests
	codec      *keyCodec        // the codec of tree's entries, for seek pivots; nil: empty
}

// SeekPrefixGE is SeekGE, unless the memtable's filter says no key has
// prefix: then the iterator is invalid, and must be positioned again before
// it moves (a caller turning around re-seeks). The filter only grows, so it
// holds every key of the iterator's view. The engine's prefix iterators
// find this method by a type assertion on the kv.Iterator NewIter returns.
func (it *iterator) SeekPrefixGE(prefix, ikey []byte) bool {
	if it.mem != nil && !it.mem.MayContainPrefix(prefix) {
		it.win, it.pos = it.win[:0], 0
		return false
	}
	return it.SeekGE(ikey)
}

func newIterator(tree *btree.BTreeG[entry]) *iterator {
	it := &iterator{tree: tree, pos: -1}
	it.collectFn = it.collect
	return it
}

func (it *iterator) collect(e entry) bool {
	if it.skipAnchor {
		it.skipAnchor = false
		if compareEntries(e, it.anchor) == 0 {
			return true
		}
	}
	it.spare = append(it.spare, e)
	return len(it.spare) < it.limit
}

type direction int8

const (
	forward direction = iota
	backward
)

// fill builds the next window in spare: up to limit entries in direction dir
// starting at anchor (all the way from the tree's end when hasAnchor is
// false), excluding anchor itself when exclusive. spare comes back in
// ascending order. It returns the number of entries found.
func (it *iterator) fill(dir direction, anchor entry, hasAnchor, exclusive bool, limit int) int {
	it.spare = it.spare[:0]
	it.limit = limit
	it.anchor = anchor
	it.skipAnchor = exclusive
	switch {
	case dir == forward && hasAnchor:
		it.tree.AscendGreaterOrEqual(anchor, it.collectFn)
	case dir == forward:
		it.tree.Ascend(it.collectFn)
	case hasAnchor:
		it.tree.DescendLessOrEqual(anchor, it.collectFn)
	default:
		it.tree.Descend(it.collectFn)
	}
	it.anchor = entry{} // do not pin the caller's seek key
	if dir == backward {
		s := it.spare
		for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
			s[i], s[j] = s[j], s[i]
		}
	}
	return len(it.spare)
}

// swap makes spare the window.
func (it *iterator) swap() { it.win, it.spare = it.spare, it.win }

// seekTo loads a fresh window for an absolute positioning call.
func (it *iterator) seekTo(dir direction, anchor entry, hasAnchor, exclusive bool) bool {
	if it.tree == nil {
		it.err = errClosed
		return false
	}
	it.err = nil
	it.size = minWindow
	n := it.fill(dir, anchor, hasAnchor, exclusive, minWindow)
	it.swap()
	short := n < minWindow
	if dir == forward {
		it.pos = 0
		it.atFirst = !hasAnchor
		it.atLast = short
	} else {
		it.pos = n - 1
		it.atFirst = short
		it.atLast = !hasAnchor
	}
	return it.Valid()
}

// parseSeekKey turns an internal key into a pivot without copying it.
func (it *iterator) parseSeekKey(ikey []byte) (entry, bool) {
	if len(ikey) < kv.TrailerLen {
		it.err = fmt.Errorf("bloomkv/memtable: seek key %q is shorter than its %d-byte trailer", ikey, kv.TrailerLen)
		it.win, it.pos = it.win[:0], -1
		it.atFirst, it.atLast = false, false
		return entry{}, false
	}
	return it.codec.pivot(kv.UserKey(ikey), kv.Trailer(ikey)), true
}

// SeekGE moves to the first entry whose internal key is >= ikey.
func (it *iterator) SeekGE(ikey []byte) bool {
	p, ok := it.parseSeekKey(ikey)
	if !ok {
		return false
	}
	return it.seekTo(forward, p, true, false)
}

// SeekLT moves to the last entry whose internal key is < ikey.
func (it *iterator) SeekLT(ikey []byte) bool {
	p, ok := it.parseSeekKey(ikey)
	if !ok {
		return false
	}
	return it.seekTo(backward, p, true, true)
}

func (it *iterator) First() bool { return it.seekTo(forward, entry{}, false, false) }

func (it *iterator) Last() bool { return it.seekTo(backward, entry{}, false, false) }

// Next moves to the following entry. On an iterator that was never
// positioned it acts as First; after running off the end it stays there.
func (it *iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.pos+1 < len(it.win) {
		it.pos++
		return true
	}
	if it.atLast {
		it.pos = len(it.win)
		return false
	}
	if len(it.win) == 0 {
		return it.First()
	}
	return it.refill(forward)
}

// Prev moves to the preceding entry. On an iterator that was never
// positioned it acts as Last; after running off the start it stays there.
func (it *iterator) Prev() bool {
	if it.err != nil {
		return false
	}
	if it.pos-1 >= 0 && it.pos-1 < len(it.win) {
		it.pos--
		return true
	}
	if it.atFirst {
		it.pos = -1
		return false
	}
	if len(it.win) == 0 {
		return it.Last()
	}
	return it.refill(backward)
}

// refill replaces the window with the entries just beyond it in direction
// dir. If there are none, the window stays and the iterator rests just
// outside it, so stepping back needs no descent.
func (it *iterator) refill(dir direction) bool {
	if it.tree == nil {
		it.err = errClosed
		return false
	}
	it.size = min(it.size*2, maxWindow)
	var anchor entry
	if dir == forward {
		anchor = it.win[len(it.win)-1]
	} else {
		anchor = it.win[0]
	}
	n := it.fill(dir, anchor, true, true, it.size)
	if n == 0 {
		if dir == forward {
			it.atLast, it.pos = true, len(it.win)
		} else {
			it.atFirst, it.pos = true, -1
		}
		return false
	}
	it.swap()
	short := n < it.size
	if dir == forward {
		it.pos, it.atFirst, it.atLast = 0, false, short
	} else {
		it.pos, it.atFirst, it.atLast = n-1, short, false
	}
	return true
}

func (it *iterator) Valid() bool { return it.pos >= 0 && it.pos < len(it.win) }

// Key returns the current internal key; it stays valid for the life of the
// memtable (entries are immutable), which is longer than the interface
// promises. It returns nil when the iterator is not valid.
func (it *iterator) Key() []byte {
	if !it.Valid() {
		return nil
	}
	return it.win[it.pos].internalKey()
}

// Value returns the current value, with the same lifetime as Key, or nil
// when the iterator is not valid.
func (it *iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	return it.win[it.pos].value()
}

func (it *iterator) Error() error { return it.err }

// Close releases the iterator's view of the tree. Later positioning calls
// fail with an error rather than panic.
func (it *iterator) Close() error {
	it.tree = nil
	it.win, it.spare = nil, nil
	it.pos = -1
	it.atFirst, it.atLast = false, false
	return nil
}
