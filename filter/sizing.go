package filter

import "math"

// maxBloomBits bounds a bloom filter's bit array (2^46 bits = 8 TiB), a
// counting filter's counters and a cuckoo filter's slot bits. It guards the
// size arithmetic against overflow; no real filter is near. On 32-bit
// platforms it is math.MaxInt (2^31-1), so that every size and count up to
// it fits in an int and the largest array (a counting filter's m/2 bytes,
// 1 GiB) can be allocated; larger encodings are rejected there as out of
// range rather than truncated.
const maxBloomBits = min(1<<46, math.MaxInt)

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

// bloomShape sizes a bloom filter for n keys at false-positive rate fpp:
// m = -n ln(fpp) / (ln 2)^2 rounded up to whole 64-bit words, and
// k = round(m/n ln 2) from that m. n = 0 is sized as n = 1.
func bloomShape(kind string, n int, fpp float64) (m uint64, k int, err error) {
	if err := checkSizing(kind, n, fpp); err != nil {
		return 0, 0, err
	}
	n = max(n, 1)
	bits := math.Ceil(-float64(n) * math.Log(fpp) / (math.Ln2 * math.Ln2))
	if bits > maxBloomBits {
		return 0, 0, invalidArgf("%s: %d keys at rate %v need %.0f bits, more than the %d supported", kind, n, fpp, bits, uint64(maxBloomBits))
	}
	m = roundBits(uint64(bits))
	return m, NumProbes(float64(m) / float64(n)), nil
}

// checkShape validates an explicit (m, k) and returns m rounded up to whole
// 64-bit words, as filter blocks round it.
func checkShape(kind string, m uint64, k int) (uint64, error) {
	if m == 0 || m > maxBloomBits {
		return 0, invalidArgf("%s: %d bits is outside [1, %d]", kind, m, uint64(maxBloomBits))
	}
	if k < 1 || k > MaxProbes {
		return 0, invalidArgf("%s: probe count %d is outside [1, %d]", kind, k, MaxProbes)
	}
	return roundBits(m), nil
}
