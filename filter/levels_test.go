package filter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bruteForceBits searches a grid of step bits per key over every run but
// the last for the allocation with the least SumModelFPR that spends at
// most budget; the last run gets what is left (up to maxBits), since more
// bits never raise a rate.
func bruteForceBits(keys, probed []float64, budget, maxBits, step float64) (best float64, bestBits []float64) {
	best = math.Inf(1)
	cur := make([]float64, len(keys))
	var rec func(i int, spent float64)
	rec = func(i int, spent float64) {
		if i == len(keys)-1 {
			cur[i] = min(maxBits, max(0, budget-spent)/keys[i])
			if s := SumModelFPRProbed(keys, probed, cur); s < best {
				best, bestBits = s, append([]float64(nil), cur...)
			}
			return
		}
		for b := 0.0; b <= maxBits+1e-9 && spent+keys[i]*b <= budget*(1+1e-12); b += step {
			cur[i] = b
			rec(i+1, spent+keys[i]*b)
		}
		cur[i] = 0
	}
	rec(0, 0)
	return best, bestBits
}

func spent(keys, bits []float64) float64 {
	var s float64
	for i := range keys {
		s += keys[i] * bits[i]
	}
	return s
}

// TestAllocateBitsAgainstBruteForce: on random trees of 2 and 3 runs the
// allocation spends exactly the uniform memory and its model rate is at
// most the best a 0.05-bit grid search finds (and at most uniform's).
func TestAllocateBitsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for trial := range 40 {
		runs := 2 + trial%2
		keys := make([]float64, runs)
		for i := range keys {
			keys[i] = math.Round(math.Pow(10, 1+4*rng.Float64()))
		}
		avg := []float64{2, 5, 10}[trial%3]
		maxBits := 24.0
		bits := AllocateBits(keys, avg, maxBits)
		var n float64
		for _, k := range keys {
			n += k
		}
		if got := spent(keys, bits); math.Abs(got-avg*n) > 1e-6*avg*n {
			t.Fatalf("keys %v avg %v: spends %v bits, want %v", keys, avg, got, avg*n)
		}
		for _, b := range bits {
			if b < 0 || b > maxBits {
				t.Fatalf("keys %v: bits %v outside [0, %v]", keys, bits, maxBits)
			}
		}
		got := SumModelFPR(keys, bits)
		brute, bruteBits := bruteForceBits(keys, nil, avg*n, maxBits, 0.05)
		uniform := float64(runs) * ModelFPR(avg)
		if got > brute*(1+1e-9) || got > uniform*(1+1e-9) {
			t.Errorf("keys %v avg %v: allocation %v sums %.6g; grid search %v sums %.6g; uniform %.6g",
				keys, avg, bits, got, bruteBits, brute, uniform)
		}
		// The grid is coarse: the optimum may beat it, but not by much.
		if got < brute*0.9 {
			t.Errorf("keys %v avg %v: %.6g far below the grid's %.6g: the grid search is wrong", keys, avg, got, brute)
		}
	}
}

// TestAllocateBitsShape checks the closed form where no clamp applies:
// rates proportional to run sizes, 4.8 bits less per tenfold size, equal
// runs getting the average, and empty runs nothing.
func TestAllocateBitsShape(t *testing.T) {
	keys := []float64{1e3, 1e4, 1e5, 0}
	bits := AllocateBits(keys, 10, 64)
	for i := 0; i+1 < 3; i++ {
		if d := bits[i] - bits[i+1]; math.Abs(d-math.Ln10/ln2Sq) > 1e-6 {
			t.Errorf("bits %v: step %v, want ln 10/ln²2 = %v", bits, d, math.Ln10/ln2Sq)
		}
		if r := ModelFPR(bits[i+1]) / ModelFPR(bits[i]); math.Abs(r-10) > 1e-6 {
			t.Errorf("rates not proportional to sizes: ratio %v", r)
		}
	}
	if bits[3] != 0 {
		t.Errorf("empty run got %v bits", bits[3])
	}
	for _, b := range AllocateBits([]float64{500, 500, 500}, 7.5, 64) {
		if math.Abs(b-7.5) > 1e-9 {
			t.Errorf("equal runs: %v, want 7.5 each", b)
		}
	}
	// At 1 bit per key on runs of 1000, 1000, 1000 and 3000 keys the
	// largest is best left without a filter: ln 3000 exceeds the
	// key-weighted mean of ln n by 0.55, more than 1 bit's ln²2 = 0.48.
	small := []float64{1000, 1000, 1000, 3000}
	bits = AllocateBits(small, 1, 64)
	if bits[3] != 0 || math.Abs(spent(small, bits)-6000) > 1e-6 {
		t.Errorf("1 bit/key on %v: %v", small, bits)
	}
	for _, c := range []struct{ avg, max float64 }{{0, 10}, {-1, 10}, {math.NaN(), 10}, {5, 0}} {
		for _, b := range AllocateBits(keys, c.avg, c.max) {
			if b != 0 {
				t.Errorf("avg %v max %v: %v", c.avg, c.max, b)
			}
		}
	}
	t.Log(fmt.Sprint(AllocateBits([]float64{1e4, 1e5, 1e6, 1e7}, 5, 64)))
}

