package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseFilterSweep(t *testing.T) {
	got, err := parseFilterSweep("standard, blocked/per_level,fuse/skip_last,standard/per_level/skip_last")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Variant.String()+":"+s.policyName())
	}
	want := "standard:uniform blocked:per_level fuse:skip_last standard:per_level+skip_last"
	if strings.Join(names, " ") != want {
		t.Fatalf("parsed %v, want %s", names, want)
	}
	for _, bad := range []string{"fancy", "standard/sometimes", "fuse/per_level", ","} {
		if _, err := parseFilterSweep(bad); err == nil {
			t.Errorf("-filter_sweep %q accepted", bad)
		}
	}
	for _, args := range [][]string{
		{"-filter_sweep", "standard", "-filter_bits", "-1"}, // negative: no filters, no budget
		{"-filter_bits", "65"},
		{"-filter_variant", "fuse", "-filter_per_level"},
		{"-filter_sweep", "standard", "-sweep", "4,8"},
	} {
		if _, err := parseConfig(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestFilterSweepTiny runs a filter sweep of three settings on a small
// tree: one result per setting and read workload, labelled with its
// setting, policy and variant, and a row per setting in the report's
// by-level table; per-level bits by level in the JSON; the
// fuse setting's filters spend about 9-12 bits per key whatever the budget.
func TestFilterSweepTiny(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "f.json")
	plotPath := filepath.Join(t.TempDir(), "f.png")
	args := append(slices.Clone(tinyTree), "-reads", "5000", "-filter_bits", "6.5", "-json", jsonPath, "-plot", plotPath,
		"-benchmarks", "fillrandom,readmissing", "-filter_sweep", "standard,standard/per_level,fuse")
	out, _ := runOK(t, args...)
	checkReprint(t, jsonPath, out)
	if !strings.Contains(out, "build ns/key") || !strings.Contains(out, "probe ns") {
		t.Errorf("filter sweep table lacks the cost columns:\n%s", out)
	}
	// Where each setting's false positives came from: a row per setting
	// under the workload's by-level table.
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "readmissing by level") })
	if i < 0 || i+3 >= len(lines) {
		t.Errorf("no readmissing by-level table:\n%s", out)
	} else {
		for j, setting := range []string{"standard", "standard/per_level", "fuse"} {
			if f := strings.Fields(lines[i+1+j]); len(f) == 0 || f[0] != setting || !strings.Contains(lines[i+1+j], "->") {
				t.Errorf("by-level row %d: %q, want the setting %s and its cells", j, lines[i+1+j], setting)
			}
		}
	}
	if png, err := os.ReadFile(plotPath); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("-plot with -filter_sweep: %v, %d bytes", err, len(png))
	}
	doc := readJSON(t, jsonPath)
	runs, _ := doc["filter_sweep"].([]any)
	if len(runs) != 3 {
		t.Fatalf("filter_sweep has %d runs, want 3", len(runs))
	}
	for _, r := range runs {
		run := r.(map[string]any)
		build, probe, fp := run["build_ns_per_key"].(float64), run["probe_ns"].(float64), run["probe_fp_rate"].(float64)
		// The standalone probes' rate is a sample of the variant's own:
		// 6.5 bits/key gives about 4% for the blooms, 0.4% for fuse.
		if !(build > 0) || !(probe > 0) || !(fp > 0.001 && fp < 0.08) {
			t.Errorf("%v: build %v ns/key, probe %v ns, FP rate %v", run["setting"], build, probe, fp)
		}
	}
	seen := map[string]bool{}
	for _, r := range resultsOf(t, doc) {
		if r["pass"] != "filter_sweep" {
			continue
		}
		setting := r["filter_setting"].(string)
		seen[setting] = true
		bits := r["filter_bits_per_key"].(float64)
		byLevel, _ := r["filter_bits_per_key_by_level"].([]any)
		t.Logf("%s (%s, %s): %.2f bits/key spent, policy by level %v, FP rate %v", setting, r["filter_policy"], r["filter_variant"], bits, byLevel, r["fp_rate_measured"])
		switch setting {
		case "standard":
			if r["filter_policy"] != "uniform" || r["filter_variant"] != "standard" || bits < 6 || bits > 7.5 {
				t.Errorf("standard: %v %v %.2f bits/key", r["filter_policy"], r["filter_variant"], bits)
			}
		case "standard/per_level":
			if r["filter_policy"] != "per_level" || len(byLevel) == 0 {
				t.Errorf("per-level: %v, bits by level %v", r["filter_policy"], byLevel)
			}
		case "fuse":
			if r["filter_variant"] != "fuse" || bits < 8.9 || bits > 13 {
				t.Errorf("fuse: %v, %.2f bits/key", r["filter_variant"], bits)
			}
		}
	}
	if len(seen) != 3 {
		t.Fatalf("results for settings %v, want 3", seen)
	}
}
