package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestBlockRefLifecycle walks one block through the recycling protocol:
// a held value outlives the block's eviction until its release; the
// release recycles the buffer (which the poisoning makes visible); a block
// a Get released stays cached, unrecycled, while the cache holds it; a
// kept block (GetSeq) is never recycled.
func TestBlockRefLifecycle(t *testing.T) {
	es := seqEntries(2000)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 512})
	cache := NewBlockCache(1 << 20)
	r := mustOpenBytes(t, data, ReaderOptions{Cache: cache})
	defer r.Close()
	e := es[10]
	uk := kv.UserKey(e.key)

	v, _, _, found, held, err := r.GetSeqHeld(uk, kv.MaxSeq, FilterProbe, nil)
	if err != nil || !found || !bytes.Equal(v, e.value) || held.b == nil {
		t.Fatalf("GetSeqHeld = %q %v %v (held %v)", v, found, err, held.b != nil)
	}
	n0 := recycledBuffers.Load()
	cache.EvictFile(7) // the cache drops its reference; the Get keeps the block
	if !bytes.Equal(v, e.value) || recycledBuffers.Load() != n0 {
		t.Fatalf("evicted while held: value %q, %d buffers recycled", v, recycledBuffers.Load()-n0)
	}
	held.Release()
	if got := recycledBuffers.Load() - n0; got != 1 {
		t.Fatalf("the last release recycled %d buffers, want 1", got)
	}
	// Reading v now is the bug the poisoning exists to expose: check that
	// it would be exposed.
	if bytes.Equal(v, e.value) {
		t.Fatalf("a value read after its block was recycled still reads %q: poisoning does not work", v)
	}
	if held.b.acquire(true) || held.b.acquire(false) {
		t.Fatal("a recycled block could be acquired")
	}

	// The next Get misses and reads the block again; released by the Get,
	// it stays cached and unrecycled.
	v, _, _, found, held, err = r.GetSeqHeld(uk, kv.MaxSeq, FilterProbe, nil)
	if err != nil || !found || !bytes.Equal(v, e.value) {
		t.Fatalf("GetSeqHeld after recycling = %q %v %v", v, found, err)
	}
	held.Release()
	if got := recycledBuffers.Load() - n0; got != 1 {
		t.Fatalf("releasing a cached block recycled it (%d buffers)", got-1)
	}
	// A kept reference (GetSeq's) survives eviction for good.
	v, _, _, found, err = r.GetSeq(uk, kv.MaxSeq, true, nil)
	if err != nil || !found {
		t.Fatalf("GetSeq = %v %v", found, err)
	}
	cache.EvictFile(7)
	if !bytes.Equal(v, e.value) || recycledBuffers.Load()-n0 != 1 {
		t.Fatalf("a kept block was recycled: value %q, %d buffers", v, recycledBuffers.Load()-n0-1)
	}
}

// TestBlockRefUncached: without a cache (or with one too small for the
// block) the Get's release is the last, and recycles the buffer.
func TestBlockRefUncached(t *testing.T) {
	es := seqEntries(2000)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 512})
	for _, cache := range []*BlockCache{nil, NewBlockCache(0)} {
		r := mustOpenBytes(t, data, ReaderOptions{Cache: cache})
		n0 := recycledBuffers.Load()
		for _, e := range es[:100] {
			v, _, _, found, held, err := r.GetSeqHeld(kv.UserKey(e.key), kv.MaxSeq, FilterIgnore, nil)
			if err != nil || !found || !bytes.Equal(v, e.value) {
				t.Fatalf("GetSeqHeld(%s) = %q %v %v", kv.FormatInternalKey(e.key), v, found, err)
			}
			held.Release()
		}
		if got := recycledBuffers.Load() - n0; got != 100 {
			t.Fatalf("cache %v: 100 released Gets recycled %d buffers", cache != nil, got)
		}
		r.Close()
	}
}

// TestBlockRefDoubleRelease: a second release is caught, not silently
// recycling a buffer someone else still reads.
func TestBlockRefDoubleRelease(t *testing.T) {
	b := &block{data: make([]byte, 100)}
	b.adoptBuffer(new([]byte), true)
	b.addRef() // as the cache would
	b.release()
	b.release()
	defer func() {
		if recover() == nil {
			t.Fatal("a third release of a block with two references did not panic")
		}
	}()
	b.release()
}

