package filter

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// randomKeys returns n distinct random keys of 1 to 24 bytes, all starting
// with 'r' so they never collide with keyN('a', i), the absent keys the
// false-positive tests probe with.
func randomKeys(rng *rand.Rand, n int) [][]byte {
	seen := make(map[string]bool, n)
	keys := make([][]byte, 0, n)
	for len(keys) < n {
		k := make([]byte, 1+rng.IntN(24))
		k[0] = 'r'
		for i := 1; i < len(k); i++ {
			k[i] = byte(rng.Uint32())
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// trimmed reports whether the statistical tests should run a smaller
// sample: under -short, and under -race (see race_test.go).
func trimmed() bool { return testing.Short() || raceEnabled }

// absentProbes is how many absent keys the false-positive tests probe at a
// 1% rate: a million, as the issue asks, or 200,000 when trimmed (still
// about 2000 false positives: a standard error near 2%).
func absentProbes() int {
	if trimmed() {
		return 200_000
	}
	return 1_000_000
}

// skipIfTrimmed skips a case whose rate is too low to measure precisely
// on a trimmed sample.
func skipIfTrimmed(t *testing.T) {
	t.Helper()
	if trimmed() {
		t.Skip("low rate needs millions of probes; run without -short and -race")
	}
}

// measureFPR probes keyN('a', 0..probes-1), none of which were added.
func measureFPR(probes int, mayContain func([]byte) bool) (float64, int) {
	fp := 0
	key := keyN('a', 0)
	for i := 0; i < probes; i++ {
		binary.BigEndian.PutUint64(key[1:], uint64(i)) // keyN('a', i), reusing one buffer
		if mayContain(key) {
			fp++
		}
	}
	return float64(fp) / float64(probes), fp
}

// wantCorruption fails unless err wraps ErrCorruption and says where.
func wantCorruption(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("%s: err = %v, want one wrapping ErrCorruption", what, err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "bloomkv/filter: ") || !strings.Contains(msg, "offset") {
		t.Fatalf("%s: error %q does not name the package and offset", what, msg)
	}
}
