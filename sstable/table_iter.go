package sstable

import (
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
)

// tableIter is the two-level iterator over a table: an index-block
// iterator picks the data block, a block iterator walks it. Empty data
// blocks cannot occur (decodeBlock rejects them), but the skip loops below
// would step over them anyway.
type tableIter struct {
	r         *Reader
	fillCache bool
	stats     *ReadStats // data blocks and bytes the iterator reads; may be nil
	ra        *readahead // compaction inputs: blocks come from it (readahead.go)
	index     indexIter
	data      blockIter
	err       error
	closed    bool
	// counted: the iterator holds a counted reference to cur, the block
	// data walks, and releases it when it leaves the block, so that the
	// block's buffer can be recycled (NewIterReleasing). Otherwise blocks
	// are kept: never recycled, left to the garbage collector.
	counted bool
	cur     *block
	// keyArr backs the block iterators' key buffers while keys fit, so a
	// short scan does not allocate them (tableIter is never copied).
	keyArr [2][48]byte
}

// NewIter returns an iterator over the whole table, in both directions.
// With fillCache false (compactions, long scans) blocks read from the file
// do not enter the block cache, though cached blocks are still used.
func (r *Reader) NewIter(fillCache bool) kv.Iterator {
	return r.NewIterWithStats(fillCache, nil)
}

// NewIterWithStats is NewIter counting the data blocks it reads (from the
// cache or the file) and the bytes it reads from the file in stats.
func (r *Reader) NewIterWithStats(fillCache bool, stats *ReadStats) kv.Iterator {
	it := &tableIter{r: r, fillCache: fillCache, stats: stats}
	it.index.iter.key, it.data.key = it.keyArr[0][:0], it.keyArr[1][:0]
	it.index.init(r, fillCache, stats)
	return it
}

// NewIterReleasing is NewIterWithStats for a caller that uses each key and
// value only until the iterator's next move or Close (the public
// Iterator's contract): the iterator releases each data block as it leaves
// it, so that the block's buffer can be reused for another block once the
// cache has evicted it (block_recycle.go). A caller that keeps a key or
// value across a move must use NewIter.
func (r *Reader) NewIterReleasing(fillCache bool, stats *ReadStats) kv.Iterator {
	it := r.NewIterWithStats(fillCache, stats).(*tableIter)
	it.counted = true
	return it
}

// ReuseIterReleasing is NewIterReleasing that reinitializes prev for r
// instead of allocating, when prev is an iterator NewIterReleasing or
// ReuseIterReleasing returned and its caller has closed it and holds no
// other reference to it. Otherwise (prev nil, still open, or another kind)
// it allocates. A database iterator walking a level opens one table after
// another; reusing the closed one took the iterator's allocation out of
// every seek.
func (r *Reader) ReuseIterReleasing(prev kv.Iterator, fillCache bool, stats *ReadStats) kv.Iterator {
	it, ok := prev.(*tableIter)
	if !ok || !it.closed || !it.counted || it.ra != nil {
		return r.NewIterReleasing(fillCache, stats)
	}
	// Keep key buffers that outgrew keyArr: the next table's keys are
	// likely as long.
	ik, dk := it.index.iter.key[:0], it.data.key[:0]
	*it = tableIter{r: r, fillCache: fillCache, stats: stats, counted: true}
	it.index.iter.key, it.data.key = it.keyArr[0][:0], it.keyArr[1][:0]
	if cap(ik) > len(it.keyArr[0]) {
		it.index.iter.key = ik
	}
	if cap(dk) > len(it.keyArr[1]) {
		it.data.key = dk
	}
	it.index.init(r, fillCache, stats)
	return it
}

var _ kv.Iterator = (*tableIter)(nil)

// clearData drops the data block: the block iterator forgets it, then a
// counted reference is released.
func (it *tableIter) clearData() {
	it.data.clear()
	if it.cur != nil {
		if it.counted {
			it.cur.release()
		}
		it.cur = nil
	}
}

