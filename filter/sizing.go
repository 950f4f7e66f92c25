package filter

import "math"

// maxBloomBits bounds a bloom filter's bit array (2^46 bits = 8 TiB), a
// counting filter's counters and a cuckoo filter's slot bits. It guards the
// size arithmetic against overflow; no real filter is near. On 32-bit
// platforms it is math.MaxInt (2^31-1), so that every size and count up to
// it fits in an int and the largest array (a counting filter's m/2 bytes,
// 1 GiB) can be allocated; larger encodings are rejected there as out of
// range rather than truncated.
//
// Bloom and counting sizes are whole 64-bit words, so on 32-bit platforms
// the largest is 2^31-64. The limit applies to a size after it is rounded
// up to words: checked before rounding, 2^31-1 became 2^31 there, a
// filter whose own encoding did not decode.
const maxBloomBits = min(1<<46, math.MaxInt)

// Sizing. A standard bloom filter of m bits holding n keys with k probes
// answers an absent key "maybe" with probability about
//
//	p(m, n, k) = (1 - e^(-k n / m))^k                      (TheoreticalFPR)
//
// For a given k, solving p = target for the bits per key b = m/n gives
//
//	b_k(p) = -k / ln(1 - p^(1/k))
//
// and the smallest filter for a target p is the smallest b_k over the
// integer k in [1, MaxProbes]. The textbook shortcut, b = -ln p / (ln 2)^2
// with k = b ln 2, assumes a real k and so lands a little above the target
// (1.004% for 1%); the functions below use the integer minimum, so a filter
// they size meets its target in theory.

// EstimateParameters returns the shape of the smallest standard bloom
// filter whose theoretical false-positive rate with n keys is at most p:
// bits, a whole number of 64-bit words and at least 64, and hashes, the
// probes per key (NumProbes of bits/n, or the k the size was solved for if
// that one is needed to meet p). n <= 0 is sized as 1. Below p = 2^-30 the
// best k would exceed MaxProbes; there the textbook size is returned, and
// its rate is above p. It returns 0, 0 when
// p is outside (0, 1) or the filter, rounded up to whole words, would
// exceed 2^46 bits (2^31-1 on 32-bit platforms, so 2^31-64 is the largest
// size there); NewBloom reports those cases as errors wrapping
// ErrInvalidArgument.
//
// NewBloom, NewCounting and NewScalable's layers are sized with it.
func EstimateParameters(n int, p float64) (bits uint64, hashes int) {
	if !(p > 0 && p < 1) { // also rejects NaN
		return 0, 0
	}
	keys := float64(max(n, 1))
	best, bestK := math.Inf(1), 0
	if p < minExactFPR {
		// The best k exceeds MaxProbes: meeting p with MaxProbes probes
		// would take vastly more bits than the textbook size, which is kept
		// (its rate is then above p; see minExactFPR).
		best, bestK = math.Ceil(-keys*math.Log(p)/(math.Ln2*math.Ln2)), MaxProbes
	}
	for k := 1; k <= MaxProbes && bestK != MaxProbes; k++ {
		if m := math.Ceil(keys * bitsPerKeyWithProbes(p, k)); m < best {
			best, bestK = m, k
		}
	}
	if best > maxBloomBits { // before the conversion, which could overflow
		return 0, 0
	}
	m := roundBits(uint64(best))
	if m > maxBloomBits { // the limit holds for the rounded size
		return 0, 0
	}
	// Rounding m up to whole words may make more probes worthwhile.
	k := NumProbes(float64(m) / keys)
	if TheoreticalFPR(m, uint64(keys), k) > TheoreticalFPR(m, uint64(keys), bestK) {
		k = bestK
	}
	return m, k
}

// minExactFPR is 2^-MaxProbes: below it the best k (log2(1/p)) exceeds
// MaxProbes, and EstimateParameters falls back to the textbook size
// -n ln p / (ln 2)^2 with MaxProbes probes, whose rate is above p.
var minExactFPR = math.Ldexp(1, -MaxProbes)

