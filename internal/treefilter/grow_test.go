package treefilter

import (
	"fmt"
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
	big := fill(New(80_000, GrowLoad, code), 80_000) // 100,000 slots
	if big.Capacity() != 100_000 {
		t.Fatalf("%d slots, want 100,000", big.Capacity())
	}
	over := fill(New(160_000, GrowLoad, code), 80_000) // sized from an estimate twice too high
	small := fill(New(100, GrowLoad, code), 100)
	for _, tc := range []struct {
		f       *Filter
		entries int
		want    bool
	}{
		{big, 95_000, true},
		{big, 95_001, false},
		{big, 50_000, true},
		{big, 49_999, false},
		{over, 80_000, true}, // load 0.40, but as built: no rebuild after rebuild
		{over, 49_999, false},
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
