package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// writeText prints the report from its own fields only (never the
// configuration of this process), so that -report prints a run's tables
// again from its JSON: a header, the settings, and per pairing the
// throughput table with its spread, the fills' settle time and write
// amplification, the trees, the memory each engine held, and the
// compactions that ran while reads were timed.
func writeText(w io.Writer, rep *report) {
	pr := rep.Params
	fmt.Fprintf(w, "bench/compare, %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s", rep.Date, rep.Machine.GOOS, rep.Machine.GOARCH,
		rep.Machine.NumCPU, rep.Machine.GOMAXPROCS, rep.Machine.Go)
	if rep.Machine.CPU != "" {
		fmt.Fprintf(w, ", %s", rep.Machine.CPU)
	}
	if rep.LoadStart != nil && rep.LoadEnd != nil {
		fmt.Fprintf(w, ", load average %.2f -> %.2f", *rep.LoadStart, *rep.LoadEnd)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "command: `%s`\n", rep.Command)
	if rep.Note != "" {
		fmt.Fprintln(w, rep.Note)
	}
	var vers []string
	for _, e := range rep.Engines {
		vers = append(vers, e.Name+" "+e.Version)
	}
	fmt.Fprintln(w, strings.Join(vers, ", "))
	fmt.Fprintf(w, "%s keys (%d B keys, %d B values, compression ratio %g), %s ops per read workload (scan: seeks of %d entries), %d reader(s); ",
		thousands(float64(pr.Num)), pr.KeySize, pr.ValueSize, pr.CompressionRatio, thousands(float64(pr.Reads)), pr.ScanLength, pr.Threads)
	if pr.Runs > 1 {
		fmt.Fprintf(w, "medians of %d runs (engine order rotated between runs), min-max beside them\n", pr.Runs)
	} else {
		fmt.Fprintln(w, "one run")
	}
	fmt.Fprintln(w, pr.SettingsLine)
	fmt.Fprintf(w, "Memory: %s. Settle: %s. Read-triggered compactions: %s.\n", map[string]string{
		"equal":  "equal (-memory equal: block cache + what an engine keeps outside it for reads = the cache size; bloomkv's filters in its cache)",
		"as-set": "as set (-memory as-set: every block cache the same size; bloomkv's filters and index outside it)",
	}[pr.Memory], map[string]string{
		"quiet":   "flush, then no background work for 2 s (every engine); the reads run on a reopened database, caches cold",
		"compact": "a full manual compaction, then as quiet (every engine); the reads run on a reopened database, caches cold",
	}[pr.Settle], map[bool]string{false: "off where the engine allows (bloomkv, Pebble; goleveldb cannot)", true: "on, each engine's default"}[pr.ReadCompactions])
	for _, n := range rep.SettingNotes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
	for _, p := range rep.Pairings {
		writePairing(w, rep, &p)
	}
	fmt.Fprintf(w, "\nratio = bloomkv median ops/s / peer median ops/s (above 1: bloomkv is faster). Latencies are per operation; took %.0f s.\n", rep.Seconds)
}

