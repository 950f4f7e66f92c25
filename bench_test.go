package bloomkv

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/cputime"
)

// benchKey writes the 16-byte key of index i into k (big-endian index,
// scrambled so that sequential indexes are not sequential keys).
func benchKey(k []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(k[:8], i*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(k[8:], i)
	return k
}

// loadBenchDB fills a database of n keys in a settled tree.
func loadBenchDB(b *testing.B, n int, opts *Options) *DB {
	b.Helper()
	invariantChecks = false // they re-read every table after each flush
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	k := make([]byte, 16)
	v := make([]byte, 100)
	for i := 0; i < n; i++ {
		if err := db.Put(benchKey(k, uint64(2*i)), v); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.WaitForCompactions(); err != nil {
		b.Fatal(err)
	}
	return db
}

const benchKeys = 200_000

func benchmarkGet(b *testing.B, hit bool, opts *Options) {
	db := loadBenchDB(b, benchKeys, opts)
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	k := make([]byte, 16)
	before := db.Metrics()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		idx := 2 * rng.Uint64N(benchKeys)
		if !hit {
			idx++ // odd indexes were never written
		}
		_, err := db.Get(benchKey(k, idx))
		if hit && err != nil || !hit && err != ErrNotFound {
			b.Fatalf("Get: %v", err)
		}
	}
	b.StopTimer()
	if cpu := cputime.Process() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	d := db.Metrics().Sub(before)
	b.ReportMetric(float64(d.DataBlockReads)/float64(b.N), "blocks/op")
	b.ReportMetric(float64(d.TablesProbed)/float64(b.N), "tables/op")
}

func BenchmarkGetHit(b *testing.B) { benchmarkGet(b, true, nil) }

// BenchmarkGetHitPread is BenchmarkGetHit reading blocks with pread
// instead of copying them out of memory-mapped tables.
func BenchmarkGetHitPread(b *testing.B) { benchmarkGet(b, true, &Options{DisableMmap: true}) }
func BenchmarkGetMiss(b *testing.B)     { benchmarkGet(b, false, nil) }
func BenchmarkGetMissNoFilter(b *testing.B) {
	benchmarkGet(b, false, &Options{IgnoreFilters: true})
}

func BenchmarkPut(b *testing.B) { benchmarkPut(b, nil) }

// BenchmarkPutWriteCalls is BenchmarkPut handing each write to the log with
// a write call instead of copying it into the memory-mapped log.
func BenchmarkPutWriteCalls(b *testing.B) { benchmarkPut(b, &Options{DisableMmap: true}) }

// BenchmarkPutBuffered is BenchmarkPut in WALBuffered mode (the mode
// bench/compare sets against Pebble's NoSync).
func BenchmarkPutBuffered(b *testing.B) { benchmarkPut(b, &Options{WALMode: WALBuffered}) }

// BenchmarkPutSeq writes keys in ascending order (fillseq), write-through.
func BenchmarkPutSeq(b *testing.B) {
	invariantChecks = false
	db, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	k := make([]byte, 16)
	v := make([]byte, 100)
	b.ReportAllocs()
	b.SetBytes(116)
	b.ResetTimer()
	cpu := startCPU()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(k[:8], uint64(i))
		if err := db.Put(k, v); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// BenchmarkPutNoWAL and BenchmarkPutNoWALMemtableFilter isolate the
// memtable side of a write (no log): side by side they show what a
// memtable filter (Options.MemtableFilterRatio 0.02) costs each write.
func BenchmarkPutNoWAL(b *testing.B) { benchmarkPut(b, &Options{WALMode: WALDisabled}) }
func BenchmarkPutNoWALMemtableFilter(b *testing.B) {
	benchmarkPut(b, &Options{WALMode: WALDisabled, MemtableFilterRatio: 0.02})
}

func benchmarkPut(b *testing.B, opts *Options) {
	invariantChecks = false
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	k := make([]byte, 16)
	v := make([]byte, 100)
	b.ReportAllocs()
	b.SetBytes(116)
	b.ResetTimer()
	cpu := startCPU()
	for i := 0; i < b.N; i++ {
		if err := db.Put(benchKey(k, uint64(i)), v); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// BenchmarkFillRandomWriteAmp reports the write amplification of a
// random-insert workload on a settled tree.
func BenchmarkFillRandomWriteAmp(b *testing.B) {
	invariantChecks = false
	for i := 0; i < b.N; i++ {
		db, err := Open(b.TempDir(), &Options{MemtableSize: 1 << 20, LBaseMaxBytes: 4 << 20, TargetFileSize: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		k := make([]byte, 16)
		v := make([]byte, 100)
		for j := 0; j < 200_000; j++ {
			if err := db.Put(benchKey(k, rng.Uint64N(1<<40)), v); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.WaitForCompactions(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(db.Metrics().WriteAmplification(), "write-amp")
		db.Close()
	}
}

// BenchmarkGetHitCached reads from a block cache that holds the whole data
// set: the Get path should allocate only the returned copy.
func BenchmarkGetHitCached(b *testing.B) {
	benchmarkGet(b, true, &Options{BlockCacheSize: 256 << 20})
}

// benchmarkGetParallel reads with b.RunParallel: run with -cpu 1,2 to see
// whether readers scale. Besides ns/op it reports cpu-ns/op, the process's
// CPU time per Get: on a machine shared with other work, wall time per op
// at -cpu 2 depends on how much of the second core the others leave, while
// CPU time per op shows what two readers cost each other (the same at
// -cpu 1 and 2 when they share nothing).
func benchmarkGetParallel(b *testing.B, hit bool, opts *Options) {
	db := loadBenchDB(b, benchKeys, opts)
	defer db.Close()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	defer func() {
		if cpu := cputime.Process() - cpu0; cpu > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}()
	var seed atomicCounter
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.next(), 2))
		k := make([]byte, 16)
		for pb.Next() {
			idx := 2 * rng.Uint64N(benchKeys)
			if !hit {
				idx++
			}
			if _, err := db.Get(benchKey(k, idx)); hit && err != nil || !hit && err != ErrNotFound {
				b.Errorf("Get: %v", err)
				return
			}
		}
	})
}

type atomicCounter struct{ n atomic.Uint64 }

func (c *atomicCounter) next() uint64 { return c.n.Add(1) }

func BenchmarkGetMissParallel(b *testing.B) { benchmarkGetParallel(b, false, nil) }

// BenchmarkGetHitParallel reads present keys with the default 8 MiB block
// cache, which holds about a third of the tree: most Gets read and decode
// a block, as in bench/compare's readrandom.
func BenchmarkGetHitParallel(b *testing.B) { benchmarkGetParallel(b, true, nil) }
func BenchmarkGetHitCachedParallel(b *testing.B) {
	benchmarkGetParallel(b, true, &Options{BlockCacheSize: 256 << 20})
}

// benchmarkMemtableMiss reads absent keys while 200k keys sit in the
// memtable (never flushed): what a memtable filter saves.
func benchmarkMemtableMiss(b *testing.B, ratio float64) {
	invariantChecks = false
	db, err := Open(b.TempDir(), &Options{MemtableSize: 256 << 20, MemtableFilterRatio: ratio, WALMode: WALDisabled})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	k := make([]byte, 16)
	v := make([]byte, 100)
	for i := 0; i < benchKeys; i++ {
		if err := db.Put(benchKey(k, uint64(2*i)), v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var seed atomicCounter
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.next(), 3))
		k := make([]byte, 16)
		for pb.Next() {
			if _, err := db.Get(benchKey(k, 2*rng.Uint64N(benchKeys)+1)); err != ErrNotFound {
				b.Errorf("Get: %v", err)
				return
			}
		}
	})
}

func BenchmarkGetMissMemtable(b *testing.B)         { benchmarkMemtableMiss(b, 0) }
func BenchmarkGetMissMemtableFiltered(b *testing.B) { benchmarkMemtableMiss(b, 0.02) }
