package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestTableCacheRefStress races lock-free Finds and releases against trims
// (capacity 2 of 8 tables: nearly every open closes another) and, in the
// second run, Evicts. References are taken in arbitrary slots, as by
// goroutines that move between Ps, and held across other Finds. Every
// Reader a Find returns must answer Gets until released (a closed Reader
// fails them), no file may be closed twice, none opened twice at once
// unless evicted, and at the end Len must equal the files open and Close
// must leave none. Run it with -race: it is the check of the sharded
// reference counts' protocol (see tableEntry).
func TestTableCacheRefStress(t *testing.T) {
	ops := 4000
	if testing.Short() {
		ops = 800
	}
	for _, evict := range []bool{false, true} {
		t.Run(fmt.Sprintf("evict=%v", evict), func(t *testing.T) {
			dir := t.TempDir()
			const nTables, capacity, goroutines = 8, 2, 8
			sizes, tables := writeTables(t, dir, nTables)
			fs := &countingFS{FS: vfs.Default}
			tc := NewTableCache(fs, dir, capacity, ReaderOptions{Cache: NewBlockCache(1 << 20)})
			var done atomic.Bool
			var wg sync.WaitGroup
			if evict {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(7, 7))
					for !done.Load() {
						tc.Evict(uint64(rng.IntN(nTables) + 1))
					}
				}()
			}
			var workers sync.WaitGroup
			for g := range goroutines {
				workers.Add(1)
				go func() {
					defer workers.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 11))
					type held struct {
						r       *Reader
						i       int
						release func()
					}
					var hs []held
					check := func(h held) bool {
						e := tables[h.i][rng.IntN(len(tables[h.i]))]
						v, _, found, err := h.r.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil)
						if err != nil || !found || !bytes.Equal(v, e.value) {
							t.Errorf("table %d Get(%s) = %q %v %v", h.i+1, kv.FormatInternalKey(e.key), v, found, err)
							return false
						}
						return true
					}
					for range ops {
						i := rng.IntN(nTables)
						r, release, err := tc.FindAt(rng.IntN(2*pslot.N), Identity{FileNum: uint64(i + 1), Size: sizes[i]}, nil)
						if err != nil {
							t.Error(err)
							return
						}
						hs = append(hs, held{r, i, release})
						for _, h := range hs { // what we hold still works
							if !check(h) {
								return
							}
						}
						for len(hs) > rng.IntN(3) {
							k := rng.IntN(len(hs))
							hs[k].release()
							hs = append(hs[:k], hs[k+1:]...)
						}
					}
					for _, h := range hs {
						h.release()
					}
				}()
			}
			workers.Wait()
			done.Store(true)
			wg.Wait()
			if n := fs.doubleCloses.Load(); n != 0 {
				t.Errorf("%d files closed twice", n)
			}
			if n := fs.duplicates(); n != 0 && !evict {
				t.Errorf("%d files opened while already open", n)
			}
			if n, open := tc.Len(), fs.open.Load(); n > capacity || int64(n) != open {
				t.Errorf("all released: Len %d, %d files open; want equal and <= %d", n, open, capacity)
			}
			if err := tc.Close(); err != nil {
				t.Fatal(err)
			}
			if n := fs.open.Load(); n != 0 {
				t.Fatalf("%d files left open", n)
			}
		})
	}
}
