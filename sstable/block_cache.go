package sstable

import (
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/lru"
	"github.com/bloomkv/bloomkv/internal/pslot"
)

// BlockCache is a sharded cache of uncompressed data blocks keyed by (file
// number, block offset). A block's charge is its uncompressed size. It is
// safe for concurrent use. Cached blocks are immutable, and a block evicted
// while a reader still uses it stays valid for that reader: the cache holds
// a reference to each block it holds, and a block's buffer is recycled
// only when the last reference is released (block_recycle.go).
//
// A hit takes no lock and writes no cache line but the block's own: the
// shard's table is probed lock-free (entryTable), the entry's reference
// bit is set only if it is clear, and the hit is counted in the calling
// P's slot (internal/pslot). A caller that releases the block (a Get, a
// releasing iterator) writes its reference count, so only readers of the
// same block at the same time share a written line; a kept reference
// (other iterators) writes it once per block. Inserts and evictions take the shard's mutex. Eviction is
// CLOCK, an approximation of LRU: the shard's list keeps insertion order,
// and the block at its back is evicted unless it was used since it was
// last looked at, in which case it gets a second chance at the front.
//
// Metadata -- filter blocks and partitions, index partitions, a closed
// table's open blocks -- enters a protected list of its own per shard,
// which holds up to metaShare of the capacity; what overflows it (the
// CLOCK hand over the protected list, passing used entries over once) is
// demoted to the front of the shared list, where data blocks enter and
// where eviction happens, by CLOCK, until the shared list is empty. So
// data blocks cannot push out the metadata of the protected share, but
// metadata beyond it, and stale metadata, compete with data blocks by
// recency as in a single list. Why: under uniform reads of a tree much
// larger than the cache, a filter partition serves the Gets of about
// 1,600 keys and a data block those of about 35, yet between two Gets
// that need the same partition thousands of data blocks pass through;
// CLOCK alone, judging by recency, evicted the partitions first. At 10M
// keys (8 MiB cache, filters and index partitions in it) a present Get
// read 8,333 bytes of table files with one list, 7,954 with a share of
// 0.5, 7,625 with 0.75, 7,415 with 0.9 and 7,264 with 1; an absent Get
// 1,833 bytes with one list and 1,786 with 0.9. The default, 0.9, keeps
// a tenth of the cache for which data blocks and metadata compete by
// recency, for hot data blocks under skewed reads.
//
// Within the protected list the CLOCK hand weighs metadata by size: a hit
// gives an entry credit for metaCreditBytes/charge passes of the hand (1
// to maxCredit), where a data block gets one. Why: a present-key Get needs
// the index partition and the filter partition of the table holding the
// key, and the two cover the same keys, but the index partition (about 8
// bytes per data block) is a fifth of the size of the filter partition (10
// bits per key); judged by recency alone, both were cached in the same
// proportion, where bytes spent on index partitions save more reads. At
// 10M keys (8 MiB cache, kvbench, the same tree and keys) a present Get
// read 0.479 filter partitions and 0.510 index partitions from table files
// with one credit for all, 0.554 and 0.104 with this rule; an absent Get
// 0.379 and 0.016 before, 0.382 and 0.014 after. Credit from 4 KiB gave
// 0.528 and 0.246, from 16 KiB 0.518 and 0.251.
type BlockCache struct {
	capacity int64
	shards   []cacheShard
	hits     pslot.Counter
	misses   pslot.Counter
	size     atomic.Int64
	// pinned is the bytes of filters Readers hold pinned, charged here:
	// cached blocks get the capacity less that (filter_cache.go).
	pinned atomic.Int64
	// filterBytes is the part of size that is filter blocks;
	// filterHits and filterMisses count filter lookups.
	filterBytes              atomic.Int64
	filterHits, filterMisses pslot.Counter
	// openHits and openMisses count table opens that found their open
	// blocks cached (open_blocks.go), and those that did not.
	openHits, openMisses pslot.Counter
	// metaShare is the share of each shard's capacity, in 1/1024ths,
	// that the protected list holds.
	metaShare int64
	// metaCredit is metaCreditBytes (0 in tests: one credit for all).
	metaCredit int64
}

// DefaultMetadataShare is the share of a BlockCache that metadata keeps
// from data blocks unless SetMetadataShare changes it (see BlockCache for
// the measurements that chose it).
const DefaultMetadataShare = 0.9

// metaCreditBytes and maxCredit set the passes of the CLOCK hand a
// metadata entry survives after a hit: metaCreditBytes over its charge,
// at least 1 and at most maxCredit (see BlockCache).
const (
	metaCreditBytes = 8 << 10
	maxCredit       = 8
)

// minShardCapacity keeps shards large enough to hold a good number of
// blocks each: small caches get fewer shards rather than useless ones.
const (
	minShardCapacity = 256 << 10
	maxCacheShards   = 16
)

type cacheKey struct{ fileNum, offset uint64 }

