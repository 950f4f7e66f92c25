package filter

import (
	"math"
	"testing"
)

// TestScalableCount: Count tracks the distinct keys added, where Added
// (the Adds that returned true) falls short by the false positives; adding
// keys again changes neither; a decoded filter estimates the same.
func TestScalableCount(t *testing.T) {
	for _, tc := range []struct {
		fpp      float64
		growth   float64
		tolerate float64 // relative error allowed
	}{
		{0.01, 2, 0.004},
		{0.1, 2, 0.01},
		{0.05, 4, 0.01},
	} {
		const n = 100_000
		s := must(NewScalable(1000, tc.fpp, WithGrowth(tc.growth)))
		for i := range n {
			s.Add(keyN('c', i))
		}
		count, added := s.Count(), s.Added()
		relErr := math.Abs(float64(count-n)) / n
		t.Logf("fpp %v growth %v: %d distinct keys, Count %d (error %.3f%%), Added %d (short by %.2f%%)",
			tc.fpp, tc.growth, n, count, 100*relErr, added, 100*float64(n-added)/n)
		if relErr > tc.tolerate {
			t.Errorf("fpp %v: Count %d for %d distinct keys (error %.3f%% > %.1f%%)", tc.fpp, count, n, 100*relErr, 100*tc.tolerate)
		}
		if n-added < 2*(count-added)/3 || added == n {
			t.Errorf("fpp %v: Added %d is not short of %d as false positives make it", tc.fpp, added, n)
		}
		// Repeats are not new keys.
		for i := range n / 2 {
			s.Add(keyN('c', i))
		}
		if s.Count() != count || s.Added() != added {
			t.Errorf("fpp %v: re-adding keys moved Count %d -> %d, Added %d -> %d", tc.fpp, count, s.Count(), added, s.Added())
		}
		back := new(Scalable)
		if err := back.UnmarshalBinary(mustMarshal(t, s)); err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(float64(back.Count() - count)); d > 1+float64(count)/2000 || back.Added() != added {
			t.Errorf("fpp %v: decoded Count %d, Added %d; live %d, %d", tc.fpp, back.Count(), back.Added(), count, added)
		}
	}
}
