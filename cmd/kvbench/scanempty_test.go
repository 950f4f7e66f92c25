package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRangeWorkloadsTiny runs the range workloads on a small tree with and
// without range filters: every empty range is empty (kvbench checks), the
// filters skip nearly every table, and the bounded scans find their keys.
func TestRangeWorkloadsTiny(t *testing.T) {
	js := filepath.Join(t.TempDir(), "out.json")
	args := append(append([]string{}, tinyTree...),
		"-benchmarks", "fillrandom,scanempty,scanemptynear,scanbounded",
		"-range_filter_bits", "16", "-range_width", "64", "-compare_filters", "-json", js)
	out, _ := runOK(t, args...)
	if !strings.Contains(out, "range filters") {
		t.Errorf("no range-filter table in the report:\n%s", out)
	}
	doc := readJSON(t, js)
	// Memory on the record: the range filters of the open tables.
	sh := doc["shape"].(map[string]any)
	if v, _ := sh["range_filter_bytes_resident"].(float64); v <= 0 {
		t.Errorf("shape.range_filter_bytes_resident = %v, want > 0", sh["range_filter_bytes_resident"])
	}
	if !strings.Contains(out, ", range filters ") {
		t.Errorf("the memory line does not show the range filters:\n%s", out)
	}
	results := resultsOf(t, doc)
	for _, name := range []string{scanEmpty, scanEmptyNear} {
		with, without := find(t, results, name, "filters"), find(t, results, name, "ignore_filters")
		if num(t, with, "found") != 0 {
			t.Errorf("%s found keys in empty ranges", name)
		}
		bw, bwo := num(t, with, "data_blocks_per_op"), num(t, without, "data_blocks_per_op")
		if bw > 0.05 || bwo < 0.5 {
			t.Errorf("%s: %.3f data blocks per seek with range filters, %.3f without", name, bw, bwo)
		}
		if fpr := num(t, with, "range_filter_fpr_measured"); fpr > 0.05 {
			t.Errorf("%s: range-filter FPR %.4f", name, fpr)
		}
		if without["range_filter_fpr_measured"] != nil {
			t.Errorf("%s: a pass ignoring range filters measured their FPR", name)
		}
	}
	b := find(t, results, scanBounded, "filters")
	if num(t, b, "found") == 0 || num(t, b, "range_filter_negatives_per_op") > num(t, b, "range_filter_probes_per_op") {
		t.Errorf("scanbounded: %v", b)
	}
}

// TestRangeSweepTiny runs -range_sweep over two budgets and two widths on a
// small tree: every table is rebuilt with each budget (the tree spends
// about it), each width's empty-range workloads run per budget, measured
// false-positive rates follow the bound (within a factor and a sampling
// allowance), more bits let fewer through, and the chart is drawn.
func TestRangeSweepTiny(t *testing.T) {
	dir := t.TempDir()
	js, png := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.png")
	args := append(append([]string{}, tinyTree...),
		"-benchmarks", "fillrandom,scanempty,scanemptynear,readrandom",
		"-range_sweep", "6,12", "-range_widths", "1,64", "-json", js, "-plot", png)
	out, _ := runOK(t, args...)
	if !strings.Contains(out, "range sweep") || !strings.Contains(out, "scanempty (12 bits, W=64)") {
		t.Errorf("no range-sweep tables in the report:\n%s", out)
	}
	doc := readJSON(t, js)
	settings, _ := doc["range_sweep"].([]any)
	if len(settings) != 2 {
		t.Fatalf("range_sweep holds %d settings, want 2", len(settings))
	}
	for i, want := range []float64{6, 12} {
		sh := settings[i].(map[string]any)["shape"].(map[string]any)
		spent := sh["range_filter_bytes"].(float64) * 8 / 20000
		if spent < want || spent > want*1.3 {
			t.Errorf("setting %g: the tables spend %.2f range-filter bits per key", want, spent)
		}
	}
	fpr := map[string]float64{}
	n := map[string]int{}
	for _, r := range resultsOf(t, doc) {
		if r["pass"] != rangeSweepPass {
			continue
		}
		name := r["benchmark"].(string)
		n[name]++
		if !isEmptyRangeWorkload(name) {
			continue
		}
		if num(t, r, "found") != 0 {
			t.Errorf("%s found keys in empty ranges", name)
		}
		measured, theory := num(t, r, "range_filter_fpr_measured"), num(t, r, "range_filter_fpr_theory")
		key := fmt.Sprintf("%s/%g/%g", name, num(t, r, "range_filter_bits"), num(t, r, "range_width"))
		fpr[key] = measured
		if measured > 2*theory+0.01 || measured < theory/2-0.01 {
			t.Errorf("%s: measured FPR %.4f, bound %.4f", key, measured, theory)
		}
	}
	// Per budget: each width's empty-range workloads, the others once.
	if n[scanEmpty] != 4 || n[scanEmptyNear] != 4 || n[readRandom] != 2 {
		t.Errorf("runs per workload: %v", n)
	}
	if !(fpr["scanempty/12/1"] < fpr["scanempty/6/1"] && fpr["scanempty/12/64"] < fpr["scanempty/6/64"] && fpr["scanempty/6/1"] < fpr["scanempty/6/64"]) {
		t.Errorf("false-positive rates do not fall with bits and rise with width: %v", fpr)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Errorf("chart: %v", err)
	}
}
