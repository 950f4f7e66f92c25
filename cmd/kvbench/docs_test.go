package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsFromJSON keeps every kvbench figure in README.md,
// docs/studying-filters.md, docs/filter-policy.md, docs/tree-filter.md and
// docs/benchmarks.md's kvbench sections (scopedDocs) tied to a JSON report
// committed beside it (docs/kvbench/, docs/range-filters/), as bench/compare's
// TestPublishedReports does for docs/benchmarks.md. A comment
//
//	<!-- kvbench: docs/kvbench/a.json [docs/kvbench/b.json ...] -->
//
// opens a scope that the next heading or the next such comment closes
// (<!-- kvbench: end --> closes it without opening another; so does another
// tool's marker, such as bench/compare's <!-- bench/compare: FILE.json -->,
// whose rows bench/compare's TestREADMEFromJSON checks, or the filter
// package's <!-- golden: filter/testdata/FILE.md -->, whose table
// TestGoldenDocTables checks). In a scope:
//
//   - kvbench's own report is printed line-exact: every line of a sample
//     block (a fence without a language) is a line of the text report
//     `kvbench -report` prints from one of the files (lines may be left
//     out, not changed), as bench/compare's table rows are;
//   - a Markdown table is a hand-made excerpt (kvbench prints no Markdown:
//     these put several runs, or several of a report's tables, side by
//     side), and must be one of excerptTables; any other table fails, to
//     be printed as the report's own lines in a sample block instead;
//   - every figure in the prose and in those excerpts (a number with a
//     decimal point or thousands separators, or of three digits or more;
//     not inside `code`) is one of the numbers those reports print: the
//     whole number, thousands separators aside, so a rounded 0.15 does not
//     pass for the report's 0.1586.
//
// Outside every scope, a table row of measured figures (a decimal point or
// thousands separators, outside `code`) fails, in those docs, in every
// other docs/*.md (but docs/server.md, see uncheckedDocs) and in
// filter/README.md: a table is generated from a committed report, or
// marked <!-- history: COMMIT ... --> as the record of a run made at
// COMMIT whose output was not kept.
//
// A figure that drifts from the files, or a sample in an old output format,
// fails here: regenerate the sample with `go run ./cmd/kvbench -report
// FILE` and take the figures from it.
func TestDocsFromJSON(t *testing.T) {
	docs, err := checkedDocs()
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		data, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		scopes, problems := docScopes(string(data))
		for _, p := range problems {
			t.Errorf("%s %s", doc, p)
		}
		excerpts := excerptTables[doc]
		found := make([]int, len(excerpts))
		for _, sc := range scopes {
			for _, tb := range sc.tables {
				i := slices.IndexFunc(excerpts, func(e string) bool { return strings.HasPrefix(tb.header, e) })
				if i < 0 {
					t.Errorf("%s line %d: a table in a kvbench scope that is not one of excerptTables:\n%s\n(print the report's own lines, `go run ./cmd/kvbench -report FILE` for FILE in %s, in a plain fence; or list the table in excerptTables as a hand-made excerpt)", doc, tb.line, tb.header, strings.Join(sc.files, " "))
					continue
				}
				found[i]++
			}
		}
		for i, e := range excerpts {
			if found[i] != 1 {
				t.Errorf("%s: the excerpt table headed %q is in its kvbench scopes %d times, want once", doc, e, found[i])
			}
		}
		if len(scopes) == 0 && slices.Contains(scopedDocs, doc) {
			t.Errorf("%s: no <!-- kvbench: FILE.json --> scope", doc)
		}
		for _, sc := range scopes {
			var rendered []string
			for _, path := range sc.files {
				rep, err := readReport(filepath.Join("..", "..", path))
				if err != nil {
					t.Errorf("%s line %d: %v", doc, sc.line, err)
					continue
				}
				var out bytes.Buffer
				if err := printReport(&out, rep); err != nil {
					t.Fatal(err)
				}
				rendered = append(rendered, out.String())
			}
			all := strings.Join(rendered, "\n")
			numbers := reportNumbers(all)
			lines := map[string]bool{}
			for _, l := range strings.Split(all, "\n") {
				lines[strings.TrimRight(l, " ")] = true
			}
			for _, l := range sc.sample {
				if !lines[l] {
					t.Errorf("%s line %d: the sample line\n%s\nis not a line of `kvbench -report %s`", doc, sc.line, l, strings.Join(sc.files, " "))
				}
			}
			for _, fig := range sc.figures {
				if !numbers[strings.ReplaceAll(fig, ",", "")] {
					t.Errorf("%s line %d: the figure %s is not a number in the reports of %s", doc, sc.line, fig, strings.Join(sc.files, " "))
				}
			}
		}
	}
}