// recycleKey and recycleValue make every value checkable from its key.
func recycleKey(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

func recycleValue(i int) []byte {
	v := fmt.Appendf(nil, "value%06d-", i)
	return append(v, bytes.Repeat([]byte{byte('a' + i%26)}, 20+i%60)...)
}

// checkRecycled reports whether value is the one written for key.
func checkRecycled(ikey, value []byte) error {
	uk := kv.UserKey(ikey)
	i, err := strconv.Atoi(string(bytes.TrimPrefix(uk, []byte("key"))))
	if err != nil || !bytes.HasPrefix(uk, []byte("key")) {
		return fmt.Errorf("unexpected key %q", uk)
	}
	if want := recycleValue(i); !bytes.Equal(value, want) {
		return fmt.Errorf("key %q: value %q, want %q", uk, value, want)
	}
	return nil
}

// TestBlockRecycleConcurrent reads four tables (pread and mapped, raw,
// snappy and zstd blocks) through a cache of a few dozen blocks, so blocks are
// evicted and their buffers recycled all the time, from goroutines that
// each check every value they read: Gets that release (checking before
// the release), Gets that keep their values and check them again later,
// iterators that check each entry and the previous one after every step,
// and a goroutine evicting whole files. With the poisoning (TestMain), a
// buffer recycled while anyone still reads it shows up as a wrong value;
// run with -race too.
func TestBlockRecycleConcurrent(t *testing.T) {
	const nkeys, tables = 4000, 4
	iters := 4000
	if testing.Short() {
		iters = 1000
	}
	dir := t.TempDir()
	cache := NewBlockCache(32 << 10)
	readers := make([]*Reader, tables)
	for j := range readers {
		var es []refEntry
		for i := j; i < nkeys; i += tables {
			es = append(es, refEntry{kv.MakeInternalKey(recycleKey(i), 1, kv.KindSet), recycleValue(i)})
		}
		o := WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: []Compression{SnappyCompression, NoCompression, SnappyCompression, ZstdCompression}[j]}
		fileNum := uint64(j + 1)
		var r *Reader
		if j%2 == 0 { // pread through memory
			data, _ := buildTable(t, es, o)
			var err error
			if r, err = Open(&memFile{data: data}, fmt.Sprint(fileNum), fileNum, int64(len(data)), ReaderOptions{Cache: cache}); err != nil {
				t.Fatal(err)
			}
		} else {
			m := writeTableFile(t, dir, fileNum, es, o)
			f, err := vfs.Default.Open(filepath.Join(dir, base.MakeFilename(base.FileTypeTable, fileNum)))
			if err != nil {
				t.Fatal(err)
			}
			if r, err = Open(f, fmt.Sprint(fileNum), fileNum, int64(m.Size), ReaderOptions{Cache: cache, Mmap: true}); err != nil {
				t.Fatal(err)
			}
		}
		defer r.Close()
		readers[j] = r
	}
	n0 := recycledBuffers.Load()

	var wg sync.WaitGroup
	done := make(chan struct{})
	worker := func(seed uint64, f func(rng *rand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 11))
			for range iters {
				if err := f(rng); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	heldGet := func(rng *rand.Rand) error {
		i := rng.IntN(nkeys + nkeys/4)
		absent := i >= nkeys
		if absent {
			i -= nkeys
		}
		uk := recycleKey(i)
		if absent {
			uk = append(uk, 'x')
		}
		v, kind, _, found, held, err := readers[i%tables].GetSeqHeld(uk, kv.MaxSeq, FilterUse(rng.IntN(3)), nil)
		defer held.Release()
		switch {
		case err != nil:
			return err
		case found != !absent || absent && held.b != nil:
			return fmt.Errorf("Get(%q): found %v, held %v", uk, found, held.b != nil)
		case found && kind != kv.KindSet:
			return fmt.Errorf("Get(%q): kind %v", uk, kind)
		case found:
			return checkRecycled(kv.MakeInternalKey(uk, 1, kv.KindSet), v)
		}
		return nil
	}
	worker(1, heldGet)
	worker(2, heldGet)

	type keptValue struct{ ikey, value []byte }
	var kept [16]keptValue
	n := 0
	worker(3, func(rng *rand.Rand) error {
		i := rng.IntN(nkeys)
		v, _, _, found, err := readers[i%tables].GetSeq(recycleKey(i), kv.MaxSeq, true, nil)
		if err != nil || !found {
			return fmt.Errorf("GetSeq(%q): %v %v", recycleKey(i), found, err)
		}
		kept[n%len(kept)] = keptValue{kv.MakeInternalKey(recycleKey(i), 1, kv.KindSet), v}
		n++
		for _, k := range kept[:min(n, len(kept))] {
			if err := checkRecycled(k.ikey, k.value); err != nil {
				return fmt.Errorf("a kept value changed: %v", err)
			}
		}
		return nil
	})

	iterate := func(rng *rand.Rand) error {
		r := readers[rng.IntN(tables)]
		it := r.NewIter(rng.IntN(2) == 0)
		defer it.Close()
		ok := it.SeekGE(kv.MakeSearchKey(recycleKey(rng.IntN(nkeys)), kv.MaxSeq))
		var prevKey, prevValue []byte
		for step := 0; ok && step < 20; step++ {
			if err := checkRecycled(it.Key(), it.Value()); err != nil {
				return fmt.Errorf("iterator: %v", err)
			}
			if prevKey != nil {
				if err := checkRecycled(prevKey, prevValue); err != nil {
					return fmt.Errorf("iterator, previous entry after a step: %v", err)
				}
			}
			prevKey, prevValue = append(prevKey[:0], it.Key()...), it.Value()
			ok = it.Next()
		}
		return it.Error()
	}
	worker(4, iterate)

	var evictor sync.WaitGroup
	evictor.Add(1)
	go func() { // evict whole files now and then, until the readers are done
		defer evictor.Done()
		rng := rand.New(rand.NewPCG(5, 11))
		for {
			for range 200 { // let the readers refill the cache
				select {
				case <-done:
					return
				default:
					runtime.Gosched()
				}
			}
			cache.EvictFile(uint64(1 + rng.IntN(tables)))
		}
	}()
	wg.Wait()
	close(done)
	evictor.Wait()
	if got := recycledBuffers.Load() - n0; got < int64(iters)/10 {
		t.Fatalf("only %d buffers recycled in %d Gets each by two goroutines: the test did not exercise recycling", got, iters)
	}
	t.Logf("%d buffers recycled; cache hits %d, misses %d", recycledBuffers.Load()-n0, cache.Hits(), cache.Misses())
}