// loadBlock points the data iterator at the block the index iterator is on.
func (it *tableIter) loadBlock() bool {
	h, err := it.r.dataHandle(&it.index.iter)
	if err == nil {
		var b *block
		if it.ra != nil {
			b, err = it.ra.dataBlock(h)
		} else {
			b, err = it.r.loadDataBlock(h, it.fillCache, it.stats, it.counted)
		}
		if err == nil {
			it.clearData() // the block being left, released
			it.data.init(b)
			it.cur = b
			return true
		}
	}
	it.err = err
	it.clearData()
	return false
}

// forward moves to the first entry of the following blocks when the data
// iterator has run off the end of its block.
func (it *tableIter) forward(ok bool) bool {
	for !ok {
		if !it.index.Next() || !it.loadBlock() {
			it.noteIndexErr()
			it.exhausted()
			return false
		}
		ok = it.data.First()
	}
	return true
}

// exhausted drops the block (and a readahead window) when the iterator
// runs off an end of the table.
func (it *tableIter) exhausted() {
	it.clearData()
	if it.ra != nil {
		it.ra.release()
	}
}

// backward is forward's mirror image.
func (it *tableIter) backward(ok bool) bool {
	for !ok {
		if !it.index.Prev() || !it.loadBlock() {
			it.noteIndexErr()
			it.exhausted()
			return false
		}
		ok = it.data.Last()
	}
	return true
}

// noteIndexErr makes a failure to load an index partition the iterator's
// error (a move that merely ran off the index leaves it nil).
func (it *tableIter) noteIndexErr() {
	if it.err == nil {
		it.err = it.index.err
	}
}

// usable reports whether a positioning call may proceed.
func (it *tableIter) usable() bool {
	if it.closed && it.err == nil {
		it.err = fmt.Errorf("bloomkv/sstable: %s: iterator used after Close", it.r.name)
	}
	if it.err != nil {
		it.clearData()
		return false
	}
	return true
}

func (it *tableIter) SeekGE(ikey []byte) bool {
	if !it.usable() {
		return false
	}
	// The first block whose index key is >= ikey holds the answer, or the
	// answer starts the next block.
	if !it.index.SeekGE(ikey) || !it.loadBlock() {
		it.noteIndexErr()
		it.clearData()
		return false
	}
	return it.forward(it.data.SeekGE(ikey))
}

func (it *tableIter) SeekLT(ikey []byte) bool {
	if !it.usable() {
		return false
	}
	// Every block before the first one whose index key is >= ikey holds only
	// keys < ikey, so the answer is in that block or the one before it.
	if !it.index.SeekGE(ikey) && (it.index.err != nil || !it.index.Last()) {
		it.noteIndexErr()
		it.clearData()
		return false
	}
	if !it.loadBlock() {
		return false
	}
	return it.backward(it.data.SeekLT(ikey))
}

func (it *tableIter) First() bool {
	if !it.usable() {
		return false
	}
	if !it.index.First() || !it.loadBlock() {
		it.noteIndexErr()
		it.clearData()
		return false
	}
	return it.forward(it.data.First())
}

func (it *tableIter) Last() bool {
	if !it.usable() {
		return false
	}
	if !it.index.Last() || !it.loadBlock() {
		it.noteIndexErr()
		it.clearData()
		return false
	}
	return it.backward(it.data.Last())
}

func (it *tableIter) Next() bool {
	if !it.usable() || !it.data.Valid() {
		return false
	}
	return it.forward(it.data.Next())
}

func (it *tableIter) Prev() bool {
	if !it.usable() || !it.data.Valid() {
		return false
	}
	return it.backward(it.data.Prev())
}

func (it *tableIter) Valid() bool   { return it.err == nil && it.data.Valid() }
func (it *tableIter) Key() []byte   { return it.data.Key() }
func (it *tableIter) Value() []byte { return it.data.Value() }
func (it *tableIter) Error() error  { return it.err }

func (it *tableIter) Close() error {
	it.closed = true
	it.index.clear()
	it.clearData()
	if it.ra != nil {
		it.ra.release()
	}
	return it.err
}
