package filter

import "math"

// Per-level bits (Monkey: Dayan, Athanassoulis and Idreos, SIGMOD 2017).
//
// An absent key's Get probes one filter per sorted run it might be in: each
// level-0 table, and one table in each deeper level. Each probe that
// passes is a wasted data-block read, so the expected waste per absent Get
// is the sum of the runs' false-positive rates. Spending the same filter
// memory unevenly cuts that sum: a run with few keys buys a low rate
// cheaply. With a bloom filter's rate modelled as
//
//	p(b) = e^(-b ln²2)                  (b bits per key, the best real k)
//
// minimising sum_i p(b_i) over runs of n_i keys subject to
// sum_i n_i b_i = B (the memory of B/N bits per key everywhere, N keys in
// all) and 0 <= b_i <= max gives, by a Lagrange multiplier,
//
//	p(b_i) = n_i / c,  that is  b_i = (ln c - ln n_i) / ln²2,
//
// clamped to [0, max]: the rate of each run is proportional to its size.
// c is the one value at which the clamped b_i spend exactly B; the spend
// grows with c, so bisection finds it. Runs ten times larger than their
// neighbour get ln 10 / ln²2 = 4.8 fewer bits per key; the largest run may
// get none (p = 1, no filter), when its keys are better spent elsewhere.
// docs/filter-policy.md works an example.

// ln2Sq is (ln 2)², the exponent per bit of the best-k bloom rate.
const ln2Sq = math.Ln2 * math.Ln2

// ModelFPR returns e^(-b ln²2), the false-positive rate of a bloom filter
// of b bits per key with the best real number of probes: the model
// AllocateBits optimises (real filters round k, and land a little above it).
func ModelFPR(bitsPerKey float64) float64 {
	if !(bitsPerKey > 0) {
		return 1
	}
	return math.Exp(-bitsPerKey * ln2Sq)
}

// AllocateBits returns the bits per key for each of a set of sorted runs
// of keys[i] keys that minimise the sum of their ModelFPR at the memory of
// avgBitsPerKey bits for every key, each at most maxBits. Runs without keys
// get 0. With a single non-empty run, or equal runs, every run gets
// avgBitsPerKey (capped at maxBits). It assumes every absent key probes
// every run; AllocateBitsProbed weighs runs by how often they are probed.
func AllocateBits(keys []float64, avgBitsPerKey, maxBits float64) []float64 {
	return AllocateBitsProbed(keys, nil, avgBitsPerKey, maxBits)
}

// AllocateBitsProbed is AllocateBits for runs that only a fraction
// probed[i] of absent keys probe (a level whose tables cover part of the
// key space; nil: every run, 1 each). It minimises
//
//	sum_i probed[i] ModelFPR(b_i)   subject to   sum_i keys[i] b_i = avg N
//
// whose solution is b_i = (ln c − ln(keys[i]/probed[i])) / ln²2, clamped:
// a run probed half as often is worth ln 2 / ln²2 = 1.44 fewer bits per
// key. A run probed by no key (probed[i] <= 0) gets 0 bits, but its keys
// still count in N.
func AllocateBitsProbed(keys, probed []float64, avgBitsPerKey, maxBits float64) []float64 {
	bits := make([]float64, len(keys))
	// weight[i] = ln(keys[i]/probed[i]): the run's cost per bit of rate.
	weight := make([]float64, len(keys))
	active := func(i int) bool { return keys[i] > 0 && (probed == nil || probed[i] > 0) }
	var total float64
	lo, hi := math.Inf(1), math.Inf(-1) // range of the weights over the runs
	for i, n := range keys {
		if n > 0 {
			total += n
		}
		if !active(i) {
			continue
		}
		weight[i] = math.Log(n)
		if probed != nil {
			weight[i] -= math.Log(probed[i])
		}
		lo, hi = min(lo, weight[i]), max(hi, weight[i])
	}
	if total == 0 || math.IsInf(lo, 1) || !(avgBitsPerKey > 0) || !(maxBits > 0) {
		return bits
	}
	budget := total * min(avgBitsPerKey, maxBits)
	// spend fills bits with the allocation for ln c = t and returns its
	// memory. At t = lo every run gets 0 bits, at t = hi + maxBits ln²2
	// every run gets maxBits; the spend grows with t in between.
	spend := func(t float64) float64 {
		var s float64
		for i, n := range keys {
			bits[i] = 0
			if active(i) {
				bits[i] = min(max((t-weight[i])/ln2Sq, 0), maxBits)
				s += n * bits[i]
			}
		}
		return s
	}
	a, b := lo, hi+maxBits*ln2Sq
	for range 200 {
		m := (a + b) / 2
		if spend(m) < budget {
			a = m
		} else {
			b = m
		}
	}
	spend(b)
	// Bisection leaves the spend a hair off the budget: scale the unclamped
	// runs onto it exactly so that memory matches the uniform setting.
	var clampedSpend, freeSpend float64
	for i, n := range keys {
		if bits[i] == 0 || bits[i] == maxBits {
			clampedSpend += n * bits[i]
		} else {
			freeSpend += n * bits[i]
		}
	}
	if freeSpend > 0 {
		f := (budget - clampedSpend) / freeSpend
		for i := range bits {
			if bits[i] > 0 && bits[i] < maxBits {
				bits[i] = min(bits[i]*f, maxBits)
			}
		}
	}
	return bits
}

// SumModelFPR returns the sum of ModelFPR(bits[i]) over the runs that have
// keys: the expected false-positive probes of an absent key under the
// model.
func SumModelFPR(keys, bits []float64) float64 {
	return SumModelFPRProbed(keys, nil, bits)
}

// SumModelFPRProbed is SumModelFPR with each run's rate weighted by the
// fraction of absent keys that probe it (nil: 1 each), what
// AllocateBitsProbed minimises.
func SumModelFPRProbed(keys, probed, bits []float64) float64 {
	var s float64
	for i, n := range keys {
		if n > 0 {
			q := 1.0
			if probed != nil {
				q = max(probed[i], 0)
			}
			s += q * ModelFPR(bits[i])
		}
	}
	return s
}