type cacheEntry struct {
	key    cacheKey        // constant
	blk    *block          // constant: a data block, or
	flt    *residentFilter // constant: a filter block (filter_cache.go), or
	open   *openBlocks     // constant: a closed table's open blocks (open_blocks.go)
	charge int64           // constant
	meta   bool            // constant: flt, open, or an index partition
	// protected says which list the entry is in: metadata enters the
	// protected list and may be demoted to the shared one. Guarded by
	// the shard's mu.
	protected bool
	// used is set to credit by a hit (only if it is not already, so that
	// hits on a popular block do not keep writing its line), and each pass
	// of the CLOCK hand takes one from it.
	used   atomic.Uint32
	credit uint32                // constant: set by insert
	node   lru.Node[*cacheEntry] // in its shard's list, guarded by the shard's mu
}

type cacheShard struct {
	// table is the lock-free lookup side; replaced (under mu) when it is
	// rebuilt.
	table    atomic.Pointer[entryTable]
	capacity int64 // constant after construction
	mu       sync.Mutex
	// Guarded by mu:
	// used is the charge of every entry, protectedUsed that of the
	// protected list.
	used, protectedUsed int64
	// protected and shared hold the entries of table, newest (or
	// second-chanced) first.
	protected, shared lru.List[*cacheEntry]
	_                 [64]byte // keep neighbouring shards' lines apart
}

// NewBlockCache returns a cache holding up to capacity bytes of blocks.
// capacity <= 0 yields a cache that holds nothing (every lookup misses).
func NewBlockCache(capacity int64) *BlockCache {
	n := 1
	for n < maxCacheShards && capacity/int64(n*2) >= minShardCapacity {
		n *= 2
	}
	c := &BlockCache{capacity: max(capacity, 0), shards: make([]cacheShard, n)}
	c.SetMetadataShare(DefaultMetadataShare)
	c.metaCredit = metaCreditBytes
	c.hits.Init()
	c.misses.Init()
	c.filterHits.Init()
	c.filterMisses.Init()
	c.openHits.Init()
	c.openMisses.Init()
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = c.capacity / int64(n)
		s.table.Store(newEntryTable(minTableSlots))
	}
	return c
}

// SetMetadataShare sets the share of the capacity (0 to 1) that metadata
// keeps from data blocks: at 0 every block competes in one CLOCK list,
// at 1 data blocks are evicted before any metadata. Call it before the
// cache is used.
func (c *BlockCache) SetMetadataShare(f float64) {
	c.metaShare = int64(min(max(f, 0), 1) * 1024)
}

func (c *BlockCache) shard(h uint64) *cacheShard {
	return &c.shards[(h>>32)&uint64(len(c.shards)-1)]
}

// get returns the cached block, kept (never recycled), and counts a hit
// or a miss. It allocates nothing and takes no lock.
func (c *BlockCache) get(fileNum, offset uint64) *block {
	return c.acquire(fileNum, offset, false)
}

// acquire is get taking a counted reference (released by the caller) or a
// kept one. A block found in the table whose buffer is being recycled (it
// was evicted and released meanwhile) counts as a miss.
func (c *BlockCache) acquire(fileNum, offset uint64, counted bool) *block {
	e := c.lookup(fileNum, offset)
	if e == nil || e.blk == nil || !e.blk.acquire(counted) {
		c.misses.Add(pslot.Index(), 1)
		return nil
	}
	c.hits.Add(pslot.Index(), 1)
	return e.blk
}

// lookup returns the entry for (fileNum, offset), marking it used, or nil.
// It takes no lock.
func (c *BlockCache) lookup(fileNum, offset uint64) *cacheEntry {
	k := cacheKey{fileNum, offset}
	h := hashKey(k)
	e := c.shard(h).table.Load().find(k, h)
	if e != nil && e.used.Load() != e.credit {
		e.used.Store(e.credit)
	}
	return e
}

// getFilter returns the cached filter block at (fileNum, offset), or nil,
// counting a filter hit or miss.
func (c *BlockCache) getFilter(fileNum, offset uint64) *residentFilter {
	e := c.lookup(fileNum, offset)
	if e == nil || e.flt == nil {
		c.filterMisses.Add(pslot.Index(), 1)
		return nil
	}
	c.filterHits.Add(pslot.Index(), 1)
	return e.flt
}

// setFilter caches a filter block, charged at its size.
func (c *BlockCache) setFilter(fileNum, offset uint64, f *residentFilter) {
	c.insert(&cacheEntry{key: cacheKey{fileNum, offset}, flt: f, charge: f.size, meta: true})
}

// pin charges (or with a negative n releases) bytes of pinned filters.
// Cached blocks are evicted lazily: each shard sheds its share on its next
// insert.
func (c *BlockCache) pin(n int64) { c.pinned.Add(n) }

// set inserts (or replaces) a block, which the caller holds a reference
// to; the cache takes one of its own while the block is in it.
func (c *BlockCache) set(fileNum, offset uint64, b *block) {
	c.insert(&cacheEntry{key: cacheKey{fileNum, offset}, blk: b, charge: int64(len(b.data))})
}

