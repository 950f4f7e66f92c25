package sstable

import (
	"bytes"
	"sync"

	"github.com/bloomkv/bloomkv/kv"
)

// getState is the scratch space of one Get, pooled so that a Get served
// from the block cache allocates nothing.
type getState struct {
	search []byte
	index  indexIter
	data   blockIter
}

var getStatePool = sync.Pool{New: func() any { return new(getState) }}

// FilterUse says how a Get consults the table's filter.
type FilterUse uint8

const (
	// FilterIgnore searches the table without its filter.
	FilterIgnore FilterUse = iota
	// FilterProbe probes the filter first, reading it (or the partition
	// for the key) from the file when the block cache does not hold it.
	FilterProbe
	// FilterProbeIfCached probes the filter only if it is resident,
	// pinned or in the block cache, and otherwise searches the table as
	// if the filter had said "maybe" (counted in ReadStats.FilterSkips):
	// for a caller that expects the table to hold the key, where reading
	// the filter would cost a block read that saves none.
	FilterProbeIfCached
)

// filterUse is FilterProbe or FilterIgnore.
func filterUse(useFilter bool) FilterUse {
	if useFilter {
		return FilterProbe
	}
	return FilterIgnore
}

// Get returns the newest entry for ukey with sequence <= seq. With useFilter
// and a usable filter, the filter is probed first: "absent" returns at once
// (counted in stats.FilterNegatives); "maybe" for a key the table holds no
// version of is counted in stats.FilterFalsePositives. Versions of ukey may
// span data blocks. The value aliases an immutable block: the caller copies
// it before keeping it. stats may be nil.
func (r *Reader) Get(ukey []byte, seq uint64, useFilter bool, stats *ReadStats) (value []byte, kind kv.Kind, found bool, err error) {
	value, kind, _, found, err = r.GetSeq(ukey, seq, useFilter, stats)
	return value, kind, found, err
}

// GetSeq is Get that also returns the sequence of the entry found. It
// looks at point entries only: the caller consults RangeDels, which the
// filter says nothing about.
func (r *Reader) GetSeq(ukey []byte, seq uint64, useFilter bool, stats *ReadStats) (value []byte, kind kv.Kind, vseq uint64, found bool, err error) {
	value, kind, vseq, found, _, err = r.getSeq(ukey, seq, filterUse(useFilter), stats, false)
	return value, kind, vseq, found, err
}

// GetSeqHeld is GetSeq for a caller that copies the value out and then
// calls held.Release, which lets the block's buffer be reused for another
// block once the cache has evicted it (a cache-miss Get then allocates no
// block). The value is valid only until the Release; held is the zero
// BlockRef when nothing is found or on error, and Release is still fine.
// use says how the filter is consulted.
func (r *Reader) GetSeqHeld(ukey []byte, seq uint64, use FilterUse, stats *ReadStats) (value []byte, kind kv.Kind, vseq uint64, found bool, held BlockRef, err error) {
	return r.getSeq(ukey, seq, use, stats, true)
}

// getSeq is GetSeq, with the blocks it reads counted (each released before
// it moves on, the one holding the value returned in held) or kept (never
// recycled: the value stays valid as long as the caller holds it).
func (r *Reader) getSeq(ukey []byte, seq uint64, use FilterUse, stats *ReadStats, counted bool) (value []byte, kind kv.Kind, vseq uint64, found bool, held BlockRef, err error) {
	filtered := false
	// part is, in a partitioned table, the partition that can hold the
	// newest entry of ukey (partitions.go): the filter partition probed
	// first, and the index partition searched first.
	part := -1
	if r.partitioned() {
		var buf [72]byte
		part = r.findPartitionInternal(kv.AppendInternalKey(buf[:0], ukey, kv.MaxSeq, kv.KindSeek))
	}
	if use != FilterIgnore && r.getProbe != probeNone {
		fk := ukey
		if r.getProbe == probeFilterKey {
			fk = r.filterKey(ukey)
		}
		may, skipped, err := r.mayContain(ukey, fk, part, use == FilterProbeIfCached, stats)
		if err != nil {
			return nil, 0, 0, false, BlockRef{}, err
		}
		switch {
		case skipped:
			if stats != nil {
				stats.FilterSkips.Add(1)
			}
		case !may:
			if stats != nil {
				stats.FilterNegatives.Add(1)
			}
			return nil, 0, 0, false, BlockRef{}, nil
		default:
			filtered = true
		}
	}

	st := getStatePool.Get().(*getState)
	defer func() {
		st.index.clear()
		st.data.clear()
		getStatePool.Put(st)
	}()

	// Seek to the newest version of ukey, then walk to the first one visible
	// at seq; seeking to all versions tells us whether the table holds ukey
	// at all, which false-positive counting needs.
	st.search = kv.AppendInternalKey(st.search[:0], ukey, kv.MaxSeq, kv.KindSeek)
	st.index.init(r, true, stats)
	sawKey := false
	valid := st.index.seekGEFrom(st.search, part)
	for first := true; valid; first = false {
		h, err := r.dataHandle(&st.index.iter)
		if err != nil {
			return nil, 0, 0, false, BlockRef{}, err
		}
		b, err := r.loadDataBlock(h, true, stats, counted)
		if err != nil {
			return nil, 0, 0, false, BlockRef{}, err
		}
		st.data.init(b)
		// The first key >= search is in this block or starts the next one.
		var ok bool
		if first {
			ok = st.data.SeekGE(st.search)
		} else {
			ok = st.data.First()
		}
		for ; ok; ok = st.data.Next() {
			k := st.data.Key()
			if !bytes.Equal(kv.UserKey(k), ukey) {
				valid = false
				break
			}
			sawKey = true
			t := kv.Trailer(k)
			if t>>8 <= seq {
				value = st.data.Value()
				if counted {
					held = BlockRef{b}
				}
				return value, kv.Kind(t & 0xFF), t >> 8, true, held, nil
			}
		}
		// The next block can hold versions of ukey only if this block's
		// separator has ukey as its user key (the separator is >= the
		// search key and < the next block's first key); otherwise stop
		// without reading a block that cannot hold it.
		if valid && bytes.Equal(kv.UserKey(st.index.Key()), ukey) {
			valid = st.index.Next()
		} else {
			valid = false
		}
		st.data.clear()
		if counted {
			b.release()
		}
	}
	if err := st.index.err; err != nil {
		return nil, 0, 0, false, BlockRef{}, err
	}
	if filtered && !sawKey && stats != nil {
		stats.FilterFalsePositives.Add(1)
	}
	return nil, 0, 0, false, BlockRef{}, nil
}

// mayContain probes the filter that covers ukey with fk (ukey or its
// filter key): the table's filter block, or its partitions for ukey.
// part is findPartition(ukey) in a partitioned table. With ifCached, a
// filter that would be read from the file is skipped instead: skipped
// reports it (and may is true).
func (r *Reader) mayContain(ukey, fk []byte, part int, ifCached bool, stats *ReadStats) (may, skipped bool, err error) {
	if r.partitioned() {
		return r.partitionsMayContain(ukey, fk, part, ifCached, stats)
	}
	flt, err := r.filterBlock(ifCached, stats)
	if err != nil || flt == nil {
		return true, flt == nil && err == nil, err
	}
	return flt.MayContain(fk), false, nil
}
