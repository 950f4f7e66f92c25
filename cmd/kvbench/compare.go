package main

// comparison sets one read workload's figures with filters beside the same
// workload on the same tables with filters ignored.
type comparison struct {
	Benchmark        string `json:"benchmark"`
	Round            int    `json:"round"` // 1, 2: the alternating rounds
	BloomBits        int    `json:"bloom_bits"`
	DataBlocksPerGet pair   `json:"data_blocks_per_get"`
	BytesReadPerGet  pair   `json:"bytes_read_per_get"`
	DataBlocksPerOp  pair   `json:"data_blocks_per_op"` // iterator workloads
	BytesPerOp       pair   `json:"bytes_per_op"`
	P50us            pair   `json:"p50_us"`
	P99us            pair   `json:"p99_us"`
	P999us           pair   `json:"p999_us"`
	OpsPerSec        pair   `json:"ops_per_sec"`
}

// pair is one figure in both modes; Ratio = Filters / IgnoreFilters (nil
// when either is missing or the denominator is 0).
type pair struct {
	Filters       *float64 `json:"filters"`
	IgnoreFilters *float64 `json:"ignore_filters"`
	Ratio         *float64 `json:"ratio"`
}

func newPair(with, without *float64) pair {
	p := pair{Filters: with, IgnoreFilters: without}
	if with != nil && without != nil && *without != 0 {
		r := *with / *without
		p.Ratio = &r
	}
	return p
}

func ptr(v float64) *float64 { return &v }

// compareResults pairs each "ignore_filters" result with the result of
// the same workload and round that consulted the filters: the "filters"
// pass of -compare_filters (whose rounds alternate filters, ignored,
// filters, ignored) or the "read" pass of the default run (round 0). A
// workload listed twice in -benchmarks runs twice in each pass, so results
// are paired by their place among the runs of that workload and round:
// the second run without filters beside the second run with them.
func compareResults(results []*result) []comparison {
	type key struct {
		benchmark string
		round     int
		nth       int // 0 for a workload's first run in its pass and round, 1 for its second, ...
	}
	with := map[key]*result{}
	var without []*result
	var withoutKeys []key
	runsWith, runsWithout := map[key]int{}, map[key]int{} // runs so far, by key with nth 0
	for _, r := range results {
		k := key{r.Benchmark, r.Round, 0}
		switch r.Pass {
		case "filters", "read":
			k.nth = runsWith[k]
			runsWith[key{r.Benchmark, r.Round, 0}]++
			with[k] = r
		case "ignore_filters":
			k.nth = runsWithout[k]
			runsWithout[key{r.Benchmark, r.Round, 0}]++
			without = append(without, r)
			withoutKeys = append(withoutKeys, k)
		}
	}
	var out []comparison
	for i, wo := range without {
		w := with[withoutKeys[i]]
		if w == nil {
			continue
		}
		out = append(out, comparison{
			Benchmark:        w.Benchmark,
			Round:            w.Round,
			BloomBits:        w.BloomBits,
			DataBlocksPerGet: newPair(w.DataBlocksPerGet, wo.DataBlocksPerGet),
			BytesReadPerGet:  newPair(w.BytesReadPerGet, wo.BytesReadPerGet),
			DataBlocksPerOp:  newPair(w.DataBlocksPerOp, wo.DataBlocksPerOp),
			BytesPerOp:       newPair(w.BytesPerOp, wo.BytesPerOp),
			P50us:            newPair(ptr(w.P50us), ptr(wo.P50us)),
			P99us:            newPair(ptr(w.P99us), ptr(wo.P99us)),
			P999us:           newPair(ptr(w.P999us), ptr(wo.P999us)),
			OpsPerSec:        newPair(ptr(w.OpsPerSec), ptr(wo.OpsPerSec)),
		})
	}
	return out
}
