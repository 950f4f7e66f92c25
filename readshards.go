package bloomkv

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// numReadShards is how many copies of the point-lookup counters there are
// (a power of two).
const numReadShards = 8

// readShards spreads the point-lookup counters over several cache lines.
// Every Get increments a handful of counters; were they shared, each
// increment would pull the same cache line from core to core, and readers
// on two cores would run slower than one. Each Get picks a shard at random
// (math/rand/v2's global source takes no lock) and counts there; Metrics
// sums the shards.
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

// pick returns the shard a Get counts in.
func (r *readShards) pick() *readShard {
	return &r[rand.Uint32()&(numReadShards-1)]
}
