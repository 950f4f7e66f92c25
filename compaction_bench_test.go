package bloomkv

import (
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/internal/cputime"
)

// BenchmarkCompactRandom measures the compaction work alone: a tree of
// level-0 tables of random keys (automatic compactions off) is compacted
// into one sorted run by Compact(nil, nil). It reports the CPU time per
// key, reads and writes of tables together, so that a change of the
// compaction path can be judged on a shared machine ("cpu-ns/key").
//
//	go test -run '^$' -bench CompactRandom -count 6 .
func BenchmarkCompactRandom(b *testing.B) {
	invariantChecks = false
	const keys = 200_000
	k := make([]byte, 16)
	v := make([]byte, 100)
	var cpuNanos float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db, err := Open(b.TempDir(), &Options{MemtableSize: 1 << 20, DisableAutomaticCompactions: true})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		for j := 0; j < keys; j++ {
			// Half of each value repeats the other half, so that blocks
			// compress as bench/compare's do.
			for n := 0; n < 50; n += 8 {
				x := rng.Uint64()
				for m := 0; m < 8 && n+m < 50; m++ {
					v[n+m] = byte(x >> (8 * m))
				}
			}
			copy(v[50:], v[:50])
			if err := db.Put(benchKey(k, rng.Uint64N(1<<40)), v); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu := cputime.Process()
		if err := db.Compact(nil, nil); err != nil {
			b.Fatal(err)
		}
		cpuNanos += float64(cputime.Process() - cpu)
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(cpuNanos/float64(b.N)/keys, "cpu-ns/key")
}