// scopedDocs publish kvbench reports: each has at least one scope.
var scopedDocs = []string{"README.md", "docs/studying-filters.md", "docs/filter-policy.md", "docs/tree-filter.md", "docs/benchmarks.md"}

// excerptTables are the Markdown tables of kvbench scopes, per doc, each
// named by the start of its header row: hand-made excerpts whose figures
// are checked one by one against the scope's reports. Every other
// published kvbench figure is a line of kvbench's own report (a sample
// block), checked whole.
var excerptTables = map[string][]string{
	// Both passes of both rounds of -compare_filters, with their ratios.
	"README.md": {"| `go run ./cmd/kvbench -compare_filters -json "},
	"docs/studying-filters.md": {
		"| 10M keys, 10 bits/key", // five runs: the fill, two pairs off/on
		"| 100M keys |",           // one report's fill, tree, memory, reads and cache
		"| 30M keys |",            // the same for the 30M run
		"| workload | W |",        // four widths, one report each
	},
	"docs/filter-policy.md": {
		"| budget | setting | filter memory (bits/key) | absent keys: false positives per `Get` (3 runs)", // six runs
		"| budget | setting | filter memory (bits/key) | bits by level (2 runs)",                          // two runs
		"| block cache | filters |", // nine runs: the fill, four settings twice
	},
	"docs/tree-filter.md": {
		"| 1M-key fill, 2 runs |", // four fills, off and on alternated
		"| 1M keys | run 1 |",     // three runs side by side
	},
}

// uncheckedDocs are docs/*.md left out of the loose-table check, and why
// (none today: docs/server.md's redis-benchmark tables are marked history,
// their raw outputs kept under server/scripts/results/).
var uncheckedDocs = map[string]string{}

// checkedDocs returns the docs TestDocsFromJSON reads: scopedDocs,
// filter/README.md and every other docs/*.md but uncheckedDocs
// (design-notes.md, durability.md, filter-library.md and the rest: their
// tables are history or another tool's), relative to the repository.
func checkedDocs() ([]string, error) {
	docs := append(slices.Clone(scopedDocs), "filter/README.md")
	paths, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		doc := "docs/" + filepath.Base(p)
		if _, skip := uncheckedDocs[doc]; !skip && !slices.Contains(docs, doc) {
			docs = append(docs, doc)
		}
	}
	if !slices.Contains(docs, "docs/design-notes.md") {
		return nil, fmt.Errorf("docs/design-notes.md not found among %q", docs)
	}
	return docs, nil
}

// reportNumbers returns the numbers a report prints, each a whole run of
// digits and points (9.159% gives 9.159, go1.26.8 gives 1.26.8).
func reportNumbers(report string) map[string]bool {
	numbers := map[string]bool{}
	for _, n := range reportNumber.FindAllString(report, -1) {
		numbers[n] = true
	}
	return numbers
}

// docScope is a stretch of a document tied to JSON reports: the lines of
// its sample blocks and the figures of its prose.
type docScope struct {
	line    int // where the scope opens, for messages
	files   []string
	sample  []string
	figures []string
	tables  []docTable // the Markdown tables in it, hand-made excerpts
}

// docTable is a Markdown table of a scope: its header row and where.
type docTable struct {
	line   int
	header string
}

