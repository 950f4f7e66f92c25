package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEFromJSON and TestBenchmarksFromJSON tie the bench/compare
// figures of README.md and docs/benchmarks.md to the JSON reports
// committed in docs/benchmarks/ (TestPublishedReports checks the other
// way: every table line a report prints is in docs/benchmarks.md). A
// comment
//
//	<!-- bench/compare: docs/benchmarks/a.json [docs/benchmarks/b.json ...] -->
//
// opens a block that the next HTML comment or heading closes (<!--
// bench/compare: end --> closes it without opening another), but for the
// headings of the pasted report text itself. In it, every
// table line is a line that `go run . -report FILE -summary` (the README's
// rows) or `go run . -report FILE` prints for one of the files (rows may
// be left out, not changed), and every figure of the prose is in that
// output. Outside every block, no line names Pebble or goleveldb beside a
// ratio: a hand-written comparison fails.
func TestREADMEFromJSON(t *testing.T) {
	checkDoc(t, "README.md")
}

func TestBenchmarksFromJSON(t *testing.T) {
	checkDoc(t, "docs/benchmarks.md")
}

func checkDoc(t *testing.T, name string) {
	doc, err := os.ReadFile(filepath.Join("../..", name))
	if err != nil {
		t.Fatal(err)
	}
	if n := checkSummaryBlocks(t, name, string(doc)); n == 0 {
		t.Errorf("%s: no <!-- bench/compare: FILE.json --> block", name)
	}
}

