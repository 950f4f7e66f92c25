package treefilter

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// TestFits pins the size rule's bounds: an update may take a filter up to
// MaxLoad and down to ShrinkLoad (a small filter never shrinks).
func TestFits(t *testing.T) {
	const c = 100_000
	for _, tc := range []struct {
		entries, capacity int
		want              bool
	}{
		{c * 95 / 100, c, true},
		{c*95/100 + 1, c, false},
		{c / 2, c, true},
		{c/2 - 1, c, false},
		{0, shrinkMinSlots - 1, true},
		{0, shrinkMinSlots, false},
	} {
		if got := Fits(tc.entries, tc.capacity); got != tc.want {
			t.Errorf("Fits(%d, %d) = %v, want %v", tc.entries, tc.capacity, got, tc.want)
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