var (
	// A tool's marker: <!-- TOOL: FILES -->; kvbench's open scopes, any
	// other closes the open one.
	scopeOpen = regexp.MustCompile(`^<!-- ([a-z/]+): (.*) -->$`)
	// A number in a report: the whole run of digits and points, so that
	// a figure must be one of the report's numbers, not a piece of one
	// (0.15 is not in 0.1586, nor 611 in 6110).
	reportNumber = regexp.MustCompile(`\d+(?:\.\d+)*`)
	// A measured figure in a table row: a decimal point or thousands
	// separators (a row of such figures outside every scope is a table
	// no report backs).
	measured = regexp.MustCompile(`\d\.\d|\d,\d{3}`)
	// A history marker's commit.
	commitHash = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	// A command in prose: a code span that starts with one (a long one may
	// wrap inside its backticks).
	// A command in a history marker, after its commit.
	markerCommand = regexp.MustCompile(`\s(go run|go test|kvbench) `)
	proseCommand  = regexp.MustCompile("`(go run |go test |go -C |kvbench |cd [^`]*&& go |bash |\\./|server/scripts/)")
	// A figure: digits with a decimal point or thousands separators, or
	// three digits or more (156631 µs), not part of a longer token
	// (go1.26.8, v1.0.0, 2026-12-05); flag values in code are left out.
	figure = regexp.MustCompile(`(^|[\s(\[/|~–-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{3,})([\s)\]%x,;:/|]|\.(\s|$)|$)`)
)

// historyCommandLines is how far above a history marker the command that
// made its tables may be (or it is in the marker, or in the scope above
// the table).
const historyCommandLines = 20

// docScopes returns the kvbench scopes of doc, and its problems outside
// them: a table row of measured figures in no tool's scope (kvbench's,
// bench/compare's, or <!-- history: COMMIT --> for a record of a run whose
// JSON was not kept), a history marker that names no commit, and a table
// in a history scope with no command above it, in the scope or within
// historyCommandLines lines above the marker (a line of a ```sh, ```bash
// or ```console block; a code span starting `go run `, `go test `, `go -C
// `, `kvbench `, `cd ... && go `, `bash `, `./` or `server/scripts/`; or
// go run, go test or kvbench in the marker after its commit): a record of
// a run says how to run it again. Another
// tool's scope ends at the next marker or at a heading of level 1 to 3
// (bench/compare's reports print level-4 headings of their own).
func docScopes(doc string) ([]docScope, []string) {
	var scopes []docScope
	var problems []string
	var cur *docScope
	other := false // another tool's scope, or a history one, is open
	inFence, sample := false, false
	// inCode: a code span opened on an earlier line of the paragraph is
	// still open (a long command wraps inside its backticks).
	inCode := false
	inTable := false                        // the line before was a table row
	history := false                        // the open scope is a history one
	shell := false                          // the open fence is a ```sh (or bash, console) block
	lastCommand := -historyCommandLines - 1 // the last line holding a command
	historyStart := 0                       // the open history marker's line
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimRight(line, " ")
		row := strings.HasPrefix(trimmed, "|")
		if row && !inTable && cur != nil && !inFence {
			cur.tables = append(cur.tables, docTable{line: i + 1, header: trimmed})
		}
		if row && !inTable && history && !inFence && historyStart-lastCommand > historyCommandLines {
			problems = append(problems, fmt.Sprintf("line %d: a history table with no command in its scope or within %d lines above its marker (put the command that made it in a ```sh block, a `go run ...` span or the marker):\n%s", i+1, historyCommandLines, trimmed))
		}
		inTable = row
		if strings.HasPrefix(trimmed, "```") {
			// A plain fence is report output; ```sh and the like are
			// commands and code.
			inFence, sample = !inFence, !inFence && trimmed == "```"
			lang := strings.TrimPrefix(trimmed, "```")
			shell = inFence && (lang == "sh" || lang == "bash" || lang == "console")
			continue
		}
		if inFence {
			if shell && trimmed != "" {
				lastCommand = i
			}
			if cur != nil && sample && trimmed != "" {
				cur.sample = append(cur.sample, trimmed)
			}
			continue
		}
		if proseCommand.MatchString(trimmed) {
			lastCommand = i
		}
		if m := scopeOpen.FindStringSubmatch(trimmed); m != nil {
			cur, other, history = nil, false, false
			switch {
			case m[2] == "end":
			case m[1] == "kvbench":
				scopes = append(scopes, docScope{line: i + 1, files: strings.Fields(m[2])})
				cur = &scopes[len(scopes)-1]
			case m[1] == "history":
				if f := strings.Fields(m[2]); len(f) == 0 || !commitHash.MatchString(f[0]) {
					problems = append(problems, fmt.Sprintf("line %d: a history marker names no commit: %s", i+1, trimmed))
				}
				other, history, historyStart = true, true, i
				if markerCommand.MatchString(m[2]) {
					lastCommand = i
				}
			default:
				other = true
			}
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			cur = nil
			if !strings.HasPrefix(trimmed, "####") {
				other, history = false, false
			}
			continue
		}
		if cur == nil {
			if !other && strings.HasPrefix(trimmed, "|") {
				if text, _ := outsideCode(trimmed, false); measured.MatchString(text) {
					problems = append(problems, fmt.Sprintf("line %d: a table of measured figures in no scope (generate it from a committed report in a <!-- kvbench: FILE.json --> scope, or mark it <!-- history: COMMIT -->):\n%s", i+1, trimmed))
				}
			}
			continue
		}
		if trimmed == "" {
			inCode = false
			continue
		}
		var text string
		text, inCode = outsideCode(trimmed, inCode)
		for _, m := range figure.FindAllStringSubmatch(text, -1) {
			cur.figures = append(cur.figures, m[2])
		}
	}
	return scopes, problems
}

