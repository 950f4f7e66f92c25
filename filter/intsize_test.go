package filter

import (
	"math"
	"testing"
)

// These pin sizes and counts that overflowed an int on 32-bit platforms;
// CI runs the package with GOARCH=386 as well.

func TestNumProbesClampsHugeAndTinyInputs(t *testing.T) {
	for _, c := range []struct {
		bitsPerKey float64
		want       int
	}{{1e12, MaxProbes}, {math.MaxInt, MaxProbes}, {1e300, MaxProbes}, {-1e12, 1}, {0, 1}, {10, 7}} {
		if got := NumProbes(c.bitsPerKey); got != c.want {
			t.Errorf("NumProbes(%v) = %d, want %d", c.bitsPerKey, got, c.want)
		}
	}
}

func TestEstimateCountOfLargestNearlyFullFilter(t *testing.T) {
	m := uint64(maxBloomBits) &^ 63
	if n := estimateCount(m-1, m, 1); n <= 0 {
		t.Fatalf("estimateCount(m-1, m=%d, 1) = %d, want a large positive count", m, n)
	}
	if n := estimateCount(m, m, 1); n != math.MaxInt {
		t.Fatalf("estimateCount of a full filter = %d, want math.MaxInt", n)
	}
}

func TestMaxBloomBitsFitsAnInt(t *testing.T) {
	// Every size and count the decoders accept converts to int unchanged,
	// and a counting filter's array (m/2 bytes) stays allocatable.
	if uint64(maxBloomBits) > math.MaxInt {
		t.Fatalf("maxBloomBits %d exceeds math.MaxInt", uint64(maxBloomBits))
	}
	if _, err := NewCounting(math.MaxInt, 1e-9); err == nil {
		t.Fatal("NewCounting(MaxInt, 1e-9) succeeded")
	}
}
