package main

import (
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
