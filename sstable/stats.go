package sstable

import "sync/atomic"

// ReadStats count the work of point lookups. Reader.Get increments them
// atomically where the work happens, so one ReadStats may be shared by
// concurrent Gets on many tables.
type ReadStats struct {
	// FilterNegatives counts Gets the filter answered "absent": no data
	// block was read.
	FilterNegatives atomic.Uint64
	// FilterFalsePositives counts Gets the filter answered "maybe" for a
	// user key the table holds no version of.
	FilterFalsePositives atomic.Uint64
	// DataBlockReads counts data blocks a Get used, from the cache or file.
	DataBlockReads atomic.Uint64
	// BlockCacheHits and BlockCacheMisses split DataBlockReads when the
	// reader has a cache.
	BlockCacheHits   atomic.Uint64
	BlockCacheMisses atomic.Uint64
	// BytesRead counts bytes read from the file (blocks and trailers), and
	// with TableCache.FindWithStats the bytes of the table opens counted in
	// TableOpens.
	BytesRead atomic.Uint64
	// TableOpens counts table files the reads had to open (TableCache.
	// FindWithStats): a table's first use, or a re-open of one the cache
	// closed to stay within its capacity.
	TableOpens atomic.Uint64
	// FilterBlockReads counts filter blocks read from the file because the
	// block cache did not hold them (ReaderOptions.CacheFilters); their
	// bytes are in BytesRead.
	FilterBlockReads atomic.Uint64
	// IndexBlockReads counts index partitions read from the file because
	// the block cache did not hold them (partitioned tables with
	// CacheFilters); their bytes are in BytesRead.
	IndexBlockReads atomic.Uint64
	// FilterSkips counts Gets with FilterProbeIfCached that found the
	// filter they needed neither resident nor in the block cache and
	// searched the table without it.
	FilterSkips atomic.Uint64
	// Range filters (iterators; Reader.RangeMayMatch): tables whose range
	// filter was asked about a bounded seek, those it ruled out (no block
	// read), and those it let through that held no key in the range.
	RangeFilterProbes         atomic.Uint64
	RangeFilterNegatives      atomic.Uint64
	RangeFilterFalsePositives atomic.Uint64
}
