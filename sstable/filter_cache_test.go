package sstable

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// filterTestTable builds a table of n keys "key%06d" (even numbers) with a
// 10 bits/key bloom filter.
func filterTestTable(t *testing.T, n int) []byte {
	t.Helper()
	var es []refEntry
	for i := 0; i < n; i++ {
		es = append(es, refEntry{kv.MakeInternalKey([]byte(fmt.Sprintf("key%06d", 2*i)), uint64(i+1), kv.KindSet), []byte("value")})
	}
	data, _ := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10, BlockSize: 512})
	return data
}

// TestCacheFiltersReadsOnDemand: with CacheFilters the filter is not read
// at Open (OpenBytes and FilterMemory leave it out), the first probe
// reads it (one FilterBlockReads, its bytes in BytesRead) and caches it
// at its size, later probes find it in the cache, a dropped cache entry
// is read again, and answers are the resident filter's: every present key
// found, absent keys mostly filtered.
func TestCacheFiltersReadsOnDemand(t *testing.T) {
	const n = 2000
	data := filterTestTable(t, n)
	resident := mustOpenBytes(t, data, ReaderOptions{})
	cache := NewBlockCache(1 << 20)
	r := mustOpenBytes(t, data, ReaderOptions{Cache: cache, CacheFilters: true})
	size := int64(r.FilterSize())
	if size == 0 || int64(resident.FilterMemory()) != size {
		t.Fatalf("FilterSize %d, resident reader holds %d", size, resident.FilterMemory())
	}
	if r.FilterMemory() != 0 || resident.OpenBytes()-r.OpenBytes() != uint64(size)+blockTrailerLen {
		t.Fatalf("cached reader holds %d filter bytes, open read %d (resident %d)", r.FilterMemory(), r.OpenBytes(), resident.OpenBytes())
	}
	var st ReadStats
	probeAll := func() (negatives uint64) {
		before := st.FilterNegatives.Load()
		for i := 0; i < 2*n; i++ {
			k := []byte(fmt.Sprintf("key%06d", i))
			_, _, found, err := r.Get(k, kv.MaxSeq, true, &st)
			if err != nil {
				t.Fatal(err)
			}
			if found != (i%2 == 0) {
				t.Fatalf("%s: found %v", k, found)
			}
		}
		return st.FilterNegatives.Load() - before
	}
	if neg := probeAll(); neg < n*97/100 {
		t.Errorf("%d of %d absent keys filtered", neg, n)
	}
	if got := st.FilterBlockReads.Load(); got != 1 {
		t.Errorf("%d filter block reads, want 1", got)
	}
	if cached, pinned := cache.FilterBytes(); cached != size || pinned != 0 {
		t.Errorf("cache holds %d filter bytes, %d pinned; want %d, 0", cached, pinned, size)
	}
	if cache.FilterHits() != 2*n-1 {
		t.Errorf("%d filter hits", cache.FilterHits())
	}
	cache.EvictFile(r.FileNum())
	probeAll()
	if got := st.FilterBlockReads.Load(); got != 2 {
		t.Errorf("after eviction: %d filter block reads, want 2", got)
	}
}

