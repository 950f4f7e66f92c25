package testutil

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBinomialBoundsCover draws binomial samples and checks that they fall
// outside the bounds no more often than alpha allows (with alpha = 5% so
// that a wrong formula shows in a few thousand draws), and that the bounds
// are not absurdly wide: a sample whose rate is off by 30% at mu = 4000
// lies outside them.
func TestBinomialBoundsCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n int
		p float64
	}{{1000, 0.01}, {20000, 1.0 / 256}, {5000, 0.2}} {
		lo, hi := BinomialBounds(c.n, c.p, 0.05)
		out := 0
		const draws = 2000
		for range draws {
			x := 0
			for range c.n {
				if rng.Float64() < c.p {
					x++
				}
			}
			if float64(x) < lo || float64(x) > hi {
				out++
			}
		}
		// Chernoff bounds are conservative: well under 5% fall outside.
		if out > draws*5/100 {
			t.Errorf("n=%d p=%v: %d of %d draws outside [%.1f, %.1f]", c.n, c.p, out, draws, lo, hi)
		}
		t.Logf("n=%d p=%v: [%.1f, %.1f] around %.1f, %d of %d outside", c.n, c.p, lo, hi, float64(c.n)*c.p, out, draws)
	}
	lo, hi := BinomialBounds(1_000_000, 0.004, FPRAlpha)
	if mu := 4000.0; lo < 0.85*mu || hi > 1.15*mu || lo >= mu || hi <= mu {
		t.Errorf("mu=4000, alpha=1e-6: bounds [%.0f, %.0f] too wide or not around mu", lo, hi)
	}
	if lo, hi := BinomialBounds(10, 0, 0.01); lo != 0 || hi != 0 || math.IsNaN(lo) {
		t.Errorf("p=0: [%v, %v]", lo, hi)
	}
}
