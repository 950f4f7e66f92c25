package sstable

import "github.com/bloomkv/bloomkv/kv"

// blockIter walks one decoded block in both directions. It relies on the
// invariants decodeBlock established, so it has no error paths. The zero
// value is an exhausted iterator; init points it at a block.
//
// Key returns a buffer the iterator owns (keys are prefix compressed, so
// they are rebuilt entry by entry); Value aliases the block. In a compact
// index partition Key is the whole index key and h the entry's block
// handle (index_compact.go); Value is the encoded value.
type blockIter struct {
	b     *block
	off   int // offset of the current entry
	next  int // offset of the entry after it
	key   []byte
	value []byte
	h     blockHandle // compact blocks only
	valid bool
}

func (it *blockIter) init(b *block) {
	it.b = b
	it.valid = false
}

// clear drops the block reference so a pooled iterator pins no memory.
func (it *blockIter) clear() {
	it.b = nil
	it.value = nil
	it.valid = false
}

// decodeAt makes the entry at off current. When off is a restart point, or
// the entry right after the current one, the key (and in a compact block
// the handle) rebuilds correctly from the current one.
func (it *blockIter) decodeAt(off int) {
	e, _ := it.b.entryAt(off)
	it.key = append(it.key[:e.shared], it.b.data[e.keyStart:e.valueStart]...)
	it.value = it.b.data[e.valueStart:e.next]
	if it.b.compact {
		it.decodeCompactValue(e.shared == 0)
	}
	it.off = off
	it.next = e.next
	it.valid = true
}

// atEnd reports whether off is past the last entry.
func (it *blockIter) atEnd(off int) bool { return off >= it.b.restartsOff }

func (it *blockIter) First() bool {
	if it.b == nil || it.atEnd(0) {
		it.valid = false
		return false
	}
	it.decodeAt(0)
	return true
}

func (it *blockIter) Last() bool {
	if it.b == nil || it.atEnd(0) {
		it.valid = false
		return false
	}
	it.decodeAt(it.b.restart(it.b.numRestarts - 1))
	for !it.atEnd(it.next) {
		it.decodeAt(it.next)
	}
	return true
}

func (it *blockIter) Next() bool {
	if !it.valid || it.atEnd(it.next) {
		it.valid = false
		return false
	}
	it.decodeAt(it.next)
	return true
}

func (it *blockIter) Prev() bool {
	if !it.valid || it.off == 0 {
		it.valid = false
		return false
	}
	// Rebuild from the last restart point before the current entry.
	target := it.off
	lo, hi := 0, it.b.numRestarts // find the last restart < target
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if it.b.restart(mid) < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	it.decodeAt(it.b.restart(lo - 1))
	for it.next < target {
		it.decodeAt(it.next)
	}
	return true
}

// SeekGE moves to the first entry whose key is >= target.
func (it *blockIter) SeekGE(target []byte) bool {
	if it.b == nil || it.atEnd(0) {
		it.valid = false
		return false
	}
	// Find the first restart whose key is >= target; the answer lies after
	// the restart before it.
	lo := it.b.searchRestarts(target)
	start := 0
	if lo > 0 {
		start = it.b.restart(lo - 1)
	}
	it.decodeAt(start)
	for kv.CompareInternal(it.key, target) < 0 {
		if it.atEnd(it.next) {
			it.valid = false
			return false
		}
		it.decodeAt(it.next)
	}
	return true
}

// SeekLT moves to the last entry whose key is < target.
func (it *blockIter) SeekLT(target []byte) bool {
	if it.SeekGE(target) {
		return it.Prev()
	}
	return it.Last()
}

func (it *blockIter) Valid() bool   { return it.valid }
func (it *blockIter) Key() []byte   { return it.key }
func (it *blockIter) Value() []byte { return it.value }