var (
	summaryMarker = regexp.MustCompile(`^<!-- bench/compare: (.*) -->$`)
	// A figure: digits with a decimal point or thousands separators, or a
	// ratio (1.36x, 3x), not part of a longer token (v2.1.7, go1.26).
	docFigure  = regexp.MustCompile(`(^|[\s(\[/|~-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?x?|\d+\.\d+x?|\d+x)([\s)\]%,;:/|]|\.(\s|$)|$)`)
	peerRatio  = regexp.MustCompile(`(?i)(pebble|goleveldb).*\d(\.\d+)?x\b|\d(\.\d+)?x\b.*(pebble|goleveldb)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// checkSummaryBlocks checks the bench/compare blocks of doc (named name in
// messages) and returns how many there are.
func checkSummaryBlocks(t *testing.T, name, doc string) int {
	t.Helper()
	blocks := 0
	var printed map[string]bool // lines -report [-summary] prints for the open block's files
	var printedText string
	var files string
	inFence := false
	for i, line := range strings.Split(doc, "\n") {
		line = strings.TrimRight(line, " ")
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := summaryMarker.FindStringSubmatch(line); m != nil && m[1] != "end" {
			blocks++
			files = m[1]
			printed = map[string]bool{}
			var all bytes.Buffer
			for _, f := range strings.Fields(files) {
				rep, err := readReport(filepath.Join("../..", f))
				if err != nil {
					t.Errorf("%s line %d: %v", name, i+1, err)
					continue
				}
				writeSummaryHeader(&all)
				writeSummary(&all, rep, filepath.Join("../..", f))
				writeText(&all, rep)
			}
			printedText = all.String()
			for _, l := range strings.Split(printedText, "\n") {
				printed[l] = true
			}
			continue
		}
		if strings.HasPrefix(line, "<!--") || strings.HasPrefix(line, "#") && !printedHeading(printedText, line) {
			printed = nil
		}
		if printed == nil {
			if peerRatio.MatchString(inlineCode.ReplaceAllString(line, "")) {
				t.Errorf("%s line %d: a ratio against a peer outside a <!-- bench/compare: FILE.json --> block:\n%s", name, i+1, line)
			}
			continue
		}
		if strings.HasPrefix(line, "|") {
			if !printed[line] {
				t.Errorf("%s line %d: the row\n%s\nis not a line of `go run . -report FILE [-summary]` for %s (regenerate it)", name, i+1, line, files)
			}
			continue
		}
		for _, m := range docFigure.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			if !containsFigure(printedText, m[2]) {
				t.Errorf("%s line %d: the figure %s is in nothing `go run . -report FILE [-summary]` prints for %s", name, i+1, m[2], files)
			}
		}
	}
	return blocks
}

// printedHeading reports whether the heading line is one the report text
// prints, at any level (a document nests the pasted text under its own
// headings).
func printedHeading(printed, line string) bool {
	text := strings.TrimLeft(line, "#")
	for _, l := range strings.Split(printed, "\n") {
		if strings.HasPrefix(l, "#") && strings.TrimLeft(l, "#") == text {
			return true
		}
	}
	return false
}

// containsFigure reports whether fig is in text as a whole figure: 1.2 is
// not in 1.25, nor 25 in 125.
func containsFigure(text, fig string) bool {
	return regexp.MustCompile(`(^|[^\d.,])` + regexp.QuoteMeta(fig) + `($|[^\d]|\.\D|\.$)`).MatchString(text)
}

// TestSummaryRows: each -summary row of a committed sample holds the
// report's own ratios, in the columns' order, and a command that sets
// every flag the run set (output flags aside) to the run's value.
func TestSummaryRows(t *testing.T) {
	rep, err := readReport("testdata/sample-report.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeSummary(&out, rep, "../../docs/benchmarks/sample.json")
	rows := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var want []string
	for _, p := range rep.Pairings {
		for _, peer := range p.Engines[1:] {
			cells := []string{}
			for _, wl := range summaryWorkloads {
				cell := fmt.Sprintf("%.2fx", p.Ratios[wl][peer])
				if rangesOverlap(p, wl, bloomkvEngine.name, peer) {
					cell += tieMark // TestSummaryTies
				}
				cells = append(cells, cell)
			}
			want = append(want, strings.Join(cells, " | "))
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want one per peer, %d:\n%s", len(rows), len(want), out.String())
	}
	for i, row := range rows {
		if !strings.Contains(row, " | "+want[i]+" | ") {
			t.Errorf("row %d\n%s\nlacks the ratios %s", i, row, want[i])
		}
		if !strings.Contains(row, "([sample.json](docs/benchmarks/sample.json))") {
			t.Errorf("row %d links no docs/benchmarks/sample.json:\n%s", i, row)
		}
	}

	cmd := rerunCommand(rep)
	args, ok := strings.CutPrefix(cmd, "go run . ")
	if !ok {
		t.Fatalf("rerun command %q", cmd)
	}
	cfg, err := parseConfig(strings.Fields(args), io.Discard)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	got, was := viaJSON(cfg.flags), viaJSON(rep.Flags)
	for name, v := range was {
		if !slices.Contains(outputFlags, name) && !reflect.DeepEqual(got[name], v) {
			t.Errorf("%s sets -%s to %v; the run had %v", cmd, name, got[name], v)
		}
	}
}

// TestSummaryTies: a ratio is marked (tie) when bloomkv's min-max ops/s
// over the runs overlaps the peer's, and not when the ranges are apart or
// there was one run.
func TestSummaryTies(t *testing.T) {
	runs := func(engine string, ops ...float64) []engineRun {
		var out []engineRun
		for i, o := range ops {
			out = append(out, engineRun{Engine: engine, Run: i + 1, Results: map[string]measurement{fillSeq: {OpsPerSec: o}}})
		}
		return out
	}
	for _, c := range []struct {
		name      string
		bloom, pb []float64
		tie       bool
	}{
		{"apart", []float64{120, 130, 140}, []float64{90, 100, 110}, false},
		{"overlap", []float64{100, 120, 140}, []float64{90, 105, 110}, true},
		{"touching", []float64{110, 120, 130}, []float64{90, 100, 110}, true},
		{"slower but overlapping", []float64{90, 95, 112}, []float64{100, 105, 110}, true},
		{"one run", []float64{100}, []float64{101}, false},
	} {
		p := pairingReport{Engines: []string{bloomkvEngine.name, "pebble"}}
		p.Runs = append(runs(bloomkvEngine.name, c.bloom...), runs("pebble", c.pb...)...)
		p.Ratios = map[string]map[string]float64{fillSeq: {"pebble": c.bloom[len(c.bloom)/2] / c.pb[len(c.pb)/2]}}
		rep := &report{Pairings: []pairingReport{p}}
		rep.Params.Num = 1000000
		rep.Params.Runs = len(c.bloom)
		var out bytes.Buffer
		writeSummary(&out, rep, "x.json")
		if got := strings.Contains(out.String(), tieMark); got != c.tie {
			t.Errorf("%s: marked %v, want %v:\n%s", c.name, got, c.tie, out.String())
		}
		if !rangesOverlap(p, fillSeq, bloomkvEngine.name, "pebble") && c.tie {
			t.Errorf("%s: rangesOverlap false", c.name)
		}
	}
}
