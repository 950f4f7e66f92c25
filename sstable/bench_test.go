package sstable

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// benchTable is a 100k-entry snappy table with 10 bits/key filters, read
// through a cache large enough to hold it.
func benchTable(b *testing.B) (*Reader, []refEntry) {
	b.Helper()
	es := seqEntries(100_000)
	data, _ := buildTable(b, es, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	r := mustOpenBytes(b, data, ReaderOptions{Cache: NewBlockCache(64 << 20)})
	for _, e := range es { // warm the cache
		if _, _, found, err := r.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil); !found || err != nil {
			b.Fatal(found, err)
		}
	}
	return r, es
}

func absentKeys(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = absentKey(i)
	}
	return out
}

func BenchmarkGetHitCached(b *testing.B) {
	r, es := benchTable(b)
	var st ReadStats
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		e := es[rng.IntN(len(es))]
		if _, _, found, _ := r.Get(kv.UserKey(e.key), kv.MaxSeq, true, &st); !found {
			b.Fatal("not found")
		}
	}
}

func BenchmarkGetMissFiltered(b *testing.B) {
	r, es := benchTable(b)
	var st ReadStats
	absent := absentKeys(len(es))
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, found, _ := r.Get(absent[rng.IntN(len(es))], kv.MaxSeq, true, &st); found {
			b.Fatal("found")
		}
	}
	b.ReportMetric(float64(st.DataBlockReads.Load())/float64(b.N), "blocks/op")
}

func BenchmarkGetMissUnfiltered(b *testing.B) {
	r, es := benchTable(b)
	absent := absentKeys(len(es))
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, found, _ := r.Get(absent[rng.IntN(len(es))], kv.MaxSeq, false, nil); found {
			b.Fatal("found")
		}
	}
}

// BenchmarkGetHitUncached reads every block from the (in-memory) file:
// checksum, snappy decode and block validation on each Get.
func BenchmarkGetHitUncached(b *testing.B) {
	es := seqEntries(100_000)
	data, _ := buildTable(b, es, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	r := mustOpenBytes(b, data, ReaderOptions{})
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		e := es[rng.IntN(len(es))]
		if _, _, found, _ := r.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil); !found {
			b.Fatal("not found")
		}
	}
}

func BenchmarkIterate(b *testing.B) {
	for _, fill := range []bool{true, false} {
		name := "cached"
		if !fill {
			name = "uncached"
		}
		b.Run(name, func(b *testing.B) {
			r, es := benchTable(b)
			if !fill {
				r.cache = nil
			}
			b.ReportAllocs()
			b.SetBytes(int64(r.props.RawKeyBytes + r.props.RawValueBytes))
			for b.Loop() {
				it := r.NewIter(fill)
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if n != len(es) {
					b.Fatal(n)
				}
				it.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(es)), "ns/entry")
		})
	}
}

func BenchmarkSeekGE(b *testing.B) {
	r, es := benchTable(b)
	it := r.NewIter(true)
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		if !it.SeekGE(es[rng.IntN(len(es))].key) {
			b.Fatal("seek failed")
		}
	}
}

// BenchmarkTableCacheHit is a Find that hits the table cache and its
// release: from one goroutine on one table, and from every goroutine over
// eight tables, all cached.
func BenchmarkTableCacheHit(b *testing.B) {
	dir := b.TempDir()
	const nTables = 8
	sizes, _ := writeTables(b, dir, nTables)
	tc := NewTableCache(vfs.Default, dir, 2*nTables, ReaderOptions{})
	defer tc.Close()
	find := func(i int) {
		_, release, err := tc.Find(Identity{FileNum: uint64(i + 1), Size: sizes[i]})
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
	for i := range nTables {
		find(i)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			find(0)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1))
			for pb.Next() {
				find(i % nTables)
				i++
			}
		})
	})
}

func BenchmarkWriter(b *testing.B) {
	es := seqEntries(100_000)
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(es) * (len(es[0].key) + len(es[0].value))))
			for b.Loop() {
				w := NewWriter(&memFile{data: make([]byte, 0, 4<<20)}, WriterOptions{Compression: c, BloomBitsPerKey: 10})
				for _, e := range es {
					if err := w.Add(e.key, e.value); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeBlock(b *testing.B) {
	es := seqEntries(4000)
	raw := buildBlock(es[:100], 16)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := decodeBlock(raw, testLoc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGetCacheHitAllocatesNothing pins the zero-allocation promise.
func TestGetCacheHitAllocatesNothing(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage and race instrumentation allocate (and -race makes sync.Pool drop items)")
	}
	es := seqEntries(2000)
	data, _ := buildTable(t, es, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	r := mustOpenBytes(t, data, ReaderOptions{Cache: NewBlockCache(1 << 20)})
	var st ReadStats
	absent := absentKeys(len(es))
	i := 0
	get := func() {
		e := es[i%len(es)]
		i++
		r.Get(kv.UserKey(e.key), kv.MaxSeq, true, &st)
		r.Get(absent[i%len(es)], kv.MaxSeq, true, &st)
	}
	for range len(es) { // warm the cache
		get()
	}
	if n := testing.AllocsPerRun(1000, get); n != 0 {
		t.Fatalf("cached Get allocates %.1f times", n)
	}
}
