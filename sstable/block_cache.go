package sstable

import (
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/lru"
)

// BlockCache is a sharded LRU cache of uncompressed data blocks keyed by
// (file number, block offset). A block's charge is its uncompressed size.
// It is safe for concurrent use. Cached blocks are immutable, so a block
// evicted while a reader still uses it stays valid for that reader.
type BlockCache struct {
	capacity int64
	shards   []cacheShard
	hits     atomic.Uint64
	misses   atomic.Uint64
	size     atomic.Int64
	// pinned is the bytes of filters Readers hold pinned, charged here:
	// cached blocks get the capacity less that.
	pinned atomic.Int64
	// filterBytes is the part of size that is filter blocks;
	// filterHits and filterMisses count filter lookups.
	filterBytes              atomic.Int64
	filterHits, filterMisses atomic.Uint64
}

// minShardCapacity keeps shards large enough to hold a good number of
// blocks each: small caches get fewer shards rather than useless ones.
const (
	minShardCapacity = 256 << 10
	maxCacheShards   = 16
)

type cacheKey struct{ fileNum, offset uint64 }

type cacheEntry struct {
	key    cacheKey
	blk    *block          // a data block, or
	flt    *residentFilter // a filter block (filter_cache.go)
	charge int64
	node   lru.Node[*cacheEntry] // in its shard's lru, guarded by the shard's mu
}

type cacheShard struct {
	mu       sync.Mutex
	capacity int64 // constant after construction
	// Guarded by mu:
	used    int64
	entries map[cacheKey]*cacheEntry
	lru     lru.List[*cacheEntry] // the same entries, most recently used first
	_       [64]byte              // keep neighbouring shards' locks on separate cache lines
}

// NewBlockCache returns a cache holding up to capacity bytes of blocks.
// capacity <= 0 yields a cache that holds nothing (every lookup misses).
func NewBlockCache(capacity int64) *BlockCache {
	n := 1
	for n < maxCacheShards && capacity/int64(n*2) >= minShardCapacity {
		n *= 2
	}
	c := &BlockCache{capacity: max(capacity, 0), shards: make([]cacheShard, n)}
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = c.capacity / int64(n)
		s.entries = make(map[cacheKey]*cacheEntry)
	}
	return c
}

func (c *BlockCache) shard(k cacheKey) *cacheShard {
	// A multiplicative mix so consecutive offsets of one file spread out.
	h := (k.fileNum*0x9E3779B97F4A7C15 ^ k.offset) * 0xBF58476D1CE4E5B9
	return &c.shards[(h>>32)&uint64(len(c.shards)-1)]
}

// get returns the cached block and counts a hit or a miss. It allocates
// nothing.
func (c *BlockCache) get(fileNum, offset uint64) *block {
	e := c.lookup(fileNum, offset)
	if e == nil || e.blk == nil {
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return e.blk
}

// lookup returns the entry for (fileNum, offset), marking it recently
// used, or nil.
func (c *BlockCache) lookup(fileNum, offset uint64) *cacheEntry {
	k := cacheKey{fileNum, offset}
	s := c.shard(k)
	s.mu.Lock()
	e := s.entries[k]
	if e != nil {
		s.lru.MoveToFront(&e.node)
	}
	s.mu.Unlock()
	return e
}

// getFilter returns the cached filter block at (fileNum, offset), or nil,
// counting a filter hit or miss.
func (c *BlockCache) getFilter(fileNum, offset uint64) *residentFilter {
	e := c.lookup(fileNum, offset)
	if e == nil || e.flt == nil {
		c.filterMisses.Add(1)
		return nil
	}
	c.filterHits.Add(1)
	return e.flt
}

// setFilter caches a filter block, charged at its size.
func (c *BlockCache) setFilter(fileNum, offset uint64, f *residentFilter) {
	c.insert(&cacheEntry{key: cacheKey{fileNum, offset}, flt: f, charge: f.size})
}

// pin charges (or with a negative n releases) bytes of pinned filters,
// evicting cached blocks lazily: each shard sheds its share on its next
// insert.
func (c *BlockCache) pin(n int64) { c.pinned.Add(n) }

// set inserts (or replaces) a block, evicting the least recently used
// blocks of its shard to stay within capacity. A block larger than a shard
// is not cached.
func (c *BlockCache) set(fileNum, offset uint64, b *block) {
	c.insert(&cacheEntry{key: cacheKey{fileNum, offset}, blk: b, charge: int64(len(b.data))})
}

// insert adds (or replaces) e, evicting the least recently used entries
// of its shard to stay within the shard's share of the capacity left
// after pinned filters. An entry larger than that is not cached.
func (c *BlockCache) insert(e *cacheEntry) {
	s := c.shard(e.key)
	limit := s.capacity - c.pinned.Load()/int64(len(c.shards))
	if e.charge > limit {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[e.key]; old != nil {
		c.removeLocked(s, old)
	}
	e.node.Value = e
	s.entries[e.key] = e
	s.lru.PushFront(&e.node)
	s.used += e.charge
	c.size.Add(e.charge)
	if e.flt != nil {
		c.filterBytes.Add(e.charge)
	}
	for s.used > limit {
		c.removeLocked(s, s.lru.Back().Value)
	}
}

// EvictFile drops every block of a file (called when the file is deleted).
// It scans the cache: deletions are rare next to lookups, and a per-file
// list would cost memory on every entry.
func (c *BlockCache) EvictFile(fileNum uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for n := s.lru.Front(); n != nil; {
			next := n.Next()
			if n.Value.key.fileNum == fileNum {
				c.removeLocked(s, n.Value)
			}
			n = next
		}
		s.mu.Unlock()
	}
}

// removeLocked drops e from the shard. REQUIRES: s.mu held.
func (c *BlockCache) removeLocked(s *cacheShard, e *cacheEntry) {
	s.lru.Remove(&e.node)
	delete(s.entries, e.key)
	s.used -= e.charge
	c.size.Add(-e.charge)
	if e.flt != nil {
		c.filterBytes.Add(-e.charge)
	}
}

// Hits returns the number of lookups that found their block.
func (c *BlockCache) Hits() uint64 { return c.hits.Load() }

// Misses returns the number of lookups that did not.
func (c *BlockCache) Misses() uint64 { return c.misses.Load() }

// Size returns the bytes charged to the cache: blocks currently cached
// and pinned filters.
func (c *BlockCache) Size() int64 { return c.size.Load() + c.pinned.Load() }

// FilterBytes returns the bytes of filter blocks cached, and of filters
// pinned, by Readers with CacheFilters.
func (c *BlockCache) FilterBytes() (cached, pinned int64) {
	return c.filterBytes.Load(), c.pinned.Load()
}

// FilterHits and FilterMisses count filter lookups by Readers with
// CacheFilters (pinned filters are not looked up).
func (c *BlockCache) FilterHits() uint64   { return c.filterHits.Load() }
func (c *BlockCache) FilterMisses() uint64 { return c.filterMisses.Load() }

// Capacity returns the configured capacity in bytes.
func (c *BlockCache) Capacity() int64 { return c.capacity }

// Len returns the number of cached blocks.
func (c *BlockCache) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}
