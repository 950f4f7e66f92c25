package bloomkv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestGetsRaceTableReclamation races Gets with everything that takes a
// table away from under them: a writer overwrites keys, so flushes and
// compactions replace read states and delete tables, and the table cache
// holds 10 of many more tables, so nearly every table a Get opens closes
// another. The Gets take their read-state and table references without a
// shared write (per-P slots, see readState and sstable's tableEntry);
// every one must find its key with a value of that key, never an error (a
// closed table fails its reads; a deleted one cannot be opened). Snapshot
// Gets and short iterators run beside them, holding references across
// other work. Run it with -race.
func TestGetsRaceTableReclamation(t *testing.T) {
	defer func(on bool) { invariantChecks = on }(invariantChecks)
	invariantChecks = false // they would serialize the test on the checks
	db := mustOpen(t, t.TempDir(), &Options{
		FS:                    vfs.Default,
		MemtableSize:          8 << 10,
		BlockSize:             256,
		BlockCacheSize:        32 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         32 << 10,
		TargetFileSize:        4 << 10,
		MaxOpenFiles:          10,
	})
	defer db.Close()
	const keys = 2000
	key := func(k int) []byte { return fmt.Appendf(nil, "key%05d", k) }
	value := func(k, v int) []byte { return fmt.Appendf(nil, "key%05d=v%08d-%040d", k, v, v) }
	for k := range keys {
		if err := db.Put(key(k), value(k, 0)); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Metrics()

	var stop atomic.Bool
	var wg sync.WaitGroup
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		stop.Store(true)
	}
	check := func(k int, v []byte, err error) bool {
		if err != nil || !bytes.HasPrefix(v, append(key(k), '=')) {
			fail("Get(%s) = %q, %v", key(k), v, err)
			return false
		}
		return true
	}
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 1))
		for v := 1; !stop.Load(); v++ {
			k := rng.IntN(keys)
			if err := db.Put(key(k), value(k, v)); err != nil {
				fail("Put: %v", err)
				return
			}
		}
	}()
	var gets atomic.Int64
	for r := range 4 {
		wg.Add(1)
		go func() { // Gets, and every fourth goroutine through a snapshot
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for !stop.Load() {
				k := rng.IntN(keys)
				if r == 3 {
					s := db.NewSnapshot()
					v, err := s.Get(key(k))
					s.Close()
					if !check(k, v, err) {
						return
					}
				} else if v, err := db.Get(key(k)); !check(k, v, err) {
					return
				}
				gets.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // short scans pin tables for a while
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 3))
		for !stop.Load() {
			k := rng.IntN(keys - 10)
			it := db.NewIterator(&IterOptions{LowerBound: key(k)})
			ok := it.First()
			for n := 0; ok && n < 10; n++ {
				if !bytes.HasPrefix(it.Value(), append(bytes.Clone(it.Key()), '=')) {
					fail("iterator at %s: value %q", it.Key(), it.Value())
					break
				}
				ok = it.Next()
			}
			if err := it.Close(); err != nil {
				fail("iterator: %v", err)
				return
			}
		}
	}()
	time.Sleep(stressDuration())
	stop.Store(true)
	wg.Wait()
	d := db.Metrics().Sub(before)
	t.Logf("%d Gets, %d flushes, %d compactions, %d table opens (%d re-opens)", gets.Load(), d.Flushes, d.Compactions, d.TableOpens, d.TableReopens)
	if d.Compactions == 0 || d.TableReopens == 0 {
		t.Errorf("no race staged: %d compactions, %d table re-opens", d.Compactions, d.TableReopens)
	}
}