func writePairing(w io.Writer, rep *report, p *pairingReport) {
	pr := rep.Params
	fmt.Fprintf(w, "\n### %s (%d writer(s) per fill)\n\n", p.Durability, p.Writers)
	for _, name := range p.Engines {
		fmt.Fprintf(w, "- %s: %s\n", name, p.Modes[name])
	}
	for _, name := range pr.Engines {
		if why, ok := p.Absent[name]; ok {
			fmt.Fprintf(w, "- %s: not in this pairing: %s\n", name, why)
		}
	}
	if len(p.Engines) == 0 {
		return
	}
	fmt.Fprintln(w)
	var peers []string
	for _, name := range p.Engines {
		if name != bloomkvEngine.name {
			peers = append(peers, name)
		}
	}
	writeEngineTable(w, pr, p, peers, engineTable{
		unit:  "ops/s",
		extra: []string{"p50 µs", "p99 µs"},
		has:   func(measurement) bool { return true },
		cells: func(m measurement) []string {
			return []string{thousands(m.OpsPerSec), latency(m.P50us), latency(m.P99us)}
		},
		spread:    func(lo, hi measurement) string { return compact(lo.OpsPerSec) + "-" + compact(hi.OpsPerSec) },
		ratioHead: func(peer string) string { return "bloomkv/" + peer },
		ratio: func(wl, peer string) (float64, bool) {
			r, ok := p.Ratios[wl][peer]
			return r, ok
		},
	})
	fmt.Fprintln(w)
	writeCPU(w, pr, p, peers)

	// Per engine, figures over the runs: median (min-max).
	runsOf := func(name string) []engineRun {
		var rs []engineRun
		for _, r := range p.Runs {
			if r.Engine == name {
				rs = append(rs, r)
			}
		}
		return rs
	}
	over := func(rs []engineRun, f func(engineRun) float64, format func(float64) string) string {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, f(r))
		}
		if len(xs) == 0 {
			return "-"
		}
		med := format(quantile(slices.Clone(xs), 0.5))
		lo, hi := format(quantile(slices.Clone(xs), 0)), format(quantile(xs, 1))
		if lo == hi {
			return med
		}
		return fmt.Sprintf("%s (%s-%s)", med, lo, hi)
	}
	fmt.Fprintln(w, "Fill and settle (fillrandom, then the settle before the reads):")
	fmt.Fprintln(w)
	for _, name := range p.Engines {
		rs := runsOf(name)
		fmt.Fprintf(w, "- %s: settle %s s, write amplification %s (log + tables written / keys and values)\n", name,
			over(rs, func(r engineRun) float64 { return r.SettleSeconds }, func(x float64) string { return fmt.Sprintf("%.1f", x) }),
			over(rs, func(r engineRun) float64 { return r.FillWriteAmp }, func(x float64) string { return fmt.Sprintf("%.2f", x) }))
	}
	fmt.Fprintln(w)
	for _, name := range p.Engines {
		for _, r := range runsOf(name) {
			if r.Settled == nil || r.Run != 1 {
				continue
			}
			fmt.Fprintf(w, "- %s tree for the reads (run 1): %s", name, r.Settled)
			if r.AfterReads != nil && !slices.Equal(r.AfterReads.TablesPerLevel, r.Settled.TablesPerLevel) {
				fmt.Fprintf(w, "; after the reads: %s (compacted while reads were timed)", r.AfterReads)
			}
			fmt.Fprintln(w)
		}
	}

	// Memory: what each engine held for reads after them, and its peak.
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Memory for reads (after the read workloads; filter and index bytes per key over all live tables, median of runs):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| engine | block cache | filters B/key | index B/key | held outside the cache | cache + outside | peak RSS | peak anon RSS |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
	perKey := func(x float64) string { return fmt.Sprintf("%.2f", x/float64(max(pr.Num, 1))) }
	for _, name := range p.Engines {
		rs := runsOf(name)
		var withMem []engineRun
		for _, r := range rs {
			if r.Memory != nil {
				withMem = append(withMem, r)
			}
		}
		mem := func(f func(*memoryReport) float64, format func(float64) string) string {
			return over(withMem, func(r engineRun) float64 { return f(r.Memory) }, format)
		}
		mibs := func(x float64) string { return fmt.Sprintf("%.1f MiB", x/(1<<20)) }
		mibs2 := func(x float64) string {
			if x < 1<<20 {
				return fmt.Sprintf("%.0f KiB", x/(1<<10))
			}
			return fmt.Sprintf("%.2f MiB", x/(1<<20))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
			mem(func(m *memoryReport) float64 { return float64(m.BlockCache) }, mibs2),
			mem(func(m *memoryReport) float64 { return float64(m.AfterReads.FilterBytes) }, perKey),
			mem(func(m *memoryReport) float64 { return float64(m.AfterReads.IndexBytes) }, perKey),
			mem(func(m *memoryReport) float64 { return float64(m.AfterReads.OutsideCacheBytes) }, mibs2),
			mem(func(m *memoryReport) float64 { return float64(m.BlockCache + m.AfterReads.OutsideCacheBytes) }, mibs2),
			mem(func(m *memoryReport) float64 { return float64(m.PeakRSS) }, mibs),
			mem(func(m *memoryReport) float64 { return float64(m.PeakAnon) }, mibs))
	}
	fmt.Fprintln(w)
	if allIsolated(p.Runs) {
		fmt.Fprintln(w, "Peak RSS: each engine run in a process of its own (the harness's key space included, the same for every engine).")
	} else {
		fmt.Fprintln(w, "Peak RSS: every engine in the one harness process, so a peak can include what engines before it left behind.")
	}
	fmt.Fprintln(w, "Peak RSS (VmHWM) counts the pages of files an engine maps: bloomkv reads its tables through mmap, so its figure includes the table pages it touched, page cache that other engines reach through read calls; peak anon RSS (RssAnon, sampled) is each engine's own memory.")

	// Background work while reads were timed.
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Compactions while reads were timed, per run: count [of them read-triggered] / MiB of tables they wrote (? = the engine does not count them: goleveldb):")
	fmt.Fprintln(w)
	for _, name := range p.Engines {
		var parts []string
		for _, wl := range pr.Workloads {
			if isFill(wl) {
				continue
			}
			var runs []string
			any := false
			for _, r := range runsOf(name) {
				c, ok := r.DuringReads[wl]
				if !ok {
					continue
				}
				any = any || c.Compactions > 0 || c.CompactionBytes > 0
				n := "?"
				if c.Compactions >= 0 {
					n = fmt.Sprint(c.Compactions)
					if c.ReadCompactions > 0 {
						n += fmt.Sprintf(" [%d]", c.ReadCompactions)
					}
				}
				runs = append(runs, fmt.Sprintf("%s/%.1f", n, float64(c.CompactionBytes)/(1<<20)))
			}
			if any {
				parts = append(parts, wl+" "+strings.Join(runs, ", "))
			}
		}
		if len(parts) == 0 {
			parts = []string{"none"}
		}
		fmt.Fprintf(w, "- %s: %s\n", name, strings.Join(parts, "; "))
	}
}