// TestPinFilter: a pinned filter is held by the Reader, charged to the
// cache as pinned (Size counts it, cached blocks get less room), probes
// no longer look it up, and Close releases the charge once.
func TestPinFilter(t *testing.T) {
	data := filterTestTable(t, 2000)
	cache := NewBlockCache(1 << 20)
	r := mustOpenBytes(t, data, ReaderOptions{Cache: cache, CacheFilters: true})
	size := int64(r.FilterSize())
	var st ReadStats
	for range 2 {
		if err := r.PinFilter(&st); err != nil {
			t.Fatal(err)
		}
	}
	if !r.FilterPinned() || int64(r.FilterMemory()) != size {
		t.Fatalf("pinned %v, holds %d of %d", r.FilterPinned(), r.FilterMemory(), size)
	}
	if _, pinned := cache.FilterBytes(); pinned != size || cache.Size() < size {
		t.Fatalf("cache: pinned %d, size %d; want %d pinned", pinned, cache.Size(), size)
	}
	if st.FilterBlockReads.Load() != 1 {
		t.Errorf("%d filter reads to pin twice", st.FilterBlockReads.Load())
	}
	hits, misses := cache.FilterHits(), cache.FilterMisses()
	if _, _, found, err := r.Get([]byte("key000000"), kv.MaxSeq, true, &st); !found || err != nil {
		t.Fatal(found, err)
	}
	if cache.FilterHits() != hits || cache.FilterMisses() != misses {
		t.Errorf("a pinned filter was looked up in the cache")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, pinned := cache.FilterBytes(); pinned != 0 {
		t.Errorf("after Close %d bytes still pinned", pinned)
	}
}

// TestPinnedFiltersShrinkCache: blocks cached after filters are pinned
// fit in the capacity less the pinned bytes.
func TestPinnedFiltersShrinkCache(t *testing.T) {
	c := NewBlockCache(64 << 10)
	c.pin(48 << 10)
	for i := range 64 {
		c.set(1, uint64(i)*4096, &block{data: make([]byte, 1024)})
	}
	if got := c.Size(); got > 64<<10 {
		t.Errorf("cache charges %d bytes with 48 KiB pinned, capacity 64 KiB", got)
	}
	c.pin(-48 << 10)
	for i := range 64 {
		c.set(2, uint64(i)*4096, &block{data: make([]byte, 1024)})
	}
	if got := c.Size(); got != 64<<10 {
		t.Errorf("after unpinning the cache holds %d bytes, want the full 64 KiB", got)
	}
}

// TestCacheFiltersCorruptFilter: a damaged filter block is not read at
// Open with CacheFilters; a Get that needs it returns an error wrapping
// ErrCorruption naming the file and offset, never a wrong answer or a
// panic, and a prefix probe falls back to "may match".
func TestCacheFiltersCorruptFilter(t *testing.T) {
	data := filterTestTable(t, 500)
	probe := mustOpenBytes(t, data, ReaderOptions{})
	off := probe.footer.filter.offset
	data[off+3] ^= 0x40
	r := mustOpenBytes(t, data, ReaderOptions{Cache: NewBlockCache(1 << 20), CacheFilters: true, FilterKeyName: ""})
	_, _, _, err := r.Get([]byte("key000002"), kv.MaxSeq, true, nil)
	if !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("Get over a damaged filter: %v, want corruption", err)
	}
	if want := fmt.Sprint(off); !containsAll(err.Error(), r.Name(), want) {
		t.Errorf("error %q does not name %s and offset %s", err, r.Name(), want)
	}
	if err := r.PinFilter(nil); !errors.Is(err, kv.ErrCorruption) {
		t.Errorf("PinFilter over a damaged filter: %v", err)
	}
	if may, filtered := r.PrefixMayMatch([]byte("key"), nil); !may || filtered {
		t.Errorf("prefix probe over a damaged filter: may %v filtered %v", may, filtered)
	}
	// Without the filter the table still answers.
	if _, _, found, err := r.Get([]byte("key000002"), kv.MaxSeq, false, nil); !found || err != nil {
		t.Errorf("unfiltered Get: %v %v", found, err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestGetFilterProbeIfCached: FilterProbeIfCached consults a filter the
// cache holds as FilterProbe does, and one it does not hold not at all:
// the Get searches the table (a data block read), answers as without a
// filter, reads no filter and counts a skip. Whole filter blocks and
// filter partitions alike.
func TestGetFilterProbeIfCached(t *testing.T) {
	const n = 2000
	es := make([]refEntry, 0, n)
	for i := 0; i < 2*n; i += 2 {
		es = append(es, refEntry{key: kv.MakeInternalKey([]byte(fmt.Sprintf("key%06d", i)), 1, kv.KindSet), value: []byte("v")})
	}
	for name, wo := range map[string]WriterOptions{
		"whole":       {BloomBitsPerKey: 10, BlockSize: 512},
		"partitioned": {BloomBitsPerKey: 10, BlockSize: 512, IndexPartitionSize: 256},
	} {
		t.Run(name, func(t *testing.T) {
			data, _ := buildTable(t, es, wo)
			cache := NewBlockCache(1 << 20)
			r := mustOpenBytes(t, data, ReaderOptions{Cache: cache, CacheFilters: true})
			if (name == "partitioned") != r.partitioned() {
				t.Fatalf("partitioned %v", r.partitioned())
			}
			get := func(i int, use FilterUse) (found bool, st *ReadStats) {
				t.Helper()
				st = new(ReadStats)
				k := []byte(fmt.Sprintf("key%06d", i))
				v, _, _, found, held, err := r.GetSeqHeld(k, kv.MaxSeq, use, st)
				if err != nil || found != (i%2 == 0) || found && string(v) != "v" {
					t.Fatalf("%s with use %d: %q %v %v", k, use, v, found, err)
				}
				held.Release()
				return found, st
			}
			// Nothing cached: present and absent keys are searched.
			for _, i := range []int{10, 11} {
				_, st := get(i, FilterProbeIfCached)
				if st.FilterSkips.Load() != 1 || st.FilterBlockReads.Load() != 0 || st.FilterNegatives.Load() != 0 || st.DataBlockReads.Load() == 0 {
					t.Errorf("key %d, filter not cached: %d skips, %d filter reads, %d negatives, %d data blocks; want 1, 0, 0, some",
						i, st.FilterSkips.Load(), st.FilterBlockReads.Load(), st.FilterNegatives.Load(), st.DataBlockReads.Load())
				}
			}
			// FilterProbe reads the filter (the partition for key 11) into
			// the cache; then FilterProbeIfCached uses it.
			if _, st := get(11, FilterProbe); st.FilterBlockReads.Load() != 1 || st.FilterNegatives.Load() != 1 {
				t.Fatalf("FilterProbe: %d filter reads, %d negatives; want 1, 1", st.FilterBlockReads.Load(), st.FilterNegatives.Load())
			}
			_, st := get(11, FilterProbeIfCached)
			if st.FilterSkips.Load() != 0 || st.FilterBlockReads.Load() != 0 || st.FilterNegatives.Load() != 1 || st.DataBlockReads.Load() != 0 {
				t.Errorf("filter cached: %d skips, %d filter reads, %d negatives, %d data blocks; want 0, 0, 1, 0",
					st.FilterSkips.Load(), st.FilterBlockReads.Load(), st.FilterNegatives.Load(), st.DataBlockReads.Load())
			}
			if _, st := get(12, FilterIgnore); st.FilterSkips.Load() != 0 || st.FilterNegatives.Load() != 0 || st.FilterBlockReads.Load() != 0 {
				t.Errorf("FilterIgnore consulted the filter")
			}
		})
	}
}
