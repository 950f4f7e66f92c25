package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The README's bench/compare rows (-report FILE -summary). Hand-computed
// ratios drift from the runs they quote, so the README prints these lines
// verbatim and TestREADMEFromJSON fails when a row is not what its JSON
// gives today. One row per peer of bloomkv in each pairing: ratios of
// median ops/s (the same figures as the report's bloomkv/peer columns),
// the read memory each side held, and where the figures come from.

// summaryWorkloads are the columns, in the README's order: reads first,
// they are what the filters are for.
var summaryWorkloads = []string{readRandom, readMissing, readMixed, scanBench, fillSeq, fillRandom}

// peerLabels name the peers for a reader who has not read engine_pebble.go.
var peerLabels = map[string]string{
	"goleveldb": "goleveldb",
	"pebble":    "Pebble",
	"pebble-l6": "Pebble reading its L6 filters (`SeekPrefixGE`)",
}

// writeSummaryHeader prints the head of the README's table.
func writeSummaryHeader(w io.Writer) {
	fmt.Fprintf(w, "| bench/compare: bloomkv's ops/s over the peer's | %s | read memory, bloomkv / peer | run |\n", strings.Join(summaryWorkloads, " | "))
	fmt.Fprintf(w, "|---|%s--:|---|\n", strings.Repeat("--:|", len(summaryWorkloads)))
}

