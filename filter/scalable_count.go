package filter

import "math"

// A Scalable's Add turns a key away when some layer already answers
// "maybe" for it. For a key added before that is right; for a new key it
// is a false positive, and the key goes uncounted. Counting only accepted
// keys therefore undercounts distinct keys by the compound false-positive
// rate, integrated over the filter's history.
//
// missEstimate corrects for that. When Add accepts a key (certainly new)
// while an absent key would pass as "maybe" with probability p, then for
// every new key accepted about p/(1-p) new keys were turned away at that
// fill. Summing that over accepted keys estimates the new keys missed,
// without counting repeats of old keys, which Add turns away too. p comes
// from each layer's textbook rate at its count, (1 - e^(-k n/m))^k; the
// layers but the newest no longer change, so their product is kept.
type missEstimate struct {
	olderPass float64 // Π (1 - rate) over every layer but the newest
	missed    float64 // expected new keys turned away so far
}

// maxMissRate bounds p: past it a filter is so overfull that the estimate
// would run away rather than say anything.
const maxMissRate = 0.5

func newMissEstimate() missEstimate { return missEstimate{olderPass: 1} }

// layerRate is the false-positive rate of layer l holding n keys.
func layerRate(l *scalableLayer, n float64) float64 {
	k, m := float64(l.bloom.k), float64(l.bloom.m)
	return math.Pow(-math.Expm1(-k*n/m), k)
}

// missPerAccepted returns p/(1-p) for the compound rate p with newest
// layer l holding n keys.
func (e *missEstimate) missPerAccepted(l *scalableLayer, n float64) float64 {
	p := min(1-e.olderPass*(1-layerRate(l, n)), maxMissRate)
	return p / (1 - p)
}

// accepted records that Add is taking a new key into newest layer l
// (before l.count counts it).
func (e *missEstimate) accepted(l *scalableLayer) {
	e.missed += e.missPerAccepted(l, float64(l.count))
}

// freeze records that l, the newest layer until now, takes no more keys.
func (e *missEstimate) freeze(l *scalableLayer) {
	e.olderPass *= 1 - layerRate(l, float64(l.count))
}

// replayMissEstimate rebuilds the estimate of a decoded filter, whose
// encoding holds only the counts: each layer's sum over its keys is
// integrated (midpoint rule, at most 256 steps; the rate is smooth in n),
// which agrees with the live sum to well under a key per thousand.
func replayMissEstimate(layers []*scalableLayer) missEstimate {
	e := newMissEstimate()
	for i, l := range layers {
		if n := float64(l.count); n > 0 {
			steps := min(n, 256)
			h := n / steps
			for j := 0.0; j < steps; j++ {
				e.missed += h * e.missPerAccepted(l, (j+0.5)*h-0.5)
			}
		}
		if i < len(layers)-1 {
			e.freeze(l)
		}
	}
	return e
}
