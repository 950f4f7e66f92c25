package filter

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Measured tables of docs/filter-library.md and filter/README.md come from
// seeded tests of this package. Each test prints its table in the doc's
// own markdown into testdata/NAME.md (with -rewrite) or compares it with
// that file, and TestGoldenDocTables checks that the doc's table under
//
//	<!-- golden: filter/testdata/NAME.md -->
//
// is that file, line for line. A change that moves a figure then fails
// until the golden file is rewritten and the doc updated from it:
//
//	go test ./filter -run 'TestRangeFilter(Candidates|FPRMatchesTheory|ShortKeys)|Test(Blocked|Fuse)FalsePositiveRate' -rewrite
var rewrite = flag.Bool("rewrite", false, "rewrite the golden tables in testdata/ from the tests that measure them")

// checkGolden compares table, measured by the calling test, with
// testdata/name, or writes it there under -rewrite.
func checkGolden(t *testing.T, name, table string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -rewrite)", err)
	}
	if string(want) != table {
		t.Errorf("the measured table is not %s (if the change is meant, rerun with -rewrite and update docs/filter-library.md from it):\n%s", path, firstDiff(string(want), "measured", table))
	}
}

// firstDiff names the first line where golden and got differ; gotName
// says where got comes from.
func firstDiff(golden, gotName, got string) string {
	g, m := strings.Split(golden, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(g), len(m)); i++ {
		var gl, ml string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(m) {
			ml = m[i]
		}
		if gl != ml {
			return fmt.Sprintf("line %d:\n golden: %q\n %s: %q", i+1, gl, gotName, ml)
		}
	}
	return "(equal)"
}

// goldenMarker opens a table of the doc that must equal a golden file, or
// several with the same header: the first whole, then the others' rows.
var goldenMarker = regexp.MustCompile(`^<!-- golden: (filter/testdata/[\w.-]+(?: filter/testdata/[\w.-]+)*) -->$`)

// docGoldenTables returns the tables of doc under golden markers, by the
// marker's golden files (paths relative to this package, space-separated):
// the table rows (lines starting with "|") after the marker, past blank
// lines.
func docGoldenTables(doc string) (map[string]string, error) {
	tables := map[string]string{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := goldenMarker.FindStringSubmatch(strings.TrimRight(lines[i], " "))
		if m == nil {
			continue
		}
		key := strings.ReplaceAll(m[1], "filter/testdata/", "testdata/")
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		var rows []string
		for ; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			rows = append(rows, strings.TrimRight(lines[j], " "))
		}
		if len(rows) == 0 {
			return nil, fmt.Errorf("line %d: a golden marker with no table after it", i+1)
		}
		if _, dup := tables[key]; dup {
			return nil, fmt.Errorf("line %d: %s quoted twice", i+1, key)
		}
		tables[key] = strings.Join(rows, "\n") + "\n"
	}
	return tables, nil
}

// joinGolden returns the table of the golden files paths: the first
// whole, then the rows of the others, whose header (the first two lines)
// must be the first one's.
func joinGolden(paths []string) (string, error) {
	var b strings.Builder
	var header string
	for i, path := range paths {
		data, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			return "", err
		}
		lines := strings.SplitAfterN(string(data), "\n", 3)
		if len(lines) < 3 {
			return "", fmt.Errorf("%s: not a table with a header", path)
		}
		if h := lines[0] + lines[1]; i == 0 {
			header = h
			b.WriteString(h)
		} else if h != header {
			return "", fmt.Errorf("%s: its header is not %s's", path, paths[0])
		}
		b.WriteString(lines[2])
	}
	return b.String(), nil
}

// goldenDocs are the docs that quote golden tables, by their path in the
// repository.
var goldenDocs = []string{"docs/filter-library.md", "filter/README.md"}

