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
