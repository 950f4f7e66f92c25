package sstable

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/internal/lru"
	"github.com/bloomkv/bloomkv/kv"
)

func fakeBlock(size int) *block { return &block{data: make([]byte, size)} }

func TestBlockCacheLRU(t *testing.T) {
	c := NewBlockCache(10_000)
	if len(c.shards) != 1 {
		t.Fatalf("%d shards for a small cache", len(c.shards))
	}
	blocks := make([]*block, 15)
	for i := range blocks {
		blocks[i] = fakeBlock(1000)
		c.set(1, uint64(i*1000), blocks[i])
		if i == 5 && c.get(1, 0) != blocks[0] { // touch block 0: it survives
			t.Fatal("block 0 missing")
		}
	}
	if c.Size() != 10_000 || c.Len() != 10 {
		t.Fatalf("size %d, len %d", c.Size(), c.Len())
	}
	for i, b := range blocks {
		got := c.get(1, uint64(i*1000))
		if want := i == 0 || i >= 6; (got != nil) != want || (got != nil && got != b) {
			t.Fatalf("block %d: cached=%v, want %v", i, got != nil, want)
		}
	}
	if c.Hits() != 11 || c.Misses() != 5 {
		t.Fatalf("hits %d misses %d", c.Hits(), c.Misses())
	}
	// Replacing an entry keeps the charge right; oversize blocks are not cached.
	c.set(1, 0, fakeBlock(500))
	c.set(2, 0, fakeBlock(20_000))
	if c.Size() != 9_500 || c.get(2, 0) != nil {
		t.Fatalf("after replace: size %d", c.Size())
	}
	c.set(2, 0, fakeBlock(100))
	c.EvictFile(1)
	if c.Size() != 100 || c.Len() != 1 || c.get(2, 0) == nil {
		t.Fatalf("after EvictFile: size %d len %d", c.Size(), c.Len())
	}
	z := NewBlockCache(0)
	z.set(1, 1, fakeBlock(1))
	if z.get(1, 1) != nil || z.Size() != 0 {
		t.Fatal("zero-capacity cache holds a block")
	}
}

// TestBlockCacheConcurrent hammers a sharded cache from several goroutines
// (run with -race) and then checks its accounting.
func TestBlockCacheConcurrent(t *testing.T) {
	const capacity = 8 << 20
	c := NewBlockCache(capacity)
	if len(c.shards) != maxCacheShards {
		t.Fatalf("%d shards", len(c.shards))
	}
	var wg sync.WaitGroup
	const goroutines, ops = 8, 5_000
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for range ops {
				file, off := rng.Uint64N(8), rng.Uint64N(1000)*4096
				switch rng.IntN(20) {
				case 0:
					c.EvictFile(file)
				default:
					if b := c.get(file, off); b == nil {
						b = fakeBlock(4096 + rng.IntN(8192))
						b.data[0] = byte(file)
						if rng.IntN(3) == 0 { // metadata and data blocks share the cache
							c.setIndex(file, off, b)
						} else {
							c.set(file, off, b)
						}
					} else if b.data[0] != byte(file) {
						t.Errorf("block of file %d returned for file %d", b.data[0], file)
					}
				}
			}
		}()
	}
	wg.Wait()
	var sum int64
	for i := range c.shards {
		s := &c.shards[i]
		var n int
		var protected int64
		tab := s.table.Load()
		for _, l := range []*lru.List[*cacheEntry]{&s.shared, &s.protected} {
			for e := l.Front(); e != nil; e = e.Next() {
				sum += e.Value.charge
				n++
				if e.Value.protected != (l == &s.protected) || e.Value.protected && !e.Value.meta {
					t.Fatalf("shard %d: block (%d, %d) in the wrong list", i, e.Value.key.fileNum, e.Value.key.offset)
				}
				if e.Value.protected {
					protected += e.Value.charge
				}
				if tab.find(e.Value.key, hashKey(e.Value.key)) != e.Value {
					t.Fatalf("shard %d: listed block (%d, %d) not in the table", i, e.Value.key.fileNum, e.Value.key.offset)
				}
			}
		}
		if n != tab.live || n != s.shared.Len()+s.protected.Len() || s.used > s.capacity || protected != s.protectedUsed {
			t.Fatalf("shard %d: lists %d, table %d, used %d of %d, protected %d counted %d", i, n, tab.live, s.used, s.capacity, protected, s.protectedUsed)
		}
	}
	if sum != c.Size() || c.Size() > capacity {
		t.Fatalf("size %d, entries sum to %d, capacity %d", c.Size(), sum, capacity)
	}
	if c.Hits()+c.Misses() == 0 || c.Hits()+c.Misses() > goroutines*ops {
		t.Fatalf("hits %d misses %d", c.Hits(), c.Misses())
	}
}

// TestConcurrentGetsWithEviction reads one table from many goroutines
// through a cache far smaller than the table, so blocks are evicted while
// other readers still use them.
func TestConcurrentGetsWithEviction(t *testing.T) {
	es := seqEntries(20_000)
	data, m := buildTable(t, es, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	cache := NewBlockCache(int64(m.Props.DataSize / 8))
	r := mustOpenBytes(t, data, ReaderOptions{Cache: cache})
	var st ReadStats
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			it := r.NewIter(rng.IntN(2) == 0)
			for range 1000 {
				e := es[rng.IntN(len(es))]
				uk := kv.UserKey(e.key)
				v, _, found, err := r.Get(uk, kv.MaxSeq, true, &st)
				if err != nil || !found || !bytes.Equal(v, e.value) {
					t.Errorf("Get(%q) = %q %v %v", uk, v, found, err)
					return
				}
				if !it.SeekGE(e.key) || !bytes.Equal(it.Value(), e.value) {
					t.Errorf("SeekGE(%q) failed: %v", uk, it.Error())
					return
				}
			}
			it.Close()
		}()
	}
	wg.Wait()
	if cache.Size() > cache.Capacity() || st.BlockCacheMisses.Load() == 0 || st.BlockCacheHits.Load() == 0 {
		t.Fatalf("cache %d of %d bytes; stats hits %d misses %d", cache.Size(), cache.Capacity(), st.BlockCacheHits.Load(), st.BlockCacheMisses.Load())
	}
	if st.DataBlockReads.Load() != st.BlockCacheHits.Load()+st.BlockCacheMisses.Load() {
		t.Fatal("block reads != hits + misses")
	}
}

