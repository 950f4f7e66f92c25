package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTreeFilterFlag runs the tiny tree with -tree_filter: an absent Get
// asks one filter (the tree's) and reads no table but for its false
// positives, a present one probes about one table, and the JSON carries
// the tree filter's figures.
func TestTreeFilterFlag(t *testing.T) {
	js := filepath.Join(t.TempDir(), "out.json")
	out, _ := runOK(t, slices.Concat(tinyTree, []string{"-tree_filter", "-benchmarks", "fillrandom,readrandom,readmissing", "-json", js})...)
	if !strings.Contains(out, "tree filter") {
		t.Fatalf("no tree filter section in the report:\n%s", out)
	}
	for _, r := range resultsOf(t, readJSON(t, js)) {
		if r["filters_consulted"] != true {
			continue // the default run's baseline reads with filters ignored
		}
		tf, ok := r["tree_filter"].(map[string]any)
		probes, _ := r["filter_probes_per_get"].(float64)
		tables, _ := r["tables_probed_per_get"].(float64)
		switch r["benchmark"] {
		case "readmissing":
			if !ok || tf["negatives"].(float64) == 0 || probes > 1.1 || tables > 0.01 {
				t.Errorf("readmissing: filter probes/Get %.3f, tables/Get %.3f, tree filter %v", probes, tables, tf)
			}
		case "readrandom":
			if !ok || tables > 1.05 {
				t.Errorf("readrandom: tables/Get %.3f, tree filter %v", tables, tf)
			}
		}
	}
}

// TestTreeFilterUpkeepReport: the report prints the upkeep of the
// workloads that built or updated the tree filter (a fill), with the
// figures of its JSON object, and leaves out those that only read it.
func TestTreeFilterUpkeepReport(t *testing.T) {
	fill := &result{Benchmark: "fillrandom", Pass: "load", TreeFilter: &treeFilterResult{
		Rebuilds: 13, TablesRead: 177, BuildSeconds: 1.53, UpdateSeconds: 0.42, RetagTablesRead: 2, RetagBytesRead: 4 << 20,
	}}
	read := &result{Benchmark: "readmissing", Pass: "read", Gets: 10, TreeFilter: &treeFilterResult{Probes: 10, Negatives: 10}}
	var sb strings.Builder
	writeTreeFilterUpkeep(&sb, []*result{fill, read})
	var rows [][]string
	for _, l := range strings.Split(sb.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "tree" {
			rows = append(rows, f)
		}
	}
	want := []string{"fillrandom", "13", "177", "1.53", "0.42", "0", "0", "B", "2", "4.0", "MiB"}
	if len(rows) != 1 || !slices.Equal(rows[0], want) {
		t.Errorf("upkeep rows %q, want one: %q\n%s", rows, want, sb.String())
	}
	sb.Reset()
	writeTreeFilterUpkeep(&sb, []*result{read})
	if sb.Len() != 0 {
		t.Errorf("upkeep printed for reads alone:\n%s", sb.String())
	}
}

// TestTreeFilterPassed: the report's "passed" column is the share of
// lookups that named a level, "-" when there were none.
func TestTreeFilterPassed(t *testing.T) {
	for _, c := range []struct {
		probes, negatives uint64
		want              string
	}{{1000, 998, "0.2000%"}, {4, 0, "100.0000%"}, {0, 0, "-"}} {
		if got := passed(&treeFilterResult{Probes: c.probes, Negatives: c.negatives}); got != c.want {
			t.Errorf("%d lookups, %d negatives: %q, want %q", c.probes, c.negatives, got, c.want)
		}
	}
}
