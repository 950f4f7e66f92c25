package bloomkv

import (
	"fmt"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// cacheFiltersOptions makes a tree whose filters (about 75 KB at 10
// bits/key over 60k keys) outgrow a 32 KiB block cache.
func cacheFiltersOptions(fs vfs.FS) *Options {
	o := levelsOptions()
	o.FS = fs
	o.BloomBitsPerKey = 10
	o.BlockCacheSize = 32 << 10
	return o
}

// getAll Gets every present key (even numbers) and as many absent ones
// (odd), failing on a wrong answer, and returns the Metrics difference.
func getAll(t *testing.T, db *DB, n int) Metrics {
	t.Helper()
	before := db.Metrics()
	for i := 0; i < n; i++ {
		if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*i))); err != nil {
			t.Fatalf("present key %d: %v", 2*i, err)
		}
		if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*i+1))); err != ErrNotFound {
			t.Fatalf("absent key %d: %v", 2*i+1, err)
		}
	}
	return db.Metrics().Sub(before)
}

// TestCacheFilterBlocksBoundsMemory: with CacheFilterBlocks the filters in
// memory stay within the block cache although all filters are larger than
// it, Gets answer exactly as with resident filters and are filtered as
// often (the same filters), and the filters evicted and probed again are
// read back (FilterBlockReads, their bytes in BytesRead).
func TestCacheFilterBlocksBoundsMemory(t *testing.T) {
	const n = 60_000
	fs := vfs.NewMem()
	db := writeLevelsTree(t, cacheFiltersOptions(fs), n)
	resident := getAll(t, db, n)
	mr := db.Metrics()
	db.Close()

	o := cacheFiltersOptions(fs)
	o.CacheFilterBlocks = true
	o.FilterPinning = PinNoFilters
	// Every filter consulted, as resident filters are: the negatives
	// and false positives must match exactly. (By default a Get skips an
	// evicted filter where most recent Gets found their key:
	// filter_use_test.go.)
	o.AlwaysReadFilters = true
	db = mustOpen(t, "/db", o)
	defer db.Close()
	cached := getAll(t, db, n)
	m := db.Metrics()
	t.Logf("resident: %d B of filters in memory; cached: %d B cached, %d pinned, %d filter reads (%d hits, %d misses), cache %d B of %d",
		mr.FilterBytesResident, m.FilterBytesCached, m.FilterBytesPinned, cached.FilterBlockReads, cached.FilterCacheHits, cached.FilterCacheMisses, m.BlockCacheBytes, o.BlockCacheSize)
	if mr.FilterBytes <= o.BlockCacheSize || mr.FilterBytesResident != mr.FilterBytes {
		t.Fatalf("resident mode: filters %d B, %d resident; want all resident and above the %d B cache", mr.FilterBytes, mr.FilterBytesResident, o.BlockCacheSize)
	}
	if m.FilterBytes != mr.FilterBytes {
		t.Errorf("filter bytes %d, resident mode %d: the same tables", m.FilterBytes, mr.FilterBytes)
	}
	if m.FilterBytesResident > o.BlockCacheSize || m.BlockCacheBytes > o.BlockCacheSize || m.FilterBytesPinned != 0 {
		t.Errorf("cached mode: %d B of filters resident, cache charged %d B, %d pinned; want within %d, none pinned",
			m.FilterBytesResident, m.BlockCacheBytes, m.FilterBytesPinned, o.BlockCacheSize)
	}
	if cached.FilterNegatives != resident.FilterNegatives || cached.FilterFalsePositives != resident.FilterFalsePositives {
		t.Errorf("filter negatives %d / false positives %d, resident filters %d / %d",
			cached.FilterNegatives, cached.FilterFalsePositives, resident.FilterNegatives, resident.FilterFalsePositives)
	}
	if cached.FilterBlockReads == 0 || cached.FilterCacheMisses < cached.FilterBlockReads {
		t.Errorf("%d filter block reads, %d cache misses", cached.FilterBlockReads, cached.FilterCacheMisses)
	}
	if cached.BytesRead <= resident.BytesRead {
		t.Errorf("cached mode read %d B, resident %d: filter re-reads must show in BytesRead", cached.BytesRead, resident.BytesRead)
	}
}

// TestFilterPinning: level-0 tables' filters are pinned by default and
// show as the level's resident bytes; PinAllFilters pins every probed
// table's; pinned bytes are charged to the block cache.
func TestFilterPinning(t *testing.T) {
	const n = 20_000
	for _, pin := range []FilterPinning{PinLevel0Filters, PinAllFilters} {
		t.Run(pin.String(), func(t *testing.T) {
			o := cacheFiltersOptions(vfs.NewMem())
			o.CacheFilterBlocks = true
			o.FilterPinning = pin
			o.BlockCacheSize = 1 << 20
			o.L0CompactionThreshold = 100
			o.L0SlowdownWritesThreshold = 100
			o.L0StopWritesThreshold = 100
			o.DisableAutomaticCompactions = true
			db := writeLevelsTree(t, o, n)
			defer db.Close()
			getAll(t, db, n)
			m := db.Metrics()
			var want int64
			for l, lm := range m.Levels {
				if l == 0 || pin == PinAllFilters {
					want += lm.FilterBytes
					if lm.FilterBytesResident != lm.FilterBytes {
						t.Errorf("level %d: %d of %d filter bytes resident, want all pinned", l, lm.FilterBytesResident, lm.FilterBytes)
					}
				} else if lm.FilterBytesResident != 0 {
					t.Errorf("level %d: %d filter bytes pinned, want none", l, lm.FilterBytesResident)
				}
			}
			if m.Levels[0].Files == 0 || want == 0 {
				t.Fatalf("no level-0 filters to pin: %d files", m.Levels[0].Files)
			}
			if m.FilterBytesPinned != want || m.BlockCacheBytes < want {
				t.Errorf("%d B pinned, cache charged %d; want %d pinned", m.FilterBytesPinned, m.BlockCacheBytes, want)
			}
		})
	}
}

// TestCacheFilterBlocksConcurrent runs Gets from several goroutines while
// compactions replace tables and the table cache closes them (a small
// MaxOpenFiles), with filters cached and pinned: answers stay right, and
// after Close nothing is left pinned. Meant for -race.
func TestCacheFilterBlocksConcurrent(t *testing.T) {
	const n = 20_000
	o := cacheFiltersOptions(vfs.NewMem())
	o.CacheFilterBlocks = true
	o.FilterPinning = PinAllFilters
	o.MaxOpenFiles = 10
	db := mustOpen(t, "/db", o)
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%07d", (i*7919)%n*2)), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i += 3 {
				select {
				case <-stop:
					return
				default:
				}
				k := (i * 104729) % n
				if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*k))); err != nil {
					t.Errorf("present key %d: %v", 2*k, err)
					return
				}
				if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*k+1))); err != ErrNotFound {
					t.Errorf("absent key %d: %v", 2*k+1, err)
					return
				}
			}
		}()
	}
	// Rewrite the keys so compactions replace the tables under the Gets.
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%07d", (i*7919)%n*2)), []byte("value2")); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, db)
	close(stop)
	wg.Wait()
	cache := db.blockCache
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, pinned := cache.FilterBytes(); pinned != 0 {
		t.Errorf("after Close %d filter bytes still pinned", pinned)
	}
}
