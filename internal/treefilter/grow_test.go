package treefilter

import (
	"fmt"
	"math"
	"testing"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// TestFits pins the size rule's bounds: an update may take a filter up to
// MaxLoad of its slots and down to ShrinkLoad/GrowLoad of the entries it
// was built with, whatever its load then (a small filter never shrinks).
func TestFits(t *testing.T) {
	seed := uint64(1)
	fill := func(f *Filter, n int) *Filter {
		for i := range n {
			if !f.Insert(Hash(fmt.Appendf(nil, "k%d", i)), 1, &seed) {
				t.Fatal("insert failed")
			}
		}
		f.MarkBuilt()
		return f
	}
	code := ChooseCode([manifest.NumLevels]float64{0, 1})
	big := fill(New(100_000, 1, code), 80_000) // 100,000 slots
	if big.Capacity() != 100_000 {
		t.Fatalf("%d slots, want 100,000", big.Capacity())
	}
	over := fill(New(200_000, 1, code), 80_000) // sized from an estimate twice too high
	small := fill(New(100, GrowLoad, code), 100)
	maxEntries := int(MaxLoad * 100_000)                         // 92,000
	minEntries := int(math.Ceil(ShrinkLoad / GrowLoad * 80_000)) // 51,949
	for _, tc := range []struct {
		f       *Filter
		entries int
		want    bool
	}{
		{big, maxEntries, true},
		{big, maxEntries + 1, false},
		{big, minEntries, true},
		{big, minEntries - 1, false},
		{over, 80_000, true}, // load 0.40, but as built: no rebuild after rebuild
		{over, minEntries - 1, false},
		{small, 0, true},
	} {
		if got := tc.f.Fits(tc.entries); got != tc.want {
			t.Errorf("Fits(%d) of %d slots built with %d = %v, want %v", tc.entries, tc.f.Capacity(), tc.f.built, got, tc.want)
		}
	}
}

// TestGrowthBuildReachesMaxLoad: a filter built for n entries at GrowLoad
// takes insertions up to MaxLoad without a failure (a failure would cost
// an early build from every table), with the level code of a deep tree.
func TestGrowthBuildReachesMaxLoad(t *testing.T) {
	const n = 200_000
	f := New(n, GrowLoad, ChooseCode([manifest.NumLevels]float64{0, 6, 22, 72}))
	seed := uint64(0x2545f4914f6cdd1d)
	for i := 0; float64(f.Entries()+1) <= MaxLoad*float64(f.Capacity()); i++ {
		level := 3
		switch {
		case i%100 < 6:
			level = 1
		case i%100 < 28:
			level = 2
		}
		if !f.Insert(Hash(fmt.Appendf(nil, "key%08d", i)), level, &seed) {
			t.Fatalf("insertion %d failed at load %.4f (MaxLoad %.2f)", i, float64(f.Entries())/float64(f.Capacity()), MaxLoad)
		}
	}
	if got := float64(f.Entries()) / float64(n); got < MaxLoad/GrowLoad-0.01 {
		t.Fatalf("room for %.3fx the entries built for, want %.3fx", got, MaxLoad/GrowLoad)
	}
}

// BenchmarkUpdates: what an update step costs at the loads a filter is
// held between (4M slots, 8 MiB, beyond the CPU caches). "a-b": a growth
// cycle, the filter filled from load a to b, each insertion beside a
// removal and a re-insertion (a compaction's churn); "a": churn at load
// a (a removal and an insertion). ns/step is per insertion of the cycle
// or per churn pair.
func BenchmarkUpdates(b *testing.B) {
	for _, c := range [][2]float64{{0.55, 0.95}, {0.80, 0.95}, {GrowLoad, MaxLoad}, {OpenLoad, OpenLoad}, {0.92, 0.92}, {0.95, 0.95}} {
		name := fmt.Sprintf("%.2f-%.2f", c[0], c[1])
		if c[0] == c[1] {
			name = fmt.Sprintf("%.2f", c[0])
		}
		b.Run(name, func(b *testing.B) {
			const slotsN = 4 << 20
			h := func(i int) uint64 { x := uint64(i+1) * 0x9e3779b97f4a7c15; return x ^ x>>29 }
			lo, hi := int(c[0]*slotsN), int(c[1]*slotsN)
			churn := hi == lo
			if churn {
				hi = lo + slotsN/50
			}
			for range b.N {
				b.StopTimer()
				f := New(slotsN, 1, ChooseCode([manifest.NumLevels]float64{0, 6, 22, 72}))
				seed := uint64(1)
				for i := range lo {
					if !f.Insert(h(i), 3, &seed) {
						b.Fatal("fill")
					}
				}
				b.StartTimer()
				for i := lo; i < hi; i++ {
					ok := churn && f.Remove(h(i-lo), 3) && f.Insert(h(i), 3, &seed) ||
						!churn && f.Insert(h(i), 3, &seed) && f.Remove(h(i-lo), 3) && f.Insert(h(i-lo), 3, &seed)
					if !ok {
						b.Fatal("update failed")
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(hi-lo)), "ns/step")
		})
	}
}
