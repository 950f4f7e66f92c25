package main

import "testing"

// TestCompareResultsRepeatedWorkload: a workload listed twice in
// -benchmarks runs twice in each pass, and each run without filters is set
// beside the run with filters at the same place in its pass, not beside
// whichever filtered run of that name came last.
func TestCompareResultsRepeatedWorkload(t *testing.T) {
	res := func(pass string, round int, opsPerSec float64) *result {
		return &result{Benchmark: readRandom, Pass: pass, Round: round, OpsPerSec: opsPerSec}
	}
	// Two rounds of -compare_filters with readrandom listed twice: each
	// pass runs it twice, at distinct rates so that a mix-up shows.
	var results []*result
	for round := 1; round <= 2; round++ {
		base := float64(1000 * round)
		results = append(results,
			res("filters", round, base+1), res("filters", round, base+2),
			res("ignore_filters", round, base+11), res("ignore_filters", round, base+12))
	}
	cs := compareResults(results)
	if len(cs) != 4 {
		t.Fatalf("%d comparisons, want 4", len(cs))
	}
	for i, c := range cs {
		round, nth := i/2+1, i%2+1
		base := float64(1000 * round)
		if c.Round != round || *c.OpsPerSec.Filters != base+float64(nth) || *c.OpsPerSec.IgnoreFilters != base+10+float64(nth) {
			t.Errorf("comparison %d: round %d, %v ops/s with filters beside %v without; want round %d, %v beside %v",
				i, c.Round, *c.OpsPerSec.Filters, *c.OpsPerSec.IgnoreFilters, round, base+float64(nth), base+10+float64(nth))
		}
	}
}
