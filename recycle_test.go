package bloomkv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// recycleValue is the value generation gen writes for key i: checkable
// from the key and itself alone, so readers racing the writer can verify
// whatever version they see.
func recycleValue(i, gen int) []byte {
	v := fmt.Appendf(nil, "v%06d-g%06d-", i, gen)
	return append(v, bytes.Repeat([]byte{byte('a' + (i+gen)%26)}, 30+(i+gen)%70)...)
}

// checkRecycleValue verifies that value is some generation's value of key.
func checkRecycleValue(key, value []byte) error {
	i, err := strconv.Atoi(string(bytes.TrimPrefix(key, []byte("k"))))
	if err != nil {
		return fmt.Errorf("unexpected key %q", key)
	}
	var gen int
	if _, err := fmt.Sscanf(string(value), "v%06d-g%06d-", new(int), &gen); err != nil || len(value) < 16 {
		return fmt.Errorf("key %q: garbled value %q", key, value)
	}
	if want := recycleValue(i, gen); !bytes.Equal(value, want) {
		return fmt.Errorf("key %q: value %q, want %q", key, value, want)
	}
	return nil
}

// TestRecycledBlocksConcurrent reads through a block cache of a few dozen
// blocks (so nearly every Get evicts a block and reuses its buffer) from
// Gets and iterators while a writer overwrites keys, flushes and the tree
// compacts (deleting tables, whose blocks the cache drops, and closing
// readers, with MaxOpenFiles low). Every value read is checked. Run with
// -race, and with -tags invariants, which poisons every recycled buffer so
// that a read of a block after its release shows up as a wrong value.
func TestRecycledBlocksConcurrent(t *testing.T) {
	const nkeys = 6000
	ops := 20000
	if testing.Short() {
		ops = 4000
	}
	db := mustOpen(t, t.TempDir(), &Options{FS: vfs.Default, BlockCacheSize: 64 << 10, MaxOpenFiles: 20,
		MemtableSize: 256 << 10})
	defer db.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "k%06d", i) }
	for i := range nkeys {
		if err := db.Put(key(i), recycleValue(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := db.Metrics()

	var readers, writer sync.WaitGroup
	var stop atomic.Bool
	fail := func(err error) {
		t.Error(err)
		stop.Store(true)
	}
	for g := range 2 {
		readers.Add(1)
		go func() { // Gets of present and absent keys
			defer readers.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for n := 0; n < ops && !stop.Load(); n++ {
				i := rng.IntN(nkeys)
				k := key(i)
				if rng.IntN(4) == 0 {
					k = append(k, 'x')
					if _, err := db.Get(k); err != ErrNotFound {
						fail(fmt.Errorf("Get(%q) of an absent key: %v", k, err))
					}
					continue
				}
				v, err := db.Get(k)
				if err != nil {
					fail(fmt.Errorf("Get(%q): %v", k, err))
					return
				}
				if err := checkRecycleValue(k, v); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	readers.Add(1)
	go func() { // short scans, checking each entry, and the previous one after each step
		defer readers.Done()
		rng := rand.New(rand.NewPCG(9, 1))
		for n := 0; n < ops/20 && !stop.Load(); n++ {
			it := db.NewIterator(nil)
			var prevKey, prevValue []byte
			for ok, step := it.SeekGE(key(rng.IntN(nkeys))), 0; ok && step < 20; ok, step = it.Next(), step+1 {
				if err := checkRecycleValue(it.Key(), it.Value()); err != nil {
					fail(fmt.Errorf("iterator: %v", err))
					break
				}
				if prevKey != nil {
					if err := checkRecycleValue(prevKey, prevValue); err != nil {
						fail(fmt.Errorf("iterator, previous entry: %v", err))
						break
					}
				}
				// Copied: Key and Value are valid only until the next
				// move, and a block the iterator leaves may be recycled.
				prevKey, prevValue = append(prevKey[:0], it.Key()...), append(prevValue[:0], it.Value()...)
			}
			if err := it.Close(); err != nil {
				fail(err)
			}
		}
	}()
	writer.Add(1)
	go func() { // overwrites, flushed into new tables that compactions merge
		defer writer.Done()
		rng := rand.New(rand.NewPCG(7, 1))
		for gen := 1; !stop.Load(); gen++ {
			i := rng.IntN(nkeys)
			if err := db.Put(key(i), recycleValue(i, gen)); err != nil {
				fail(err)
				return
			}
			if gen%2000 == 0 {
				if err := db.Flush(); err != nil {
					fail(err)
					return
				}
			}
		}
	}()
	readers.Wait()
	stop.Store(true)
	writer.Wait()
	d := db.Metrics().Sub(before)
	t.Logf("block cache: %d hits, %d misses", d.BlockCacheHits, d.BlockCacheMisses)
	if d.BlockCacheMisses < uint64(ops) {
		t.Fatalf("%d block cache misses: the cache did not churn", d.BlockCacheMisses)
	}
}
