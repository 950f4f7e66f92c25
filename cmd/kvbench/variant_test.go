package main

import (
	"io"
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// TestBlockedFilterVariant runs the read workloads on tables with
// cache-local filter blocks and checks that the report says so and that the
// measured false-positive rate is near the blocked variant's theory.
func TestBlockedFilterVariant(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "b.json")
	args := append(slices.Clone(tinyTree), "-reads", "40000", "-filter_variant", "blocked", "-json", jsonPath,
		"-benchmarks", "fillrandom,readmissing")
	runOK(t, args...)
	doc := readJSON(t, jsonPath)
	if v := doc["config"].(map[string]any)["filter_variant"]; v != "blocked" {
		t.Fatalf("config.filter_variant = %v", v)
	}
	seen := false
	for _, r := range resultsOf(t, doc) {
		if r["benchmark"] != "readmissing" || r["pass"] != "read" { // not the without-filters baseline
			continue
		}
		seen = true
		if r["filter_variant"] != "blocked" {
			t.Fatalf("result filter_variant = %v", r["filter_variant"])
		}
		measured, theory := r["fp_rate_measured"].(float64), r["fp_rate_theory"].(float64)
		probes := 40000 * r["tables_probed_per_get"].(float64)
		sd := math.Sqrt(theory * (1 - theory) / probes)
		t.Logf("blocked: measured %.4f, theory %.4f (sd %.4f over %.0f probes)", measured, theory, sd, probes)
		if math.Abs(measured-theory) > 5*sd+0.1*theory {
			t.Fatalf("measured FP %.5f far from blocked theory %.5f", measured, theory)
		}
	}
	if !seen {
		t.Fatal("no readmissing result")
	}
}

func TestFilterVariantFlagRejectsUnknown(t *testing.T) {
	if _, err := parseConfig([]string{"-filter_variant", "fancy"}, io.Discard); err == nil {
		t.Fatal("-filter_variant fancy accepted")
	}
}

// TestReusedDBReportsTheTablesFilters reads a database filled with 10
// bits/key while asking for 4: labels and theory must describe the tables
// (10 bits/key), with a warning.
func TestReusedDBReportsTheTablesFilters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	runOK(t, "-num", "20000", "-reads", "100", "-progress=false", "-db", dir, "-benchmarks", "fillrandom", "-bloom_bits", "10")
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	runOK(t, "-num", "20000", "-reads", "20000", "-progress=false", "-db", dir, "-use_existing_db",
		"-benchmarks", "readmissing", "-bloom_bits", "4", "-json", jsonPath)
	doc := readJSON(t, jsonPath)
	if w, _ := doc["warnings"].([]any); len(w) == 0 {
		t.Error("no warning that the tables spend other bits per key than asked")
	}
	for _, r := range resultsOf(t, doc) {
		if r["benchmark"] != "readmissing" || r["pass"] != "read" { // the baseline states no theory
			continue
		}
		if r["bloom_bits"].(float64) != 10 {
			t.Errorf("bloom_bits reported %v, the tables have 10", r["bloom_bits"])
		}
		if th := r["fp_rate_theory"].(float64); th > 0.012 || th < 0.006 {
			t.Errorf("fp_rate_theory %.4f is not that of 10 bits/key", th)
		}
	}
}
