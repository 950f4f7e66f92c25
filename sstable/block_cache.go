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
	blk    *block
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
	k := cacheKey{fileNum, offset}
	s := c.shard(k)
	s.mu.Lock()
	e := s.entries[k]
	if e != nil {
		s.lru.MoveToFront(&e.node)
	}
	s.mu.Unlock()
	if e == nil {
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return e.blk
}

// set inserts (or replaces) a block, evicting the least recently used
// blocks of its shard to stay within capacity. A block larger than a shard
// is not cached.
func (c *BlockCache) set(fileNum, offset uint64, b *block) {
	k := cacheKey{fileNum, offset}
	s := c.shard(k)
	charge := int64(len(b.data))
	if charge > s.capacity {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[k]; old != nil {
		c.removeLocked(s, old)
	}
	e := &cacheEntry{key: k, blk: b, charge: charge}
	e.node.Value = e
	s.entries[k] = e
	s.lru.PushFront(&e.node)
	s.used += charge
	c.size.Add(charge)
	for s.used > s.capacity {
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
}

// Hits returns the number of lookups that found their block.
func (c *BlockCache) Hits() uint64 { return c.hits.Load() }

// Misses returns the number of lookups that did not.
func (c *BlockCache) Misses() uint64 { return c.misses.Load() }

// Size returns the bytes of blocks currently cached.
func (c *BlockCache) Size() int64 { return c.size.Load() }

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