// TestAllocateBitsProbedAgainstBruteForce: with runs probed by a fraction
// of absent keys each (levels covering part of the key space), the
// weighted allocation spends exactly the budget, its weighted model rate
// is at most a grid search's, and it never loses to the unweighted
// allocation on the weighted objective.
func TestAllocateBitsProbedAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for trial := range 40 {
		runs := 2 + trial%2
		keys := make([]float64, runs)
		probed := make([]float64, runs)
		for i := range keys {
			keys[i] = math.Round(math.Pow(10, 1+4*rng.Float64()))
			probed[i] = 0.05 + 0.95*rng.Float64()
		}
		avg := []float64{2, 5, 10}[trial%3]
		maxBits := 24.0
		bits := AllocateBitsProbed(keys, probed, avg, maxBits)
		var n float64
		for _, k := range keys {
			n += k
		}
		if got := spent(keys, bits); math.Abs(got-avg*n) > 1e-6*avg*n {
			t.Fatalf("keys %v probed %v avg %v: spends %v bits, want %v", keys, probed, avg, got, avg*n)
		}
		got := SumModelFPRProbed(keys, probed, bits)
		brute, bruteBits := bruteForceBits(keys, probed, avg*n, maxBits, 0.05)
		unweighted := SumModelFPRProbed(keys, probed, AllocateBits(keys, avg, maxBits))
		if got > brute*(1+1e-9) || got > unweighted*(1+1e-9) {
			t.Errorf("keys %v probed %v avg %v: allocation %v sums %.6g; grid %v sums %.6g; unweighted %.6g",
				keys, probed, avg, bits, got, bruteBits, brute, unweighted)
		}
		if got < brute*0.9 {
			t.Errorf("keys %v probed %v: %.6g far below the grid's %.6g: the grid search is wrong", keys, probed, got, brute)
		}
	}
}

// TestAllocateBitsProbedShape: halving a run's probes costs it ln 2/ln²2
// bits per key against an equal run; a run nobody probes gets none and
// leaves its share to the others; probed nil is AllocateBits.
func TestAllocateBitsProbedShape(t *testing.T) {
	bits := AllocateBitsProbed([]float64{1e4, 1e4}, []float64{1, 0.5}, 10, 64)
	if d := bits[0] - bits[1]; math.Abs(d-math.Ln2/ln2Sq) > 1e-6 {
		t.Errorf("bits %v: step %v, want ln 2/ln²2 = %v", bits, d, math.Ln2/ln2Sq)
	}
	bits = AllocateBitsProbed([]float64{1e4, 1e4}, []float64{1, 0}, 10, 64)
	if bits[1] != 0 || math.Abs(bits[0]-20) > 1e-6 {
		t.Errorf("unprobed run: %v, want [20 0]", bits)
	}
	keys := []float64{1e3, 1e4, 1e5}
	a, b := AllocateBits(keys, 5, 32), AllocateBitsProbed(keys, []float64{1, 1, 1}, 5, 32)
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			t.Errorf("probed all 1: %v, AllocateBits %v", b, a)
		}
	}
}
