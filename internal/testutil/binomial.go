package testutil

import "math"

// BinomialBounds returns the range [lo, hi] that the number of successes
// of n independent trials of probability p falls outside with probability
// at most alpha (alpha/2 on each side), from the Chernoff bounds on
// X ~ Binomial(n, p) with mean mu = n p:
//
//	P(X >= (1+d) mu) <= exp(-d^2 mu / (2+d))
//	P(X <= (1-d) mu) <= exp(-d^2 mu / 2)
//
// Setting each right-hand side to alpha/2 and solving for d gives the
// bounds. They hold for every n and p, small or large (a normal
// approximation does not at a few expected successes), and are a little
// wider than the exact binomial quantiles. A false-positive test that
// checks a measured count against them fails a correct filter with
// probability at most alpha, and a filter whose true rate is off by more
// than about twice the width almost always.
func BinomialBounds(n int, p, alpha float64) (lo, hi float64) {
	mu := float64(n) * p
	if mu == 0 {
		return 0, 0
	}
	l := math.Log(2 / alpha)
	up := (l + math.Sqrt(l*l+8*mu*l)) / (2 * mu)
	down := math.Sqrt(2 * l / mu)
	return max(0, mu*(1-down)), mu * (1 + up)
}

// FPRAlpha is the chance a statistical test of the repository fails a
// correct filter: one in a million runs.
const FPRAlpha = 1e-6
