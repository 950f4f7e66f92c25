package filter

import (
	"math"
	"math/bits"
)

// FillFPR returns the false-positive rate this particular filter has, from
// the bits it actually set: for a bloom filter (fraction of ones)^k, for
// the blocked variant the mean of that over its 64-byte blocks (a key's
// probes stay in one block), for a fuse filter its fingerprint rate.
//
// TheoreticalFPR is the expectation over all filters of the block's m, n
// and k; a small filter's own rate scatters around it (its fill fraction
// varies by about 1/sqrt(m)), which is what a test over a few small
// filters must allow for. FillFPR is that filter's rate given its bits,
// with only the probes' hashing left random.
func (b Block) FillFPR() float64 {
	switch b.variant {
	case VariantFuse:
		return b.TheoreticalFPR()
	case VariantBlocked:
		var sum float64
		n := len(b.array) / blockedBlockBytes
		for i := range n {
			sum += math.Pow(onesFraction(b.array[i*blockedBlockBytes:(i+1)*blockedBlockBytes]), float64(b.k))
		}
		return sum / float64(n)
	}
	return math.Pow(onesFraction(b.array), float64(b.k))
}

// onesFraction returns the fraction of set bits in p.
func onesFraction(p []byte) float64 {
	ones := 0
	for _, x := range p {
		ones += bits.OnesCount8(x)
	}
	return float64(ones) / float64(8*len(p))
}
