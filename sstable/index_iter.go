package sstable

// indexIter walks a table's index entries, one per data block, in order:
// the index block of an unpartitioned table, or the partitions of a
// partitioned one through its top-level index (partitions.go), loading
// each partition as it enters it. Loading can fail (a partition read from
// the file through the block cache): the move then returns false and err
// says why. The zero value is unusable; init points it at a Reader.
type indexIter struct {
	r     *Reader
	fill  bool       // partitions read from the file enter the block cache
	stats *ReadStats // partition reads; may be nil
	iter  blockIter  // the index block, or the current partition
	part  int        // partitioned: the partition iter walks, -1 for none
	err   error
}

func (it *indexIter) init(r *Reader, fill bool, stats *ReadStats) {
	it.r, it.fill, it.stats, it.err = r, fill, stats, nil
	it.part = -1
	if r.partitioned() {
		it.iter.init(nil)
		return
	}
	it.iter.init(r.index)
}

// clear drops the block references so a pooled iterator pins no memory.
func (it *indexIter) clear() {
	it.iter.clear()
	it.r, it.stats = nil, nil
	it.part = -1
}

// load points iter at partition i; false (err set) when it cannot be read.
func (it *indexIter) load(i int) bool {
	if i == it.part {
		return true
	}
	b, err := it.r.indexPartition(i, it.fill, it.stats)
	if err != nil {
		it.err = err
		it.iter.clear()
		it.part = -1
		return false
	}
	it.iter.init(b)
	it.part = i
	return true
}

func (it *indexIter) SeekGE(ikey []byte) bool {
	first := -1
	if it.r.partitioned() {
		first = it.r.findPartitionInternal(ikey)
	}
	return it.seekGEFrom(ikey, first)
}

// seekGEFrom is SeekGE for a caller that has found first, the partition
// findPartitionInternal(ikey) returns (ignored when unpartitioned).
func (it *indexIter) seekGEFrom(ikey []byte, first int) bool {
	if !it.r.partitioned() {
		return it.iter.SeekGE(ikey)
	}
	// The first partition whose top-level key is >= ikey holds the first
	// entry >= ikey: its last entry is that key.
	for i := first; i < len(it.r.parts); i++ {
		if !it.load(i) {
			return false
		}
		if it.iter.SeekGE(ikey) {
			return true
		}
	}
	it.iter.valid = false
	return false
}

func (it *indexIter) First() bool {
	if !it.r.partitioned() {
		return it.iter.First()
	}
	return it.load(0) && it.forward(it.iter.First())
}

func (it *indexIter) Last() bool {
	if !it.r.partitioned() {
		return it.iter.Last()
	}
	return it.load(len(it.r.parts)-1) && it.backward(it.iter.Last())
}

func (it *indexIter) Next() bool {
	ok := it.iter.Next()
	if !it.r.partitioned() {
		return ok
	}
	return it.forward(ok)
}

func (it *indexIter) Prev() bool {
	ok := it.iter.Prev()
	if !it.r.partitioned() {
		return ok
	}
	return it.backward(ok)
}

// forward moves into the following partitions while iter has run off the
// end of one (partitions are never empty, but a loop costs nothing).
func (it *indexIter) forward(ok bool) bool {
	for !ok {
		if it.part < 0 || it.part+1 >= len(it.r.parts) || !it.load(it.part+1) {
			it.iter.valid = false
			return false
		}
		ok = it.iter.First()
	}
	return true
}

// backward is forward's mirror image.
func (it *indexIter) backward(ok bool) bool {
	for !ok {
		if it.part <= 0 || !it.load(it.part-1) {
			it.iter.valid = false
			return false
		}
		ok = it.iter.Last()
	}
	return true
}

func (it *indexIter) Valid() bool   { return it.iter.Valid() }
func (it *indexIter) Key() []byte   { return it.iter.Key() }
func (it *indexIter) Value() []byte { return it.iter.Value() }
