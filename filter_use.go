package bloomkv

import (
	"sync/atomic"

	"github.com/bloomkv/bloomkv/sstable"
)

// When a Get reads a filter from its file.
//
// With CacheFilterBlocks a filter (or filter partition) that the block
// cache evicted costs a block read to consult again. At a level where the
// Gets mostly find their key, that read buys nothing for them: the table
// is searched anyway. For the others it saves the data block read (and
// index partition) the search would cost, about what the filter read
// itself cost. So a Get reads an evicted filter only at levels where at
// least half of the recent probes did not find their key, and elsewhere
// consults only filters the cache holds (sstable.FilterProbeIfCached).
// Under uniform present-key Gets at 10M keys this skips most reads of
// last-level filter partitions; under absent-key Gets no level qualifies
// and every filter is read as before.

// probeOutcomes counts, for one level and one read shard, the recent
// probes of the level's tables by Gets and those that found their key.
// The counts are halved every outcomeWindow probes, so they follow the
// workload; the halving races with other Gets' counting, which may lose
// a few counts: an estimate needs no more.
type probeOutcomes struct {
	probes, found atomic.Uint32
}

const (
	// outcomeWindow is the probes after which the counts are halved.
	outcomeWindow = 512
	// outcomeMinProbes is the probes a level needs before its filters
	// may be skipped: until then, every filter is read.
	outcomeMinProbes = 64
)

// record counts a probe that found its key or did not.
func (o *probeOutcomes) record(found bool) {
	if found {
		o.found.Add(1)
	}
	if p := o.probes.Add(1); p >= outcomeWindow {
		o.probes.Store(p / 2)
		o.found.Store(o.found.Load() / 2)
	}
}

// mostlyFound reports whether more than half of the recent probes found
// their key.
func (o *probeOutcomes) mostlyFound() bool {
	p := o.probes.Load()
	return p >= outcomeMinProbes && 2*o.found.Load() > p
}

// skipsEvictedFilters reports whether the options let Gets skip evicted
// filters at all; only then are probe outcomes counted (two atomic adds a
// probe that other configurations need not pay).
func (db *DB) skipsEvictedFilters() bool {
	return db.opts.CacheFilterBlocks && !db.opts.AlwaysReadFilters && !db.opts.IgnoreFilters
}

// filterUse says how a Get consults the filters of level's tables.
func (db *DB) filterUse(sh *readShard, level int) sstable.FilterUse {
	switch {
	case db.opts.IgnoreFilters:
		return sstable.FilterIgnore
	case db.skipsEvictedFilters() && sh.outcomes[level].mostlyFound():
		return sstable.FilterProbeIfCached
	}
	return sstable.FilterProbe
}