// writeSummary prints rep's rows. jsonPath is where the report was read
// from; the link drops its leading ../ (the command runs in bench/compare,
// the README sits at the repository's root).
func writeSummary(w io.Writer, rep *report, jsonPath string) {
	link := filepath.ToSlash(jsonPath)
	for strings.HasPrefix(link, "../") || strings.HasPrefix(link, "./") {
		_, link, _ = strings.Cut(link, "/")
	}
	runs := "1 run"
	if rep.Params.Runs > 1 {
		runs = fmt.Sprintf("medians of %d", rep.Params.Runs)
	}
	source := fmt.Sprintf("`%s`: %s, bloomkv %s, %s ([%s](%s))", rerunCommand(rep), runs, bloomkvCommit(rep), dateOf(rep.Date), path.Base(link), link)
	for _, p := range rep.Pairings {
		if !slices.Contains(p.Engines, bloomkvEngine.name) {
			continue
		}
		for _, peer := range p.Engines {
			if peer == bloomkvEngine.name {
				continue
			}
			how := strings.Join(append([]string{keyCount(rep.Params.Num) + " keys", p.Durability}, modeFlags(rep.Params)...), ", ")
			row := []string{how + ": vs " + peerLabel(peer)}
			for _, wl := range summaryWorkloads {
				if r, ok := p.Ratios[wl][peer]; ok {
					cell := fmt.Sprintf("%.2fx", r)
					if rangesOverlap(p, wl, bloomkvEngine.name, peer) {
						cell += tieMark
					}
					row = append(row, cell)
				} else {
					row = append(row, "")
				}
			}
			row = append(row, fmt.Sprintf("%s / %s MiB", readMemory(p, bloomkvEngine.name), readMemory(p, peer)), source)
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
}

// tieMark follows a ratio whose engines' ops/s ranges over the runs
// overlap: one run of the slower-median engine was as fast as one of the
// faster's, so the median ratio alone does not rank them.
const tieMark = " (tie)"

// tieLegend says what tieMark means, for the line under a table of rows.
const tieLegend = "(tie): bloomkv's min-max ops/s over the runs overlaps the peer's"

// rangesOverlap reports whether a's and b's ops/s in workload wl, min to
// max over p's runs, overlap. A run of one has no range: it marks nothing.
func rangesOverlap(p pairingReport, wl, a, b string) bool {
	span := func(engine string) (lo, hi float64, n int) {
		for _, r := range p.Runs {
			if m, ok := r.Results[wl]; ok && r.Engine == engine && m.OpsPerSec > 0 {
				if n == 0 || m.OpsPerSec < lo {
					lo = m.OpsPerSec
				}
				if n == 0 || m.OpsPerSec > hi {
					hi = m.OpsPerSec
				}
				n++
			}
		}
		return lo, hi, n
	}
	alo, ahi, an := span(a)
	blo, bhi, bn := span(b)
	if an < 2 || bn < 2 {
		return false
	}
	return alo <= bhi && blo <= ahi
}

func peerLabel(name string) string {
	if l, ok := peerLabels[name]; ok {
		return l
	}
	return name
}

// modeFlags names the modes a run left at something other than the
// default, as the flags that chose them, so a row says how it differs.
func modeFlags(pr params) []string {
	var out []string
	if pr.Settings != "defaults" {
		out = append(out, "-settings "+pr.Settings)
	}
	if pr.Memory != "equal" {
		out = append(out, "-memory "+pr.Memory)
	}
	if pr.Settle != "quiet" {
		out = append(out, "-settle "+pr.Settle)
	}
	if pr.ReadCompactions {
		out = append(out, "-read_compactions")
	}
	return out
}

// readMemory is the median over engine's runs of the block cache plus
// what it held outside it for reads, in MiB ("?" without memory figures):
// the "cache + outside" column of the report's memory table.
func readMemory(p pairingReport, engine string) string {
	var xs []float64
	for _, r := range p.Runs {
		if r.Engine == engine && r.Memory != nil {
			xs = append(xs, float64(r.Memory.BlockCache+r.Memory.AfterReads.OutsideCacheBytes)/(1<<20))
		}
	}
	if len(xs) == 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f", quantile(xs, 0.5))
}

// keyCount writes -num as 1M, 10M, or with thousands separators.
func keyCount(n int) string {
	if n >= 1e6 && n%1e6 == 0 {
		return fmt.Sprintf("%dM", n/1e6)
	}
	return thousands(float64(n))
}

// bloomkvCommit is the commit bloomkv was built from, as the report's
// engine version records it ("=> ../.. (commit 98f5c08d6b54)"), cut to
// seven hex digits (and said when the tree had uncommitted changes); the
// whole version when it names no commit.
func bloomkvCommit(rep *report) string {
	for _, e := range rep.Engines {
		if e.Name != bloomkvEngine.name {
			continue
		}
		if _, c, ok := strings.Cut(e.Version, "(commit "); ok {
			hash := c
			if i := strings.IndexAny(c, ",)"); i >= 0 {
				hash = c[:i]
			}
			hash = hash[:min(7, len(hash))]
			if strings.Contains(c, "uncommitted") {
				hash += " (uncommitted changes)"
			}
			return hash
		}
		return e.Version
	}
	return "?"
}

// dateOf is the day of an RFC 3339 time.
func dateOf(t string) string {
	d, _, _ := strings.Cut(t, "T")
	return d
}

// outputFlags only say where a run's output goes or annotate it: a rerun
// needs none of them.
var outputFlags = []string{"json", "note", "cpuprofile", "dir", "report", "summary", "child"}

// rerunCommand is the command that measures what rep did again, from its
// flags (every flag's value) rather than its command line, whose -note can
// run to a paragraph and whose -json names a scratch path: the flags set
// to other than today's defaults, in name order.
func rerunCommand(rep *report) string {
	args := []string{"go run ."}
	defaults, err := parseConfig(nil, io.Discard)
	if err != nil {
		return "?"
	}
	def, got := viaJSON(defaults.flags), viaJSON(rep.Flags)
	for _, name := range slices.Sorted(maps.Keys(got)) {
		v := got[name]
		if slices.Contains(outputFlags, name) || reflect.DeepEqual(v, def[name]) {
			continue
		}
		switch v := v.(type) {
		case bool:
			if v {
				args = append(args, "-"+name)
			} else {
				args = append(args, "-"+name+"=false")
			}
		case float64:
			args = append(args, "-"+name, strconv.FormatFloat(v, 'f', -1, 64))
		default:
			args = append(args, "-"+name, fmt.Sprint(v))
		}
	}
	return strings.Join(args, " ")
}

// viaJSON gives flag values the types they have when read back from a
// report (numbers as float64), so that a fresh run's values and a
// committed report's compare alike.
func viaJSON(flags map[string]any) map[string]any {
	data, err := json.Marshal(flags)
	if err != nil {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil
	}
	return out
}
