package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEFromJSON ties README.md's bench/compare figures to the JSON
// reports committed in docs/benchmarks/, as TestPublishedReports does for
// docs/benchmarks.md's tables. A comment
//
//	<!-- bench/compare: docs/benchmarks/a.json [docs/benchmarks/b.json ...] -->
//
// opens a block that the next heading or HTML comment closes. In it, every
// table line is a line `go run . -report FILE -summary` prints for one of
// the files (rows may be left out, not changed), and every figure of the
// prose is in one of those lines. Outside every block, no line names
// Pebble or goleveldb beside a ratio: a hand-written comparison fails.
func TestREADMEFromJSON(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := checkSummaryBlocks(t, "README.md", string(doc)); n == 0 {
		t.Error("README.md: no <!-- bench/compare: FILE.json --> block")
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
	var printed map[string]bool // lines -summary prints for the open block's files
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
		if m := summaryMarker.FindStringSubmatch(line); m != nil {
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
			}
			printedText = all.String()
			for _, l := range strings.Split(printedText, "\n") {
				printed[l] = true
			}
			continue
		}
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "<!--") {
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
				t.Errorf("%s line %d: the row\n%s\nis not a line of `go run . -report FILE -summary` for %s (regenerate it)", name, i+1, line, files)
			}
			continue
		}
		for _, m := range docFigure.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			if !strings.Contains(printedText, m[2]) {
				t.Errorf("%s line %d: the figure %s is in no row -summary prints for %s", name, i+1, m[2], files)
			}
		}
	}
	return blocks
}