// setIndex is set for an index partition, cached as metadata.
func (c *BlockCache) setIndex(fileNum, offset uint64, b *block) {
	c.insert(&cacheEntry{key: cacheKey{fileNum, offset}, blk: b, charge: int64(len(b.data)), meta: true})
}

// insert adds (or replaces) e, evicting blocks of its shard (CLOCK) to
// stay within the shard's share of the capacity left after pinned filters.
// An entry larger than that is not cached.
func (c *BlockCache) insert(e *cacheEntry) {
	h := hashKey(e.key)
	s := c.shard(h)
	limit := s.capacity - c.pinned.Load()/int64(len(c.shards))
	if e.charge > limit {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.table.Load()
	if old := t.find(e.key, h); old != nil {
		c.removeLocked(s, old)
	}
	e.node.Value = e
	e.credit = 1
	if e.meta {
		e.credit = uint32(min(max(c.metaCredit/max(e.charge, 1), 1), maxCredit))
	}
	if e.blk != nil {
		e.blk.addRef() // before any reader can find it
	}
	if t.full() {
		t = t.rebuilt()
		s.table.Store(t)
	}
	t.insert(e, h)
	e.protected = e.meta
	s.listOf(e).PushFront(&e.node)
	s.used += e.charge
	if e.protected {
		s.protectedUsed += e.charge
	}
	c.size.Add(e.charge)
	if e.flt != nil {
		c.filterBytes.Add(e.charge)
	}
	// Each entry gets at most maxCredit+1 looks in each loop: a used one
	// moves to the front of its list with a credit spent. The loops end:
	// the first empties the protected list at worst, the second the
	// shard, and limit is at least e's charge.
	protectedLimit := limit * c.metaShare / 1024
	for s.protectedUsed > protectedLimit {
		v := s.protected.Back().Value
		if v.spend() {
			s.protected.MoveToFront(&v.node)
			continue
		}
		s.protected.Remove(&v.node)
		s.protectedUsed -= v.charge
		v.protected = false
		s.shared.PushFront(&v.node)
	}
	for s.used > limit {
		l := &s.shared
		if l.Len() == 0 {
			l = &s.protected
		}
		v := l.Back().Value
		if v.spend() {
			l.MoveToFront(&v.node)
			continue
		}
		c.removeLocked(s, v)
	}
}

// spend takes one pass of the CLOCK hand from e's credit, reporting
// whether there was any. A hit racing with it may be lost, as a set bit
// may be in plain CLOCK. REQUIRES: the shard's mu held.
func (e *cacheEntry) spend() bool {
	u := e.used.Load()
	if u == 0 {
		return false
	}
	e.used.Store(u - 1)
	return true
}

// listOf returns the list e is in. REQUIRES: s.mu held.
func (s *cacheShard) listOf(e *cacheEntry) *lru.List[*cacheEntry] {
	if e.protected {
		return &s.protected
	}
	return &s.shared
}

// EvictFile drops every block of a file (called when the file is deleted).
// It scans the cache: deletions are rare next to lookups, and a per-file
// list would cost memory on every entry.
func (c *BlockCache) EvictFile(fileNum uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, l := range []*lru.List[*cacheEntry]{&s.shared, &s.protected} {
			for n := l.Front(); n != nil; {
				next := n.Next()
				if n.Value.key.fileNum == fileNum {
					c.removeLocked(s, n.Value)
				}
				n = next
			}
		}
		s.mu.Unlock()
	}
}

// removeLocked drops e from the shard. REQUIRES: s.mu held.
func (c *BlockCache) removeLocked(s *cacheShard, e *cacheEntry) {
	s.listOf(e).Remove(&e.node)
	s.table.Load().delete(e, hashKey(e.key))
	s.used -= e.charge
	if e.protected {
		s.protectedUsed -= e.charge
	}
	c.size.Add(-e.charge)
	if e.flt != nil {
		c.filterBytes.Add(-e.charge)
	}
	if e.blk != nil {
		// After the entry left the table: a later lookup cannot find it,
		// and one that found it earlier fails to acquire once the count
		// is zero.
		e.blk.release()
	}
}

// Hits returns the number of lookups that found their block.
func (c *BlockCache) Hits() uint64 { return uint64(c.hits.Sum()) }

// Misses returns the number of lookups that did not.
func (c *BlockCache) Misses() uint64 { return uint64(c.misses.Sum()) }

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
func (c *BlockCache) FilterHits() uint64   { return uint64(c.filterHits.Sum()) }
func (c *BlockCache) FilterMisses() uint64 { return uint64(c.filterMisses.Sum()) }

// Capacity returns the configured capacity in bytes.
func (c *BlockCache) Capacity() int64 { return c.capacity }

// Len returns the number of cached blocks.
func (c *BlockCache) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.table.Load().live
		s.mu.Unlock()
	}
	return n
}