// writeCPU prints each engine's CPU time per operation, a table of its
// own under the throughput table, when the runs recorded it (reports made
// before they did print as they always did).
func writeCPU(w io.Writer, pr params, p *pairingReport, peers []string) {
	have := false
	for _, name := range p.Engines {
		for _, m := range p.Medians[name] {
			have = have || m.CPUUsPerOp > 0
		}
	}
	if !have {
		return
	}
	spread := pr.Runs > 1
	what := "one run"
	if spread {
		what = "median of runs, min-max beside it"
	}
	fmt.Fprintf(w, "CPU time per operation, µs (the process's user + system CPU over each timed phase / operations: the engine's calls and its background work meanwhile, and the harness's own loop, alike for every engine; %s):\n\n", what)
	writeEngineTable(w, pr, p, peers, engineTable{
		unit:      "CPU µs/op",
		has:       func(m measurement) bool { return m.CPUUsPerOp > 0 },
		cells:     func(m measurement) []string { return []string{latency(m.CPUUsPerOp)} },
		spread:    func(lo, hi measurement) string { return latency(lo.CPUUsPerOp) + "-" + latency(hi.CPUUsPerOp) },
		ratioHead: func(peer string) string { return peer + "/bloomkv" },
		ratio: func(wl, peer string) (float64, bool) {
			base := p.Medians[bloomkvEngine.name][wl].CPUUsPerOp
			m, ok := p.Medians[peer][wl]
			if !ok || m.CPUUsPerOp <= 0 || base <= 0 {
				return 0, false
			}
			return m.CPUUsPerOp / base, true
		},
	})
	_, haveBase := p.Medians[bloomkvEngine.name]
	fmt.Fprintln(w)
	if haveBase && len(peers) > 0 {
		fmt.Fprintln(w, "peer/bloomkv = the peer's median CPU per operation / bloomkv's (above 1: bloomkv spends less CPU per operation).")
	}
	if !allIsolated(p.Runs) {
		fmt.Fprintln(w, "Every engine ran in the one harness process: an engine's figure can include background work an earlier engine left running.")
	}
	fmt.Fprintln(w)
}

// engineTable says what a table of writeEngineTable holds: per engine, a
// figure of each workload's median (with the smallest and largest run
// beside it when there were several) and extra columns, then one ratio
// column per peer.
type engineTable struct {
	unit      string   // the engine's first column: "NAME unit"
	extra     []string // headings of the columns after the spread
	has       func(m measurement) bool
	cells     func(m measurement) []string // the first column's cell, then extra's
	spread    func(lo, hi measurement) string
	ratioHead func(peer string) string
	ratio     func(wl, peer string) (float64, bool)
}

// writeEngineTable prints the throughput table and the CPU table alike: a
// row per workload, the columns t says per engine, and when bloomkv took
// part, a ratio per peer. A workload an engine has no figure for leaves
// its cells empty.
func writeEngineTable(w io.Writer, pr params, p *pairingReport, peers []string, t engineTable) {
	_, haveBase := p.Medians[bloomkvEngine.name]
	spread := pr.Runs > 1
	head := []string{"workload"}
	align := []string{"---"}
	for _, name := range p.Engines {
		head = append(head, name+" "+t.unit)
		align = append(align, "--:")
		if spread {
			head = append(head, "min-max")
			align = append(align, "--:")
		}
		for _, x := range t.extra {
			head = append(head, x)
			align = append(align, "--:")
		}
	}
	if haveBase {
		for _, peer := range peers {
			head = append(head, t.ratioHead(peer))
			align = append(align, "--:")
		}
	}
	fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(align, "|"))
	for _, wl := range pr.Workloads {
		row := []string{wl}
		for _, name := range p.Engines {
			m, ok := p.Medians[name][wl]
			if !ok || !t.has(m) {
				row = append(row, "")
				if spread {
					row = append(row, "")
				}
				for range t.extra {
					row = append(row, "")
				}
				continue
			}
			cells := t.cells(m)
			row = append(row, cells[0])
			if spread {
				row = append(row, t.spread(p.Mins[name][wl], p.Maxs[name][wl]))
			}
			row = append(row, cells[1:]...)
		}
		if haveBase {
			for _, peer := range peers {
				if r, ok := t.ratio(wl, peer); ok {
					row = append(row, fmt.Sprintf("%.2fx", r))
				} else {
					row = append(row, "")
				}
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// compact formats an ops/s figure in three significant digits with a k or
// M suffix, for the spread columns.
func compact(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.3gM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.3gk", x/1e3)
	}
	return fmt.Sprintf("%.3g", x)
}

// allIsolated reports whether every run with a memory report ran in a
// child process of its own (isolate.go).
func allIsolated(runs []engineRun) bool {
	n := 0
	for _, r := range runs {
		if r.Memory == nil {
			continue
		}
		if !r.Memory.Isolated {
			return false
		}
		n++
	}
	return n > 0
}
