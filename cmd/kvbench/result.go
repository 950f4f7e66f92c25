package main

import (
	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
)

// result is one workload run: the unit of the report, of a "results" entry
// in the JSON and of a CSV row. The JSON names are documented field by
// field in docs/studying-filters.md; keep them stable. Ratios that have no
// denominator (per-Get figures of a workload without Gets, the measured FP
// rate when no filter was consulted, the cache hit rate without block
// reads) are nil: null in JSON, an empty CSV cell, "-" in the text report.
type result struct {
	Benchmark string `json:"benchmark"`
	Pass      string `json:"pass"` // "load", "filters", "ignore_filters", "sweep", "filter_sweep" or "range_sweep"
	// Round numbers the alternating passes of -compare_filters (filters,
	// ignored, filters, ignored: rounds 1 and 2); 0 outside them.
	Round int `json:"round"`
	// FilterSetting and FilterPolicy name the -filter_sweep entry a result
	// belongs to ("" outside one); FilterPolicy is "uniform", "per_level",
	// "skip_last" or "per_level+skip_last".
	FilterSetting    string `json:"filter_setting"`
	FilterPolicy     string `json:"filter_policy"`
	BloomBits        int    `json:"bloom_bits"`
	FiltersConsulted bool   `json:"filters_consulted"`

	Ops       int64   `json:"ops"`
	Found     int64   `json:"found"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P95us     float64 `json:"p95_us"`
	P99us     float64 `json:"p99_us"`
	P999us    float64 `json:"p999_us"`
	MeanUs    float64 `json:"mean_us"`
	MaxUs     float64 `json:"max_us"`
	// CPUSeconds is the process's user + system CPU time over the timed
	// phase (background flushes and compactions included), CPUUsPerOp the
	// same per operation: figures that leave out the time other programs
	// held the CPUs, which ops/s includes (the caches and clock speed they
	// share still move them). 0 in reports that predate them and where the
	// system does not say.
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUUsPerOp float64 `json:"cpu_us_per_op"`

	// Totals over the workload (Metrics deltas).
	Gets                 uint64 `json:"gets"`
	TablesProbed         uint64 `json:"tables_probed"`
	FilterNegatives      uint64 `json:"filter_negatives"`
	FilterFalsePositives uint64 `json:"filter_false_positives"`
	DataBlockReads       uint64 `json:"data_block_reads"`
	BlockCacheHits       uint64 `json:"block_cache_hits"`
	BlockCacheMisses     uint64 `json:"block_cache_misses"`
	BytesRead            uint64 `json:"bytes_read"`
	MemtableHits         uint64 `json:"memtable_hits"`
	// With -cache_filter_blocks: filter lookups in the block cache, filter
	// blocks read from files, and the filter bytes in memory (cached and
	// pinned) at the workload's end.
	FilterCacheHits     uint64 `json:"filter_cache_hits"`
	FilterCacheMisses   uint64 `json:"filter_cache_misses"`
	FilterBlockReads    uint64 `json:"filter_block_reads"`
	FilterBytesResident int64  `json:"filter_bytes_resident"`
	FilterBytesPinned   int64  `json:"filter_bytes_pinned"`
	// IndexPartitionReads counts the index partitions Gets read from
	// files (tables with partitioned indexes; 0 in reports that predate it).
	IndexPartitionReads uint64 `json:"index_partition_reads"`
	// FilterSkips counts table probes that did without an evicted filter
	// (Metrics.FilterSkips; 0 in reports that predate it).
	FilterSkips uint64 `json:"filter_skips"`

	// Iterator workloads (scan, seekprefix, seekprefixmissing): totals.
	Seeks                    uint64 `json:"seeks"`
	PrefixSeeks              uint64 `json:"prefix_seeks"`
	IterTablesProbed         uint64 `json:"iter_tables_probed"`
	IterFilterNegatives      uint64 `json:"iter_filter_negatives"`
	IterFilterFalsePositives uint64 `json:"iter_filter_false_positives"`
	IterDataBlockReads       uint64 `json:"iter_data_block_reads"`
	IterBytesRead            uint64 `json:"iter_bytes_read"`
	// Per operation of an iterator workload (a seek and its steps).
	DataBlocksPerOp               *float64  `json:"data_blocks_per_op"`
	BytesPerOp                    *float64  `json:"bytes_per_op"`
	IterTablesProbedPerOp         *float64  `json:"iter_tables_probed_per_op"`
	IterFilterNegativesPerOp      *float64  `json:"iter_filter_negatives_per_op"`
	IterFilterFalsePositivesPerOp *float64  `json:"iter_filter_false_positives_per_op"`
	DataBlocksPerOpByLevel        []float64 `json:"data_blocks_per_op_by_level"`

	// Per Get.
	TablesProbedPerGet         *float64 `json:"tables_probed_per_get"`
	FilterNegativesPerGet      *float64 `json:"filter_negatives_per_get"`
	FilterFalsePositivesPerGet *float64 `json:"filter_false_positives_per_get"`
	DataBlocksPerGet           *float64 `json:"data_blocks_per_get"`
	BytesReadPerGet            *float64 `json:"bytes_read_per_get"`
	FPRateMeasured             *float64 `json:"fp_rate_measured"`
	FPRateTheory               *float64 `json:"fp_rate_theory"`
	FilterVariant              string   `json:"filter_variant"` // "standard", "blocked" or "fuse"; "" without filters
	CacheHitRate               *float64 `json:"cache_hit_rate"`

	// The tables the workload read (gauges at its end).
	FilterBytes      int64   `json:"filter_bytes"`
	FilterKeys       uint64  `json:"filter_keys"`
	FilterBitsPerKey float64 `json:"filter_bits_per_key"`
	FilterProbes     int     `json:"filter_probes"`
	FilesPerLevel    []int   `json:"files_per_level"`
	// Per level (index = level), per Get: where lookups went and what the
	// filters saved there.
	TablesProbedPerGetByLevel    []float64 `json:"tables_probed_per_get_by_level"`
	FilterNegativesPerGetByLevel []float64 `json:"filter_negatives_per_get_by_level"`
	DataBlocksPerGetByLevel      []float64 `json:"data_blocks_per_get_by_level"`
	FalsePositivesPerGetByLevel  []float64 `json:"false_positives_per_get_by_level"`
	// The filters per level at the workload's end: bytes, and the bits per
	// key the policy gives a table written there now.
	FilterBytesByLevel      []int64   `json:"filter_bytes_by_level"`
	FilterBitsPerKeyByLevel []float64 `json:"filter_bits_per_key_by_level"`
	// Range workloads (scanempty.go): the range width and range-filter
	// bits per key they ran with, and per seek the tables whose range
	// filter was asked and those it skipped; the measured false-positive
	// rate (tables let through that held nothing in range, of all that
	// held nothing) beside the theory at that width, and per level.
	RangeWidth                    uint64    `json:"range_width"`
	RangeFilterBits               float64   `json:"range_filter_bits"`
	RangeFilterProbesPerOp        *float64  `json:"range_filter_probes_per_op"`
	RangeFilterNegativesPerOp     *float64  `json:"range_filter_negatives_per_op"`
	RangeFilterFPRMeasured        *float64  `json:"range_filter_fpr_measured"`
	RangeFilterFPRTheory          *float64  `json:"range_filter_fpr_theory"`
	RangeFilterFPRMeasuredByLevel []float64 `json:"range_filter_fpr_measured_by_level"`

	// Filter probes per Get (the tree filter's and the tables'), and the
	// tree filter's work and shape (-tree_filter; treefilter.go).
	FilterProbesPerGet *float64          `json:"filter_probes_per_get"`
	TreeFilter         *treeFilterResult `json:"tree_filter"`
}

// newResult combines a workload run with the metrics it cost. bits is the
// bits-per-key setting the tables were written with (<= 0: no filters).
func newResult(run *workloadRun, pass string, bits int, variant filter.Variant, consulted bool, d bloomkv.Metrics) *result {
	lat := summarize(run.hist)
	r := &result{
		Benchmark:        run.name,
		Pass:             pass,
		BloomBits:        tableBits(bits),
		FiltersConsulted: consulted && bits > 0,
		Ops:              run.ops,
		Found:            run.found,
		Seconds:          run.elapsed.Seconds(),
		OpsPerSec:        float64(run.ops) / max(run.elapsed.Seconds(), 1e-9),
		P50us:            lat.P50,
		P95us:            lat.P95,
		P99us:            lat.P99,
		P999us:           lat.P999,
		MeanUs:           lat.Mean,
		MaxUs:            lat.Max,
		CPUSeconds:       run.cpu.Seconds(),

		Gets:                 d.Gets,
		TablesProbed:         d.TablesProbed,
		FilterNegatives:      d.FilterNegatives,
		FilterFalsePositives: d.FilterFalsePositives,
		DataBlockReads:       d.DataBlockReads,
		BlockCacheHits:       d.BlockCacheHits,
		BlockCacheMisses:     d.BlockCacheMisses,
		BytesRead:            d.BytesRead,
		MemtableHits:         d.MemtableHits,

		FilterCacheHits:     d.FilterCacheHits,
		FilterCacheMisses:   d.FilterCacheMisses,
		FilterBlockReads:    d.FilterBlockReads,
		FilterBytesResident: d.FilterBytesResident,
		FilterBytesPinned:   d.FilterBytesPinned,
		IndexPartitionReads: d.IndexPartitionReads,
		FilterSkips:         d.FilterSkips,
	}
	if run.ops > 0 {
		r.CPUUsPerOp = float64(run.cpu.Nanoseconds()) / 1e3 / float64(run.ops)
	}
	if d.Gets > 0 {
		for _, l := range d.Levels {
			g := float64(d.Gets)
			r.TablesProbedPerGetByLevel = append(r.TablesProbedPerGetByLevel, float64(l.TablesProbed)/g)
			r.FilterNegativesPerGetByLevel = append(r.FilterNegativesPerGetByLevel, float64(l.FilterNegatives)/g)
			r.DataBlocksPerGetByLevel = append(r.DataBlocksPerGetByLevel, float64(l.DataBlockReads)/g)
			r.FalsePositivesPerGetByLevel = append(r.FalsePositivesPerGetByLevel, float64(l.FilterFalsePositives)/g)
		}
	}
	for _, l := range d.Levels {
		r.FilterBytesByLevel = append(r.FilterBytesByLevel, l.FilterBytes)
		r.FilterBitsPerKeyByLevel = append(r.FilterBitsPerKeyByLevel, l.FilterBitsPerKey)
	}
	if d.IterSeeks > 0 {
		r.Seeks, r.PrefixSeeks = d.IterSeeks, d.IterPrefixSeeks
		r.IterTablesProbed, r.IterFilterNegatives, r.IterFilterFalsePositives = d.IterTablesProbed, d.IterFilterNegatives, d.IterFilterFalsePositives
		r.IterDataBlockReads, r.IterBytesRead = d.IterDataBlockReads, d.IterBytesRead
		ops := uint64(run.ops)
		r.DataBlocksPerOp = ratio(d.IterDataBlockReads, ops)
		r.BytesPerOp = ratio(d.IterBytesRead, ops)
		r.IterTablesProbedPerOp = ratio(d.IterTablesProbed, ops)
		r.IterFilterNegativesPerOp = ratio(d.IterFilterNegatives, ops)
		r.IterFilterFalsePositivesPerOp = ratio(d.IterFilterFalsePositives, ops)
		for _, l := range d.Levels {
			r.DataBlocksPerOpByLevel = append(r.DataBlocksPerOpByLevel, float64(l.IterDataBlockReads)/float64(max(ops, 1)))
		}
	}
	r.TablesProbedPerGet = ratio(d.TablesProbed, d.Gets)
	r.FilterNegativesPerGet = ratio(d.FilterNegatives, d.Gets)
	r.FilterFalsePositivesPerGet = ratio(d.FilterFalsePositives, d.Gets)
	r.DataBlocksPerGet = ratio(d.DataBlockReads, d.Gets)
	r.BytesReadPerGet = ratio(d.BytesRead, d.Gets)
	// Every probe that consulted a filter for a key the table lacks ends
	// as a negative (skipped) or a false positive (read for nothing);
	// probes of the table that holds the key are neither, so the ratio is
	// exact for hits, misses and mixes alike.
	r.FPRateMeasured = ratio(d.FilterFalsePositives, d.FilterNegatives+d.FilterFalsePositives)
	r.CacheHitRate = ratio(d.BlockCacheHits, d.BlockCacheHits+d.BlockCacheMisses)
	r.setFilterShape(bits, variant, d)
	r.setRangeFigures(run, d)
	r.setTreeFilter(d)
	return r
}

// setFilterShape records the filter memory and the bits per key actually
// spent, and the theoretical FP rate of the filters read. The theory comes
// from the tables themselves (Metrics.Levels[i].FilterFPRTheory: each
// table's filter by its own bits, keys, probes and variant), weighted by
// the workload's absent-key filter probes in each level, so it describes
// the tables the probes met whatever settings wrote them.
func (r *result) setFilterShape(bits int, variant filter.Variant, m bloomkv.Metrics) {
	r.FilterBytes = m.FilterBytes
	r.FilterKeys = m.FilterKeys
	r.FilesPerLevel = filesPerLevel(m)
	if m.FilterKeys > 0 {
		r.FilterBitsPerKey = float64(m.FilterBytes) * 8 / float64(m.FilterKeys)
	}
	if bits <= 0 || m.FilterKeys == 0 {
		return
	}
	r.FilterProbes = filter.NumProbes(float64(bits))
	r.FilterVariant = variant.String()
	// The theory sits beside the measured rate, so it is given only where
	// there is one to compare it with: not for tables without filters, nor
	// for reads that ignored them (both once printed "-" beside "100%").
	if r.FiltersConsulted {
		fp := probeWeightedTheory(m)
		r.FPRateTheory = &fp
	}
}

// probeWeightedTheory returns the theoretical FP rate of the filters m's
// absent-key probes met: each level's rate weighted by its probes, or the
// key-weighted rate of all filters when there were none.
func probeWeightedTheory(m bloomkv.Metrics) float64 {
	var sum, probes float64
	for _, l := range m.Levels {
		n := float64(l.FilterNegatives + l.FilterFalsePositives)
		sum += n * l.FilterFPRTheory
		probes += n
	}
	if probes == 0 {
		return m.FilterFPRTheory
	}
	return sum / probes
}

func filesPerLevel(m bloomkv.Metrics) []int {
	out := make([]int, len(m.Levels))
	for i, l := range m.Levels {
		out[i] = l.Files
	}
	return out
}

// ratio returns a/b, or nil when b is 0.
func ratio(a, b uint64) *float64 {
	if b == 0 {
		return nil
	}
	v := float64(a) / float64(b)
	return &v
}
