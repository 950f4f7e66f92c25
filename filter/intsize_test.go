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

// TestSizeLimitsHoldAfterRounding: sizes are rounded up to whole 64-bit
// words, and the limit must hold for the rounded size. On 32-bit platforms
// maxBloomBits (2^31-1) is not a multiple of 64, and EstimateParameters
// (223860495, 0.01) gave m = 2^31, NewBloomWithShape(2^31-1, 1) a filter
// whose own encoding failed to decode (issue 35). CI runs this with
// GOARCH=386.
func TestSizeLimitsHoldAfterRounding(t *testing.T) {
	ok := func(what string, m uint64) {
		t.Helper()
		if m%64 != 0 || m > maxBloomBits {
			t.Fatalf("%s: m = %d, not a multiple of 64 up to %d", what, m, uint64(maxBloomBits))
		}
	}
	if m, _ := EstimateParameters(223860495, 0.01); m != 0 {
		ok("EstimateParameters(223860495, 0.01)", m)
	}
	// The n whose size lands just around the limit, at a few rates.
	for _, p := range []float64{0.1, 0.01, 0.001} {
		perKey := math.Inf(1)
		for k := 1; k <= MaxProbes; k++ {
			perKey = min(perKey, bitsPerKeyWithProbes(p, k))
		}
		n0 := int(float64(maxBloomBits) / perKey)
		for n := n0 - 300; n <= n0+300; n++ {
			if m, _ := EstimateParameters(n, p); m != 0 {
				ok("EstimateParameters", m)
			}
		}
	}
	for d := uint64(0); d < 130; d++ {
		if m, err := checkShape("bloom", uint64(maxBloomBits)-d, 1); err == nil {
			ok("checkShape", m)
		}
	}
	if maxBloomBits%64 != 0 { // 32-bit: no allocation unless the bug is back
		b, err := NewBloomWithShape(uint64(maxBloomBits), 1)
		if err == nil {
			ok("NewBloomWithShape(maxBloomBits, 1)", b.Bits())
			if err := new(Bloom).UnmarshalBinary(mustMarshal(t, b)); err != nil {
				t.Fatalf("NewBloomWithShape(maxBloomBits, 1): its encoding: %v", err)
			}
		}
	}
}