// TestBlockCacheMetadataShare: data blocks do not push metadata out while
// it holds no more than its share; metadata beyond its share, and stale
// metadata, give way to data blocks as in one CLOCK list; either kind
// fills the cache when the other is absent; share 0 is one CLOCK list.
func TestBlockCacheMetadataShare(t *testing.T) {
	const capacity, size = 200_000, 4_000 // one shard, 50 blocks
	cached := func(c *BlockCache, meta bool) (n int) {
		s := &c.shards[0]
		for _, l := range []*lru.List[*cacheEntry]{&s.shared, &s.protected} {
			for e := l.Front(); e != nil; e = e.Next() {
				if e.Value.meta == meta {
					n++
				}
			}
		}
		return n
	}
	c := NewBlockCache(capacity)
	if len(c.shards) != 1 {
		t.Fatalf("%d shards, want 1", len(c.shards))
	}
	share := int(capacity * c.metaShare / 1024 / size) // 44 blocks at 0.9
	for i := range 30 {
		c.setIndex(1, uint64(i), fakeBlock(size))
	}
	for i := range 1000 { // a stream of data blocks, never read again
		c.set(2, uint64(i), fakeBlock(size))
	}
	if m, d := cached(c, true), cached(c, false); m != 30 || d != 50-30 {
		t.Fatalf("after a stream of data blocks: %d metadata blocks (want all 30), %d data blocks (want 20)", m, d)
	}
	for i := range 100 { // metadata beyond its share, read once
		c.setIndex(3, uint64(i), fakeBlock(size))
	}
	for i := range 1000 {
		c.set(4, uint64(i), fakeBlock(size))
	}
	if m, d := cached(c, true), cached(c, false); m != share || d != 50-share {
		t.Fatalf("metadata beyond its share, then data: %d metadata and %d data blocks, want %d and %d", m, d, share, 50-share)
	}
	for i := range 1000 { // then metadata alone: stale data blocks go
		c.setIndex(5, uint64(i), fakeBlock(size))
	}
	if m := cached(c, true); m != 50 || c.shards[0].used > capacity {
		t.Fatalf("a stream of metadata: %d metadata blocks cached, want all 50 (used %d of %d)", m, c.shards[0].used, capacity)
	}

	c = NewBlockCache(capacity)
	for i := range 100 {
		c.set(1, uint64(i), fakeBlock(size))
	}
	if d := cached(c, false); d != 50 {
		t.Fatalf("data alone: %d blocks cached, want 50", d)
	}

	// With no share, a stream of data blocks evicts metadata as one
	// CLOCK list would.
	c = NewBlockCache(capacity)
	c.SetMetadataShare(0)
	for i := range 30 {
		c.setIndex(1, uint64(i), fakeBlock(size))
	}
	for i := range 1000 {
		c.set(2, uint64(i), fakeBlock(size))
	}
	if m := cached(c, true); m != 0 {
		t.Fatalf("share 0: %d metadata blocks survived a stream of data blocks", m)
	}
}

// TestBlockCacheMetadataCredit: where small and large metadata entries
// are needed equally often and do not all fit, the CLOCK hand's credit by
// size keeps the small ones (index partitions) in preference to the large
// ones (filter partitions covering the same keys); with one credit for
// all, both are kept in the same proportion.
func TestBlockCacheMetadataCredit(t *testing.T) {
	const capacity = 200_000 // one shard
	const pairs, small, large = 40, 2_000, 10_000
	run := func(credit int64) (smallHits, largeHits float64, bytesRead int) {
		c := NewBlockCache(capacity)
		c.SetMetadataShare(1)
		c.metaCredit = credit
		if len(c.shards) != 1 {
			t.Fatalf("%d shards, want 1", len(c.shards))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var hits [2]int
		const warm, n = 2_000, 20_000
		for i := range warm + n {
			p := uint64(rng.IntN(pairs))
			for k, size := range []int{small, large} {
				off := p*2 + uint64(k)
				if c.get(1, off) != nil {
					if i >= warm {
						hits[k]++
					}
					continue
				}
				if i >= warm {
					bytesRead += size
				}
				c.setIndex(1, off, fakeBlock(size))
			}
		}
		if s := c.shards[0].used; s > capacity {
			t.Fatalf("used %d of %d", s, capacity)
		}
		return float64(hits[0]) / n, float64(hits[1]) / n, bytesRead
	}
	s1, l1, b1 := run(0)
	s8, l8, b8 := run(metaCreditBytes)
	t.Logf("one credit: small %.3f large %.3f hit rates, %d bytes read; by size: %.3f %.3f, %d bytes", s1, l1, b1, s8, l8, b8)
	if s8 < l8+0.2 {
		t.Errorf("credit by size: small entries hit %.3f, large %.3f: want small ahead by 0.2 or more", s8, l8)
	}
	if math.Abs(s1-l1) > 0.05 {
		t.Errorf("one credit: small entries hit %.3f, large %.3f: want about the same", s1, l1)
	}
}
