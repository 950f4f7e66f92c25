package filter

import (
	"fmt"
	"math"
	"testing"
)

// TestFillFPRPredictsSmallFilters: over many small filters, each filter's
// measured false-positive rate (200k absent keys) is within 5 binomial
// standard deviations of its FillFPR, in both bloom variants; on large
// filters FillFPR agrees with TheoreticalFPR within 2%.
func TestFillFPRPredictsSmallFilters(t *testing.T) {
	const probes = 200_000
	for _, v := range []Variant{VariantStandard, VariantBlocked} {
		for trial := range 6 {
			n := 200 + 150*trial
			b, err := NewBlockBuilderBits(5, v)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				b.AddKey(fmt.Appendf(nil, "fill-%d-%d", trial, i))
			}
			blk, err := DecodeBlock(b.Finish())
			if err != nil {
				t.Fatal(err)
			}
			fp := 0
			for i := range probes {
				if blk.MayContain(fmt.Appendf(nil, "absent-%d-%d", trial, i)) {
					fp++
				}
			}
			p := blk.FillFPR()
			sd := math.Sqrt(probes * p * (1 - p))
			if d := float64(fp) - probes*p; math.Abs(d) > 5*sd {
				t.Errorf("%v, %d keys: %d false positives in %d, FillFPR %.4f predicts %.0f ± %.0f (theory %.4f)",
					v, n, fp, probes, p, probes*p, sd, blk.TheoreticalFPR())
			}
		}
		b, _ := NewBlockBuilderBits(10, v)
		for i := range 200_000 {
			b.AddKey(fmt.Appendf(nil, "big-%d", i))
		}
		blk, _ := DecodeBlock(b.Finish())
		if fill, theory := blk.FillFPR(), blk.TheoreticalFPR(); math.Abs(fill/theory-1) > 0.02 {
			t.Errorf("%v, 200k keys: FillFPR %.5f, TheoreticalFPR %.5f", v, fill, theory)
		}
	}
}