// TestGoldenDocTables: each table of goldenDocs under a golden marker is
// its golden files, and every golden table is quoted somewhere.
func TestGoldenDocTables(t *testing.T) {
	quoted := map[string]bool{}
	for _, doc := range goldenDocs {
		data, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		tables, err := docGoldenTables(string(data))
		if err != nil {
			t.Fatalf("%s %v", doc, err)
		}
		for _, key := range slices.Sorted(maps.Keys(tables)) {
			paths := strings.Fields(key)
			for _, p := range paths {
				quoted[p] = true
			}
			want, err := joinGolden(paths)
			if err != nil {
				t.Errorf("%s quotes %s: %v", doc, key, err)
				continue
			}
			if got := tables[key]; got != want {
				t.Errorf("%s: the table under the golden marker of %s is not made of those files; copy it from them:\n%s", doc, key, firstDiff(want, "doc", got))
			}
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden tables in testdata/")
	}
	for _, f := range files {
		if !quoted[filepath.ToSlash(f)] {
			t.Errorf("%s is quoted in none of %q (<!-- golden: filter/%s -->)", f, goldenDocs, filepath.ToSlash(f))
		}
	}
}

// fprHeader is the header of filter/README.md's table of measured
// false-positive rates, one golden file per filter type.
var fprHeader = []string{"filter", "setting", "absent keys probed", "measured", "expected"}

// millions prints a probe count (1M, 4M).
func millions(n int) string { return fmt.Sprintf("%gM", float64(n)/1e6) }

// goldenTable collects a test's rows into a golden table.
type goldenTable struct {
	b    strings.Builder
	rows int
}

func newGoldenTable(header ...string) *goldenTable {
	g := &goldenTable{}
	fmt.Fprintf(&g.b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	return g
}

func (g *goldenTable) row(cells ...string) {
	fmt.Fprintf(&g.b, "| %s |\n", strings.Join(cells, " | "))
	g.rows++
}

// check compares the table with testdata/name (see checkGolden) when all
// rows rows ran at full size: not under -short or -race, nor with -run
// picking some subtests.
func (g *goldenTable) check(t *testing.T, name string, rows int) {
	t.Helper()
	if g.rows == rows && !trimmed() {
		checkGolden(t, name, g.b.String())
	}
}

// TestDocGoldenTables pins how a golden table is cut from a doc.
func TestDocGoldenTables(t *testing.T) {
	doc := strings.Join([]string{
		"<!-- golden: filter/testdata/a.md -->",
		"",
		"| x | y |",
		"|---|---|",
		"| 1 | 0.5 |",
		"prose after",
		"| not | quoted |",
	}, "\n")
	tables, err := docGoldenTables(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := "| x | y |\n|---|---|\n| 1 | 0.5 |\n"; len(tables) != 1 || tables["testdata/a.md"] != want {
		t.Errorf("got %q, want one table %q", tables, want)
	}
	if _, err := docGoldenTables("<!-- golden: filter/testdata/b.md -->\n\nprose\n"); err == nil {
		t.Error("a marker without a table: no error")
	}
	tables, err = docGoldenTables("<!-- golden: filter/testdata/a.md filter/testdata/b.md -->\n| x |\n|---|\n| 1 |\n| 2 |\n")
	if _, ok := tables["testdata/a.md testdata/b.md"]; err != nil || !ok {
		t.Errorf("two files: %q, %v", tables, err)
	}

	// Several files make one table: the first whole, the others' rows.
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.md", "| x |\n|---|\n| 1 |\n")
	b := write("b.md", "| x |\n|---|\n| 2 |\n| 3 |\n")
	other := write("c.md", "| y |\n|---|\n| 4 |\n")
	if got, err := joinGolden([]string{a, b}); err != nil || got != "| x |\n|---|\n| 1 |\n| 2 |\n| 3 |\n" {
		t.Errorf("joinGolden(a, b) = %q, %v", got, err)
	}
	if _, err := joinGolden([]string{a, other}); err == nil {
		t.Error("joinGolden of tables with different headers: no error")
	}
}

// sig3 prints a rate with three significant digits and at most five
// decimals, as the doc's tables show them (0.0157, 0.142, 0.00022).
func sig3(x float64) string {
	d := 5
	if x > 0 {
		d = min(5, max(0, 2-int(math.Floor(math.Log10(x)))))
	}
	return strconv.FormatFloat(x, 'f', d, 64)
}

// thousands prints n with comma separators (65,536).
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestSig3Thousands(t *testing.T) {
	for x, want := range map[float64]string{0.015678: "0.0157", 0.14247: "0.142", 0.000224: "0.00022", 0: "0.00000", 1: "1.00", 0.98465: "0.985"} {
		if got := sig3(x); got != want {
			t.Errorf("sig3(%v) = %s, want %s", x, got, want)
		}
	}
	for n, want := range map[uint64]string{1: "1", 999: "999", 65536: "65,536", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %s, want %s", n, got, want)
		}
	}
}
