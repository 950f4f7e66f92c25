package filter

import (
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// Hash returns the 64-bit hash every bloomkv filter derives its probes from.
func Hash(key []byte) uint64 { return xxhash.Sum64(key) }

// MaxProbes is the largest number of probes a bloom filter uses.
const MaxProbes = 30

// NumProbes returns k = round(bitsPerKey * ln 2) clamped to [1, MaxProbes].
func NumProbes(bitsPerKey float64) int {
	// Clamp before converting: a huge bitsPerKey would overflow an int
	// (on 32-bit platforms from about 3e9).
	return int(math.Round(max(1, min(bitsPerKey*math.Ln2, MaxProbes))))
}

// TheoreticalFPR returns (1 - e^(-k n / m))^k, the expected false-positive
// rate of a standard bloom filter of m bits holding n keys with k probes.
func TheoreticalFPR(m uint64, n uint64, k int) float64 {
	if m == 0 {
		return 1
	}
	if n == 0 {
		return 0
	}
	return math.Pow(1-math.Exp(-float64(k)*float64(n)/float64(m)), float64(k))
}

// probeStep returns the double-hashing pair for h: the start h1 and the odd
// step h2 (odd, so successive probes never collapse onto one position when m
// is a power of two).
func probeStep(h uint64) (h1, h2 uint64) {
	return h, bits.RotateLeft64(h, 32) | 1
}

// reduce maps x onto [0, m) by multiply-high, a division-free fair map.
func reduce(x, m uint64) uint64 {
	hi, _ := bits.Mul64(x, m)
	return hi
}
