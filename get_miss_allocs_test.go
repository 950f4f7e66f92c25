package bloomkv

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestGetMissAllocations pins what recycling block buffers buys: in steady
// state a Get whose block is not cached reads it into the buffer of a
// block the cache evicted, so it allocates the value's copy and a little
// bookkeeping (the block's descriptor and its cache entry), never a block
// buffer, through memory-mapped and pread tables alike.
func TestGetMissAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage and race instrumentation allocate")
	}
	for _, disableMmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("mmap=%v", !disableMmap), func(t *testing.T) {
			// A real directory: vfs.NewMem cannot be mapped.
			db := mustOpen(t, t.TempDir(), &Options{BlockCacheSize: 64 << 10, DisableMmap: disableMmap, FS: vfs.Default})
			defer db.Close()
			key := func(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }
			value := make([]byte, 100)
			const n = 20_000 // about 2.5 MiB of blocks against the 64 KiB cache
			for i := range n {
				if err := db.Put(key(i*7919%n), value); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.WaitForCompactions(); err != nil {
				t.Fatal(err)
			}
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = key(i)
			}
			j := 0
			get := func() {
				j = (j + 7919) % n // hop across blocks
				if _, err := db.Get(keys[j]); err != nil {
					t.Fatalf("Get(%s): %v", keys[j], err)
				}
			}
			for range 2000 { // fill the cache and the buffer pool
				get()
			}
			before := db.Metrics()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			const runs = 1000
			allocs := testing.AllocsPerRun(runs, get)
			runtime.ReadMemStats(&ms1)
			d := db.Metrics().Sub(before)
			if d.BlockCacheMisses < runs*9/10 {
				t.Fatalf("%d cache misses in %d Gets: the test does not read blocks", d.BlockCacheMisses, runs)
			}
			bytesPerGet := float64(ms1.TotalAlloc-ms0.TotalAlloc) / (runs + 1)
			t.Logf("%.2f allocations (%.3f), %.0f bytes per Get; %d misses, %d hits", allocs, float64(ms1.Mallocs-ms0.Mallocs)/(runs+1), bytesPerGet, d.BlockCacheMisses, d.BlockCacheHits)
			if allocs > 3 {
				t.Errorf("a cache-miss Get allocates %.2f times, want at most 3 (value copy, block, cache entry)", allocs)
			}
			if bytesPerGet > 1024 {
				t.Errorf("a cache-miss Get allocates %.0f bytes: a block buffer (4 KiB) is not recycled", bytesPerGet)
			}
		})
	}
}
