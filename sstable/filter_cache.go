package sstable

import (
	"github.com/bloomkv/bloomkv/filter"
)

// Filter blocks in the block cache (ReaderOptions.CacheFilters).
//
// By default a Reader reads its table's filter block at Open and holds it
// for its life: filter memory is the sum over open tables, with no bound
// but MaxOpenFiles. With CacheFilters the Reader does not read the filter
// at Open; a probe looks the decoded filter up in the block cache under
// (file number, filter block offset), reads and decodes it on a miss, and
// inserts it charged at its size, where it competes with data blocks and
// is evicted like one. A Reader may instead pin its filter (PinFilter):
// it is then held by the Reader, not evictable, and its bytes are charged
// to the cache as pinned (they shrink the room left for cached blocks)
// until the Reader closes. The engine pins level-0 tables' filters, which
// every Get probes, by default.
//
// Invariants: a cached or pinned filter.Block aliases bytes no one
// modifies (read fresh from the file, never a pooled buffer); a Reader
// charges its pinned bytes once and releases them once, at Close.

// residentFilter is a decoded filter block held in memory (cached or
// pinned) with the bytes it aliases, which are its charge.
type residentFilter struct {
	filter.Block
	size int64
}

// filterBlock returns the table's filter, reading it on a cache miss (its
// bytes counted in stats.BytesRead and stats.FilterBlockReads; stats may
// be nil). REQUIRES: the table has a filter (r.footer.hasFilter()).
func (r *Reader) filterBlock(ifCached bool, stats *ReadStats) (*filter.Block, error) {
	if !r.cacheFilter {
		return &r.filter, nil
	}
	if b := r.pinnedFilter.Load(); b != nil {
		return &b.Block, nil
	}
	if b := r.cache.getFilter(r.fileNum, r.footer.filter.offset); b != nil {
		return &b.Block, nil
	}
	if ifCached {
		return nil, nil
	}
	b, err := r.readFilter(stats)
	if err != nil {
		return nil, err
	}
	r.cache.setFilter(r.fileNum, r.footer.filter.offset, b)
	return &b.Block, nil
}

// readFilter reads and decodes the filter block from the file.
func (r *Reader) readFilter(stats *ReadStats) (*residentFilter, error) {
	return r.readFilterAt(r.footer.filter, kindFilter, stats)
}

// readFilterAt reads and decodes the filter block or partition at h.
func (r *Reader) readFilterAt(h blockHandle, kind blockKind, stats *ReadStats) (*residentFilter, error) {
	raw, err := r.readBlock(h, kind)
	if err != nil {
		return nil, err
	}
	if stats != nil {
		stats.BytesRead.Add(h.size + blockTrailerLen)
		stats.FilterBlockReads.Add(1)
	}
	b, err := filter.DecodeBlock(raw)
	if err != nil {
		return nil, location{r.name, kind, h.offset}.wrapCorruption(err)
	}
	return &residentFilter{Block: b, size: int64(len(raw))}, nil
}

// PinFilter makes a Reader with CacheFilters hold its filter for its life,
// charged to the block cache as pinned, taking the cached copy if there is
// one. Later calls do nothing; without CacheFilters, or without a filter,
// neither does the first (the filter is resident already, or absent).
// stats counts a read it causes (may be nil).
func (r *Reader) PinFilter(stats *ReadStats) error {
	if !r.cacheFilter || !r.hasFilter() || r.FilterPinned() {
		return nil
	}
	if r.partitioned() {
		return r.pinPartitions(stats)
	}
	b := r.cache.getFilter(r.fileNum, r.footer.filter.offset)
	if b == nil {
		var err error
		if b, err = r.readFilter(stats); err != nil {
			return err
		}
	}
	if !r.pinnedFilter.CompareAndSwap(nil, b) {
		return nil // another Get pinned it first
	}
	r.cache.pin(b.size)
	if r.closed.Load() {
		// Close may have run before the charge: release it if Close did
		// not (the Swap decides who).
		r.unpinFilter()
	}
	return nil
}

// unpinFilter releases the pinned filter's charge once.
func (r *Reader) unpinFilter() {
	if b := r.pinnedFilter.Swap(nil); b != nil {
		r.cache.pin(-b.size)
	}
	if p := r.pinnedParts.Swap(nil); p != nil {
		r.cache.pin(-pinnedSize(*p))
	}
}

// FilterPinned reports whether the Reader holds a pinned filter.
func (r *Reader) FilterPinned() bool {
	return r.pinnedFilter.Load() != nil || r.pinnedParts.Load() != nil
}