// outsideCode returns the text of line outside code spans, given whether
// one was open when the line began, and whether one is open at its end.
func outsideCode(line string, inCode bool) (string, bool) {
	var b strings.Builder
	for i, part := range strings.Split(line, "`") {
		if i > 0 {
			inCode = !inCode
			b.WriteByte(' ')
		}
		if !inCode {
			b.WriteString(part)
		}
	}
	return b.String(), inCode
}

// TestCommittedReportsParse: every kvbench report committed under docs/,
// quoted by a scope above or not, still loads and prints with today's
// report code, so an old sample that no longer parses shows here rather
// than to a reader running kvbench -report on it; and a text report saved
// beside it (X.txt beside X.json, docs/range-filters/) is what -report
// prints today.
func TestCommittedReportsParse(t *testing.T) {
	n := 0
	for _, dir := range []string{"docs/kvbench", "docs/range-filters"} {
		paths, err := filepath.Glob(filepath.Join("..", "..", dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		n += len(paths)
		for _, path := range paths {
			t.Run(dir+"/"+filepath.Base(path), func(t *testing.T) {
				rep, err := readReport(path)
				var out bytes.Buffer
				if err == nil {
					err = printReport(&out, rep)
				}
				if err != nil {
					t.Fatal(err)
				}
				checkSavedReport(t, strings.TrimSuffix(path, ".json")+".txt", out.String())
			})
		}
	}
	if n == 0 {
		t.Fatal("no committed reports under docs/kvbench or docs/range-filters")
	}
}

// TestReportNumbers: a figure matches a number of the report only whole,
// so a rounded or truncated figure fails the docs check.
func TestReportNumbers(t *testing.T) {
	numbers := reportNumbers("standard  9.159%  0.1586  6110 KiB  go1.26.8")
	for _, n := range []string{"9.159", "0.1586", "6110", "1.26.8"} {
		if !numbers[n] {
			t.Errorf("%s: not found", n)
		}
	}
	for _, n := range []string{"0.15", "611", "1.26", "159"} {
		if numbers[n] {
			t.Errorf("%s: matched part of a number", n)
		}
	}
}

// TestDocScopesLooseTables: a table row of measured figures must be in a
// scope -- kvbench's, another tool's (through its report's own level-4
// headings), or a history marker that names a commit; rows whose figures
// are in code, or that have none, need none. A history table needs the
// command that made it: in the scope above it, within historyCommandLines
// lines above its marker, or in the marker. A table in a kvbench scope is
// recorded, for TestDocsFromJSON to hold to excerptTables.
func TestDocScopesLooseTables(t *testing.T) {
	doc := strings.Join([]string{
		"# Doc",                                 // 1
		"| loose | 0.25 |",                      // 2: a problem
		"| flag | `-filter_bits 9.83` |",        // 3: code only
		"| count | 12 |",                        // 4: no measured figure
		"<!-- bench/compare: a.json -->",        // 5
		"#### write-through",                    // 6: the report's heading
		"| bloomkv | 1,234 |",                   // 7: in bench/compare's scope
		"### Next",                              // 8: closes it
		"| after | 1.5 |",                       // 9: a problem
		"<!-- history: 651564d -->",             // 10
		"| old | 2.5 |",                         // 11: history without a command: a problem
		"<!-- history: last week -->",           // 12: a problem
		"<!-- kvbench: docs/kvbench/x.json -->", // 13
		"| checked | 3.5 |",                     // 14: kvbench's, its figures checked
		"### History with commands",             // 15
		"```sh",                                 // 16
		"go run ./cmd/kvbench -num 1000",        // 17: a command above the marker
		"```",                                   // 18
		"<!-- history: 651564d -->",             // 19
		"| old | 2.5 |",                         // 20: its command at 17
		"",                                      // 21
		"| older | 3.5 |",                       // 22: the same scope's command
		"<!-- history: 651564d go test ./filter -bench . -->", // 23
		"| old | 4.5 |",                           // 24: the command in the marker
		"<!-- history: 651564d -->",               // 25
		"Run with `go test -run X .` at 651564d:", // 26: in the scope
		"| old | 5.5 |",                           // 27
		"### Another",                             // 28
	}, "\n")
	// The command at 26 is more than historyCommandLines lines above the
	// next marker; a sample block's line and a marker's prose are no
	// commands.
	for i := 0; i < historyCommandLines; i++ {
		doc += "\nfiller"
	}
	doc += "\n```\ngo run ./cmd/kvbench\n```\n<!-- history: 651564d (it was run with go run) -->\n| old | 6.5 |"
	scopes, problems := docScopes(doc)
	var lines []string
	for _, p := range problems {
		lines = append(lines, strings.SplitN(p, ":", 2)[0])
	}
	far := fmt.Sprintf("line %d", 28+historyCommandLines+5)
	if want := []string{"line 2", "line 9", "line 11", "line 12", far}; !slices.Equal(lines, want) {
		t.Errorf("problems at %q, want %q:\n%s", lines, want, strings.Join(problems, "\n"))
	}
	if len(scopes) != 1 || !slices.Equal(scopes[0].figures, []string{"3.5"}) {
		t.Errorf("scopes %+v, want one with the figure 3.5", scopes)
	}
	// The kvbench scope's table, which TestDocsFromJSON requires to be
	// one of excerptTables.
	if want := []docTable{{line: 14, header: "| checked | 3.5 |"}}; len(scopes) != 1 || !slices.Equal(scopes[0].tables, want) {
		t.Errorf("scopes %+v, want one with the table %+v", scopes, want)
	}
}

// uptimeLine is the line `uptime` prints, which a saved text report may
// start with (runs made before the report printed the load average).
var uptimeLine = regexp.MustCompile(`^\s*\d\d:\d\d:\d\d up .*load average`)

// checkSavedReport compares the text report saved at path, if there is
// one, with what -report prints today (want), after an uptime line.
func checkSavedReport(t *testing.T, path, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	saved := string(data)
	if first, rest, ok := strings.Cut(saved, "\n"); ok && uptimeLine.MatchString(first) {
		saved = rest
	}
	if saved != want {
		t.Errorf("%s is not what `kvbench -report` prints today from the JSON beside it; regenerate it (keeping its uptime line):\n%s", path, lineDiff(saved, want))
	}
}

// lineDiff names the first line where got and want differ.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n saved: %q\n today: %q", i+1, gl, wl)
		}
	}
	return "(equal)"
}
