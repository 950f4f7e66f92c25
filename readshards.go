package bloomkv

import (
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/sstable"
)

// numReadShards is how many copies of the point-lookup counters there are:
// one for each slot of internal/pslot.
const numReadShards = pslot.MaxN

// readShards spreads the point-lookup counters over several cache lines.
// Every Get increments a handful of counters; were they shared, each
// increment would pull the same cache line from core to core, and readers
// on two cores would run slower than one. Each Get counts in the shard of
// the P it runs on (the slot of its read-state reference, pslot.Index), so
// a shard's lines stay in one core's cache; Metrics sums the shards.
type readShards [numReadShards]readShard

type readShard struct {
	gets, memtableHits atomic.Uint64
	probes             [manifest.NumLevels]atomic.Uint64
	// levels count the work in each level's tables, where it happens (the
	// SSTable reader and block cache).
	levels [manifest.NumLevels]sstable.ReadStats
	// Iterators: positioning calls, prefix seeks, the tables prefix seeks
	// considered and the work in each level's tables.
	iterSeeks, iterPrefixSeeks atomic.Uint64
	iterProbes                 [manifest.NumLevels]atomic.Uint64
	iterLevels                 [manifest.NumLevels]sstable.ReadStats
	_                          [64]byte // keep the next shard's counters off this one's cache lines
}

// at returns the shard of pslot slot i.
func (r *readShards) at(i int) *readShard {
	return &r[i&(numReadShards-1)]
}
