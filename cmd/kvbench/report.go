package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/dustin/go-humanize"
)

// printReport writes the human-readable report: the setup, the load, the
// tree, then the tables of the mode that ran. docs/studying-filters.md
// explains how to read it.
func printReport(w io.Writer, rep *report) error {
	var sb strings.Builder
	writeHeader(&sb, rep)
	writeLoad(&sb, rep)
	writeShape(&sb, "tree after load and settle", rep.Shape)
	cfg := rep.cfg
	switch {
	case len(cfg.filterSweep) > 0:
		writeLatency(&sb, loadResults(rep.Results))
		writeFilterSweep(&sb, rep)
		writeTreeFilter(&sb, rep.Results)
	case len(cfg.sweep) > 0:
		writeLatency(&sb, loadResults(rep.Results))
		writeSweep(&sb, rep)
	case len(cfg.rangeSweep) > 0:
		writeLatency(&sb, loadResults(rep.Results))
		writeRangeSweep(&sb, rep) // rangesweep.go
	default:
		writeLatency(&sb, rep.Results)
		legend(&sb, cfg.legend, legendLatency...)
		if writeCosts(&sb, rep.Results) {
			legend(&sb, cfg.legend, legendCosts...)
		}
		if writeSeekCosts(&sb, rep.Results) {
			legend(&sb, cfg.legend, legendSeekCosts...)
		}
		writeRangeCosts(&sb, rep.Results)
		writeTreeFilter(&sb, rep.Results)
		if writeLevels(&sb, rep.Results) {
			legend(&sb, cfg.legend, legendLevels...)
		}
		baseline := 0
		if !cfg.compareFilters {
			baseline = cfg.baselineReads
		}
		if writeComparisons(&sb, rep.Comparisons, baseline) {
			legend(&sb, cfg.legend, legendComparison(baseline)...)
		}
	}
	if writeCPU(&sb, rep.Results) {
		legend(&sb, cfg.legend, legendCPU...)
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(&sb, "WARNING: %s\n", warn)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func writeHeader(sb *strings.Builder, rep *report) {
	cfg, run := rep.cfg, rep.Run
	load := ""
	if run.LoadStart != nil && run.LoadEnd != nil {
		load = fmt.Sprintf("; load average %.2f -> %.2f", *run.LoadStart, *run.LoadEnd)
	}
	fmt.Fprintf(sb, "kvbench  %s %s/%s, %d CPUs, started %s, %.1f s wall%s\n",
		run.GoVersion, run.OS, run.Arch, run.CPUs, run.Started, run.WallSeconds, load)
	if run.Commit != "" {
		dirty := ""
		if run.Modified {
			dirty = ", with uncommitted changes"
		}
		fmt.Fprintf(sb, "commit   %s%s\n", run.Commit[:min(12, len(run.Commit))], dirty)
	}
	fmt.Fprintf(sb, "data     %d keys of %d B, values of %d B (compressible to ~%.0f%%), %s blocks of %s; WAL %s\n",
		cfg.num, cfg.keySize, cfg.valueSize, cfg.compressionRatio*100, cfg.compression, humanize.IBytes(uint64(cfg.blockSize)), cfg.walMode)
	cache := "off"
	if cfg.cacheSize > 0 {
		cache = humanize.IBytes(uint64(cfg.cacheSize))
	}
	// What the tables carry: one setting, except in the sweeps, whose
	// settings are listed in their own tables below.
	filters := "filters written with " + cfg.filterLabel()
	switch {
	case len(cfg.sweep) > 0:
		filters = "filters: each -sweep setting below (loaded with " + cfg.filterLabel() + ", then recompacted)"
	case len(cfg.filterSweep) > 0:
		filters = "filters: each -filter_sweep setting below at " + cfg.filterLabel()
	}
	fmt.Fprintf(sb, "reads    %d per workload, %d thread(s), seed %d; block cache %s; %s\n",
		cfg.reads, cfg.threads, cfg.seed, cache, filters)
	where := rep.Run.DBDir
	if rep.Run.DBTemporary {
		where += " (temporary, removed)"
	}
	fmt.Fprintf(sb, "db       %s\n\n", where)
}

func bitsLabel(bits int) string {
	if bits < 0 {
		return "no filter"
	}
	return fmt.Sprintf("%d bits/key", bits)
}

func writeLoad(sb *strings.Builder, rep *report) {
	l := rep.Load
	fills := rep.cfg.fills()
	what := "existing database"
	if len(fills) > 0 {
		what = strings.Join(fills, ", ")
	}
	fmt.Fprintf(sb, "load     %s; flush + settle %.1f s; %d flushes, %d compactions, write amplification %.2f, %d write stalls (%.1f s)\n\n",
		what, l.SettleSeconds, l.Flushes, l.Compactions, l.WriteAmplification, l.WriteStalls, l.WriteStallSeconds)
}

func writeShape(sb *strings.Builder, title string, s shape) {
	fmt.Fprintf(sb, "%s\n", title)
	t := &table{}
	t.add("level", "tables", "size")
	for _, l := range s.Levels {
		if l.Files > 0 {
			t.add(fmt.Sprintf("L%d", l.Level), fmt.Sprint(l.Files), humanize.IBytes(uint64(l.Bytes)))
		}
	}
	t.add("total", fmt.Sprint(s.Files), humanize.IBytes(uint64(s.Bytes)))
	_ = t.write(sb)
	fmt.Fprintf(sb, "filters  %s in memory for %d keys: %.2f bits/key spent\n",
		humanize.IBytes(uint64(s.FilterBytes)), s.FilterKeys, s.FilterBitsPerKey)
	// Range filters are named only when the tables have them, so reports
	// of runs without them print as they always did.
	var rangeFilters string
	if s.RangeFilterBytesResident > 0 {
		rangeFilters = ", range filters " + humanize.IBytes(uint64(s.RangeFilterBytesResident))
	}
	fmt.Fprintf(sb, "memory   resident outside the block cache: filters %s, indexes %s%s (%.2f bytes/key); peak RSS %s\n\n",
		humanize.IBytes(uint64(s.FilterBytesResident)), humanize.IBytes(uint64(s.IndexBytesResident)), rangeFilters,
		s.ResidentBytesPerKey, humanize.IBytes(uint64(s.PeakRSS)))
}

func loadResults(results []*result) []*result {
	var out []*result
	for _, r := range results {
		if r.Pass == "load" {
			out = append(out, r)
		}
	}
	return out
}

// label names a result in the tables: the workload, and the pass when
// one workload runs in several.
func label(r *result) string {
	switch r.Pass {
	case "filters", "ignore_filters":
		mode := map[string]string{"filters": "filters", "ignore_filters": "filters ignored"}[r.Pass]
		if r.Round > 1 {
			return fmt.Sprintf("%s (%s, round %d)", r.Benchmark, mode, r.Round)
		}
		return r.Benchmark + " (" + mode + ")"
	case "sweep":
		return fmt.Sprintf("%s (%s)", r.Benchmark, bitsLabel(r.BloomBits))
	case "filter_sweep":
		return fmt.Sprintf("%s (%s)", r.Benchmark, r.FilterSetting)
	case rangeSweepPass:
		if isEmptyRangeWorkload(r.Benchmark) {
			return fmt.Sprintf("%s (%g bits, W=%d)", r.Benchmark, r.RangeFilterBits, r.RangeWidth)
		}
		return fmt.Sprintf("%s (%g bits)", r.Benchmark, r.RangeFilterBits)
	}
	return r.Benchmark
}

func writeLatency(sb *strings.Builder, results []*result) {
	if len(results) == 0 {
		return
	}
	t := &table{}
	t.add("latency", "ops", "ops/s", "p50 µs", "p95 µs", "p99 µs", "p99.9 µs", "max µs", "seconds")
	for _, r := range results {
		t.add(label(r), fmt.Sprint(r.Ops), fmt.Sprintf("%.0f", r.OpsPerSec),
			fmtMicros(r.P50us), fmtMicros(r.P95us), fmtMicros(r.P99us), fmtMicros(r.P999us), fmtMicros(r.MaxUs),
			fmt.Sprintf("%.2f", r.Seconds))
	}
	_ = t.write(sb)
	sb.WriteString("\n")
}

// writeCPU prints what each workload cost in CPU time, and reports
// whether it had rows: none for reports that predate the figure, which
// therefore print as they always did.
func writeCPU(sb *strings.Builder, results []*result) bool {
	t := &table{}
	t.add("cpu time", "ops", "CPU s", "wall s", "cores busy", "CPU µs/op")
	n := 0
	for _, r := range results {
		if r.CPUSeconds <= 0 {
			continue
		}
		n++
		t.add(label(r), fmt.Sprint(r.Ops), fmt.Sprintf("%.2f", r.CPUSeconds), fmt.Sprintf("%.2f", r.Seconds),
			fmt.Sprintf("%.2f", r.CPUSeconds/max(r.Seconds, 1e-9)), fmt.Sprintf("%.2f", r.CPUUsPerOp))
	}
	if n == 0 {
		return false
	}
	_ = t.write(sb)
	sb.WriteString("\n")
	return true
}

func filterState(r *result) string {
	switch {
	case r.BloomBits < 0:
		return "none"
	case !r.FiltersConsulted:
		return fmt.Sprintf("%d, ignored", r.BloomBits)
	}
	return fmt.Sprint(r.BloomBits)
}

// writeCosts prints the per-Get table and reports whether it had rows.
func writeCosts(sb *strings.Builder, results []*result) bool {
	t := &table{}
	t.add("per Get", "bits/key", "tables", "filter neg", "filter FP", "FP rate", "theory", "data blocks", "bytes read", "cache hits", "found")
	n := 0
	for _, r := range results {
		if r.Gets == 0 {
			continue
		}
		n++
		t.add(label(r), filterState(r), fmtFloat(r.TablesProbedPerGet, 3), fmtFloat(r.FilterNegativesPerGet, 3),
			fmtFloat(r.FilterFalsePositivesPerGet, 4), fmtPercent(r.FPRateMeasured), fmtPercent(r.FPRateTheory),
			fmtFloat(r.DataBlocksPerGet, 3), fmtFloat(r.BytesReadPerGet, 0), fmtPercent(r.CacheHitRate),
			fmt.Sprintf("%d/%d", r.Found, r.Ops))
	}
	if n == 0 {
		return false
	}
	_ = t.write(sb)
	sb.WriteString("\n")
	writeFilterCache(sb, results)
	return true
}

// writeFilterCache shows, with -cache_filter_blocks, what keeping filters
// in the block cache cost the Gets: lookups, misses read from files, and
// the filter memory held at the end.
func writeFilterCache(sb *strings.Builder, results []*result) {
	// The index partitions' and skipped filters' columns show only where
	// there were some, so reports that predate them print as they did.
	withIndex, withSkips := false, false
	for _, r := range results {
		withIndex = withIndex || r.IndexPartitionReads > 0
		withSkips = withSkips || r.FilterSkips > 0
	}
	t := &table{}
	header := []string{"filters in block cache", "lookups/Get", "hit rate", "reads/Get", "resident", "pinned"}
	if withIndex {
		header = append(header, "index reads/Get")
	}
	if withSkips {
		header = append(header, "skipped/Get")
	}
	t.add(header...)
	n := 0
	for _, r := range results {
		lookups := r.FilterCacheHits + r.FilterCacheMisses
		if r.Gets == 0 || lookups == 0 && r.FilterBytesPinned == 0 {
			continue
		}
		n++
		g := float64(r.Gets)
		hitRate := "-"
		if lookups > 0 {
			hitRate = fmt.Sprintf("%.2f%%", 100*float64(r.FilterCacheHits)/float64(lookups))
		}
		row := []string{label(r), fmt.Sprintf("%.3f", float64(lookups)/g), hitRate, fmt.Sprintf("%.4f", float64(r.FilterBlockReads)/g),
			humanize.IBytes(uint64(r.FilterBytesResident)), humanize.IBytes(uint64(r.FilterBytesPinned))}
		if withIndex {
			row = append(row, fmt.Sprintf("%.4f", float64(r.IndexPartitionReads)/g))
		}
		if withSkips {
			row = append(row, fmt.Sprintf("%.4f", float64(r.FilterSkips)/g))
		}
		t.add(row...)
	}
	if n == 0 {
		return
	}
	_ = t.write(sb)
	sb.WriteString("\n")
}

// writeSeekCosts shows what iterator workloads cost per operation (a seek
// and its steps): tables a prefix seek considered, skipped on their filter
// or let through for nothing, and data blocks and bytes read. It reports
// whether there were any.
func writeSeekCosts(sb *strings.Builder, results []*result) bool {
	t := &table{}
	t.add("per seek", "bits/key", "tables", "filter neg", "filter FP", "data blocks", "bytes read", "found")
	n := 0
	for _, r := range results {
		if r.Seeks == 0 {
			continue
		}
		n++
		t.add(label(r), filterState(r), fmtFloat(r.IterTablesProbedPerOp, 3), fmtFloat(r.IterFilterNegativesPerOp, 3),
			fmtFloat(r.IterFilterFalsePositivesPerOp, 4), fmtFloat(r.DataBlocksPerOp, 3), fmtFloat(r.BytesPerOp, 0),
			fmt.Sprintf("%d", r.Found))
	}
	if n == 0 {
		return false
	}
	_ = t.write(sb)
	sb.WriteString("\n")
	return true
}

// writeLevels shows, per read workload, where Gets went level by level:
// tables probed per Get, and data blocks read per Get after the filters.
// It reports whether there were any Gets to show.
func writeLevels(sb *strings.Builder, results []*result) bool {
	deepest := -1
	for _, r := range results {
		for l, p := range r.TablesProbedPerGetByLevel {
			if p > 0 {
				deepest = max(deepest, l)
			}
		}
	}
	if deepest < 0 {
		return false
	}
	t := &table{}
	head := []string{"probed -> blocks"}
	for l := 0; l <= deepest; l++ {
		head = append(head, fmt.Sprintf("L%d", l))
	}
	t.add(head...)
	for _, r := range results {
		if len(r.TablesProbedPerGetByLevel) == 0 {
			continue
		}
		row := []string{label(r)}
		for l := 0; l <= deepest; l++ {
			row = append(row, fmt.Sprintf("%.3f -> %.3f", r.TablesProbedPerGetByLevel[l], r.DataBlocksPerGetByLevel[l]))
		}
		t.add(row...)
	}
	sb.WriteString("per level: tables probed per Get -> data blocks read per Get\n")
	_ = t.write(sb)
	sb.WriteString("\n")
	return true
}

// writeComparisons prints what the filters bought: a sentence per read
// workload, then the with/without table. baseline is the without pass's
// reads per workload in the default run (0: -compare_filters, all of
// them). It reports whether there was anything to compare.
func writeComparisons(sb *strings.Builder, cs []comparison, baseline int) bool {
	if len(cs) == 0 {
		return false
	}
	fmt.Fprintf(sb, "what the filters bought: the same tables (%s) read consulting their filters, then ignoring them\n", bitsLabel(cs[0].BloomBits))
	for _, c := range cs {
		if line := boughtLine(c); line != "" {
			fmt.Fprintf(sb, "  %s\n", line)
		}
	}
	sb.WriteString("\n")
	t := &table{}
	t.add("with vs without filters", "filters", "ignored", "ratio")
	row := func(name string, p pair, prec int) {
		if p.Filters == nil && p.IgnoreFilters == nil {
			return // a per-Get figure of a workload without Gets (scan)
		}
		t.add("  "+name, fmtFloat(p.Filters, prec), fmtFloat(p.IgnoreFilters, prec), fmtFloat(p.Ratio, 3))
	}
	for _, c := range cs {
		name := c.Benchmark
		if c.Round > 1 {
			name += fmt.Sprintf(" (round %d)", c.Round)
		}
		t.add(name, "", "", "")
		row("data blocks/Get", c.DataBlocksPerGet, 3)
		row("bytes read/Get", c.BytesReadPerGet, 0)
		row("data blocks/seek", c.DataBlocksPerOp, 3)
		row("bytes read/seek", c.BytesPerOp, 0)
		row("p50 µs", c.P50us, 2)
		row("p99 µs", c.P99us, 2)
		row("p99.9 µs", c.P999us, 2)
		row("ops/s", c.OpsPerSec, 0)
	}
	_ = t.write(sb)
	sb.WriteString("\n")
	return true
}

// boughtLine says in words what the filters changed for one workload:
// data blocks read per operation (exact) and throughput (noisy).
func boughtLine(c comparison) string {
	blocks, op := c.DataBlocksPerGet, "Get"
	if blocks.Filters == nil {
		blocks, op = c.DataBlocksPerOp, "seek"
	}
	if blocks.Filters == nil || blocks.IgnoreFilters == nil {
		return ""
	}
	with, without := *blocks.Filters, *blocks.IgnoreFilters
	change := "the same number of"
	switch {
	case without > 0 && with < without:
		change = fmt.Sprintf("%.0f%% fewer", 100*(1-with/without))
	case with > without:
		change = fmt.Sprintf("%.0f%% more", 100*(with/without-1))
	}
	speed := ""
	if r := c.OpsPerSec.Ratio; r != nil {
		speed = fmt.Sprintf("; %.2fx the %ss per second", *r, op)
	}
	name := c.Benchmark
	if c.Round > 1 {
		name += fmt.Sprintf(" (round %d)", c.Round)
	}
	return fmt.Sprintf("%-12s %s data blocks read per %s (%.3f with filters, %.3f without)%s",
		name+":", change, op, with, without, speed)
}

func writeSweep(sb *strings.Builder, rep *report) {
	if len(rep.Sweep) > 0 {
		// Each setting's own tree: recompacting with other filter sizes
		// can cut the tables at other keys, so one tree for all (once the
		// first setting's, above a table that disagreed) would mislead.
		fmt.Fprintf(sb, "sweep    each setting: Compact(nil, nil) rebuilds every filter, then the reads run on a reopened database\n")
		t := &table{}
		t.add("recompaction", "seconds", "tables", "tree", "filter memory", "bits/key spent")
		for _, st := range rep.Sweep {
			var levels []string
			for _, l := range st.Shape.Levels {
				if l.Files > 0 {
					levels = append(levels, fmt.Sprintf("L%d %d", l.Level, l.Files))
				}
			}
			t.add(bitsLabel(st.BloomBits), fmt.Sprintf("%.1f", st.RecompactSeconds), fmt.Sprint(st.Shape.Files), strings.Join(levels, ", "),
				humanize.IBytes(uint64(st.Shape.FilterBytes)), fmt.Sprintf("%.2f", st.Shape.FilterBitsPerKey))
		}
		_ = t.write(sb)
		sb.WriteString("\n")
	}
	for _, name := range rep.cfg.readWorkloads() {
		t := &table{}
		// Iterator workloads are counted per seek, from the Iter* metrics
		// (their Gets columns would be empty).
		op := "Get"
		if isSeekWorkload(name) {
			op = "seek"
		}
		t.add("sweep: "+name, "spent", "k", "filter mem", "FP rate", "theory", "tables/"+op, "blocks/"+op, "bytes/"+op, "cache hits", "p50 µs", "p99 µs", "p99.9 µs", "ops/s")
		for _, r := range rep.Results {
			if r.Pass != "sweep" || r.Benchmark != name {
				continue
			}
			k := "-"
			if r.FilterProbes > 0 {
				k = fmt.Sprint(r.FilterProbes)
			}
			fpRate, tables, blocks, bytes := r.FPRateMeasured, r.TablesProbedPerGet, r.DataBlocksPerGet, r.BytesReadPerGet
			if r.Seeks > 0 {
				fpRate, tables, blocks, bytes = seekFPRate(r), r.IterTablesProbedPerOp, r.DataBlocksPerOp, r.BytesPerOp
			}
			t.add(bitsLabel(r.BloomBits), fmt.Sprintf("%.2f", r.FilterBitsPerKey), k, humanize.IBytes(uint64(r.FilterBytes)),
				fmtPercent(fpRate), fmtPercent(r.FPRateTheory), fmtFloat(tables, 3),
				fmtFloat(blocks, 4), fmtFloat(bytes, 0), fmtPercent(r.CacheHitRate),
				fmtMicros(r.P50us), fmtMicros(r.P99us), fmtMicros(r.P999us), fmt.Sprintf("%.0f", r.OpsPerSec))
		}
		_ = t.write(sb)
		sb.WriteString("\n")
	}
}

// writeFilterSweep prints, per -filter_sweep setting, its tree's filter
// memory and policy by level, then per read workload the filters' cost
// and effect side by side.
func writeFilterSweep(sb *strings.Builder, rep *report) {
	if rep.cfg.rebuildFilters {
		fmt.Fprintf(sb, "filter sweep on one tree: each setting rewrites the filters of the same tables (-rebuild_filters; \"load s\" is the rewrite), budget %s\n", budgetLabel(rep.cfg))
	} else {
		fmt.Fprintf(sb, "filter sweep: each setting loads the same keys in the same order into a new database, budget %s\n", budgetLabel(rep.cfg))
	}
	t := &table{}
	t.add("setting", "policy", "tables", "filter mem", "bits/key", "mem by level", "policy bits by level", "build ns/key", "probe ns", "load s")
	for _, fr := range rep.FilterSweep {
		var mem, bits []string
		for _, l := range fr.Shape.Levels {
			if l.Files > 0 {
				mem = append(mem, fmt.Sprintf("L%d %s", l.Level, humanize.IBytes(uint64(l.FilterBytes))))
				bits = append(bits, fmt.Sprintf("L%d %.2f", l.Level, l.FilterBitsPerKey))
			}
		}
		t.add(fr.Setting, fr.Policy, fmt.Sprint(fr.Shape.Files), humanize.IBytes(uint64(fr.Shape.FilterBytes)),
			fmt.Sprintf("%.2f", fr.Shape.FilterBitsPerKey), strings.Join(mem, " "), strings.Join(bits, " "),
			fmt.Sprintf("%.0f", fr.BuildNsPerKey), fmt.Sprintf("%.0f", fr.ProbeNs), fmt.Sprintf("%.1f", fr.LoadSeconds))
	}
	_ = t.write(sb)
	sb.WriteString("\n")
	for _, name := range rep.cfg.readWorkloads() {
		t := &table{}
		t.add(name, "FP rate", "theory", "FPs/Get", "tables/Get", "blocks/Get", "bytes/Get", "p50 µs", "p99 µs", "ops/s")
		for _, r := range rep.Results {
			if r.Pass != "filter_sweep" || r.Benchmark != name {
				continue
			}
			t.add(r.FilterSetting, fmtPct(r.FPRateMeasured), fmtPct(r.FPRateTheory), fmtRatio(r.FilterFalsePositivesPerGet),
				fmtRatio(r.TablesProbedPerGet), fmtRatio(r.DataBlocksPerGet), fmtRatio(r.BytesReadPerGet),
				fmtMicros(r.P50us), fmtMicros(r.P99us), fmt.Sprintf("%.0f", r.OpsPerSec))
		}
		_ = t.write(sb)
		sb.WriteString("\n")
		writeFilterSweepLevels(sb, name, rep.Results, rep.cfg.legend)
	}
}

// writeFilterSweepLevels prints, for one read workload of a filter sweep,
// where each setting's false positives came from: per level, the tables
// the level held, the tables probed per Get there and the false positives
// per Get there. Settings loaded separately may settle into different
// trees (level-0 tables above all); this shows it beside the figures.
// on: print the legend under the table.
func writeFilterSweepLevels(sb *strings.Builder, name string, results []*result, on bool) {
	var rows []*result
	deepest := -1
	for _, r := range results {
		if r.Pass != "filter_sweep" || r.Benchmark != name || len(r.TablesProbedPerGetByLevel) == 0 {
			continue
		}
		rows = append(rows, r)
		for l, p := range r.TablesProbedPerGetByLevel {
			if p > 0 {
				deepest = max(deepest, l)
			}
		}
	}
	if deepest < 0 {
		return
	}
	t := &table{}
	head := []string{name + " by level"}
	for l := 0; l <= deepest; l++ {
		head = append(head, fmt.Sprintf("L%d", l))
	}
	t.add(head...)
	for _, r := range rows {
		row := []string{r.FilterSetting}
		for l := 0; l <= deepest; l++ {
			files := 0
			if l < len(r.FilesPerLevel) {
				files = r.FilesPerLevel[l]
			}
			fp := 0.0
			if l < len(r.FalsePositivesPerGetByLevel) {
				fp = r.FalsePositivesPerGetByLevel[l]
			}
			row = append(row, fmt.Sprintf("(%d) %.3f -> %.4f", files, r.TablesProbedPerGetByLevel[l], fp))
		}
		t.add(row...)
	}
	_ = t.write(sb)
	sb.WriteString("\n")
	legend(sb, on, "Each cell: (tables in the level) tables probed there per Get -> false positives there per Get.")
}

func budgetLabel(cfg *config) string { return cfg.filterLabel() }

func fmtPct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f%%", 100**v)
}

func fmtRatio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", *v)
}

// isSeekWorkload reports whether name is an iterator workload (its costs
// are counted per seek from the Iter* metrics).
func isSeekWorkload(name string) bool {
	return name == seekPrefix || name == seekPrefixMissing
}

// seekFPRate is the false-positive rate of the filter probes prefix seeks
// made: tables a filter let through for nothing over all tables it was asked
// about and that did not hold the prefix (nil when there were none). For
// absent rows that is every probe.
func seekFPRate(r *result) *float64 {
	if r.IterFilterNegativesPerOp == nil || r.IterFilterFalsePositivesPerOp == nil {
		return nil
	}
	neg, fp := *r.IterFilterNegativesPerOp, *r.IterFilterFalsePositivesPerOp
	if neg+fp == 0 {
		return nil
	}
	rate := fp / (neg + fp)
	return &rate
}