// bitsPerKeyWithProbes returns b_k(p), the bits per key at which k probes
// give the standard rate p (large n). p must be in (0, 1).
func bitsPerKeyWithProbes(p float64, k int) float64 {
	// 1 - p^(1/k) computed as -expm1(ln p / k) keeps precision when p^(1/k)
	// is close to 1.
	return -float64(k) / math.Log(-math.Expm1(math.Log(p)/float64(k)))
}

// FPRForBitsPerKey returns the false-positive rate a standard filter block
// built with bitsPerKey bits per key has in theory (for many keys):
// (1 - e^(-k/b))^k with k = NumProbes(b). It is 1 for b <= 0 (no filter).
func FPRForBitsPerKey(bitsPerKey float64) float64 {
	if !(bitsPerKey > 0) {
		return 1
	}
	k := float64(NumProbes(bitsPerKey))
	return math.Pow(-math.Expm1(-k/bitsPerKey), k)
}

// BitsPerKeyForFPR returns the fewest bits per key at which a standard
// filter block (k = NumProbes of its bits per key) has a theoretical
// false-positive rate of at most p, to within 1e-9 bits; 0 for p >= 1 (no
// filter needed) and +Inf for p <= 0 or NaN. It is the "target
// false-positive rate" form of the engine's bits-per-key setting.
func BitsPerKeyForFPR(p float64) float64 {
	switch {
	case p >= 1:
		return 0
	case !(p > 0):
		return math.Inf(1)
	}
	// The rate falls with b while k = NumProbes(b) stays put, and may jump
	// where k changes, at b = (j + 1/2)/ln 2. The answer is therefore one
	// of those boundaries or a b_k(p) solved for some k: take the smallest
	// candidate that meets p.
	best := math.Inf(1)
	try := func(b float64) {
		if b > 0 && b < best && FPRForBitsPerKey(b) <= p*(1+1e-12) {
			best = b
		}
	}
	for k := 1; k <= MaxProbes; k++ {
		try(bitsPerKeyWithProbes(p, k))
		try((float64(k) + 0.5) / math.Ln2)
	}
	if math.IsInf(best, 1) {
		// Beyond MaxProbes: k stays at MaxProbes and b_k alone decides.
		return bitsPerKeyWithProbes(p, MaxProbes)
	}
	return best
}

// checkSizing validates the (n, fpp) pair every constructor takes.
func checkSizing(kind string, n int, fpp float64) error {
	if n < 0 {
		return invalidArgf("%s: expected number of keys %d is negative", kind, n)
	}
	if !(fpp > 0 && fpp < 1) { // also rejects NaN
		return invalidArgf("%s: false-positive rate %v is outside (0, 1)", kind, fpp)
	}
	return nil
}

// bloomShape sizes a bloom filter for n keys at false-positive rate fpp
// with EstimateParameters, reporting bad arguments as errors.
func bloomShape(kind string, n int, fpp float64) (m uint64, k int, err error) {
	if err := checkSizing(kind, n, fpp); err != nil {
		return 0, 0, err
	}
	m, k = EstimateParameters(n, fpp)
	if m == 0 {
		return 0, 0, invalidArgf("%s: %d keys at rate %v need more than the %d bits supported", kind, n, fpp, uint64(maxBloomBits))
	}
	return m, k, nil
}

// checkShape validates an explicit (m, k) and returns m rounded up to whole
// 64-bit words, as filter blocks round it. The rounded size must be within
// maxBloomBits: on 32-bit platforms m = 2^31-1 rounds to 2^31 and is
// refused.
func checkShape(kind string, m uint64, k int) (uint64, error) {
	if m == 0 || m > maxBloomBits || roundBits(m) > maxBloomBits {
		return 0, invalidArgf("%s: %d bits (%d rounded up to whole 64-bit words) is outside [1, %d]", kind, m, roundBits(min(m, maxBloomBits)), uint64(maxBloomBits))
	}
	if k < 1 || k > MaxProbes {
		return 0, invalidArgf("%s: probe count %d is outside [1, %d]", kind, k, MaxProbes)
	}
	return roundBits(m), nil
}
