package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tinyTree makes 20,000 keys (about 2.4 MB) settle into several levels, so
// that a miss probes several tables as in the full-size default run.
var tinyTree = []string{
	"-num", "20000", "-reads", "5000", "-progress=false",
	"-write_buffer_size", "131072", "-target_file_size_base", "65536",
	"-max_bytes_for_level_base", "131072",
}

// runOK runs kvbench in-process and fails the test unless it exits 0.
func runOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("kvbench %s: exit %d\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), code, errb.String(), out.String())
	}
	return out.String(), errb.String()
}

// documentedResultFields are the "results" fields issue 4 names; the JSON
// must hold every one of them (more are welcome).
var documentedResultFields = []string{
	"benchmark", "bloom_bits", "filters_consulted", "ops", "ops_per_sec",
	"p50_us", "p95_us", "p99_us", "p999_us", "tables_probed_per_get",
	"filter_negatives_per_get", "filter_false_positives_per_get", "fp_rate_measured",
	"fp_rate_theory", "data_blocks_per_get", "bytes_read_per_get", "cache_hit_rate",
	"filter_bytes", "filter_bits_per_key",
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	return doc
}

func resultsOf(t *testing.T, doc map[string]any) []map[string]any {
	t.Helper()
	raw, ok := doc["results"].([]any)
	if !ok || len(raw) == 0 {
		t.Fatalf("JSON has no \"results\" array: %v", doc["results"])
	}
	var out []map[string]any
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			t.Fatalf("results[%d] is %T, not an object", i, r)
		}
		for _, f := range documentedResultFields {
			if _, ok := m[f]; !ok {
				t.Errorf("results[%d] (%v) lacks documented field %q", i, m["benchmark"], f)
			}
		}
		out = append(out, m)
	}
	return out
}

// find returns the one result of benchmark in pass.
func find(t *testing.T, results []map[string]any, benchmark, pass string) map[string]any {
	t.Helper()
	var got []map[string]any
	for _, r := range results {
		// -compare_filters runs each pass in two rounds: the first one.
		if round, _ := r["round"].(float64); r["benchmark"] == benchmark && r["pass"] == pass && round <= 1 {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want 1 result %s/%s, have %d", benchmark, pass, len(got))
	}
	return got[0]
}

func num(t *testing.T, r map[string]any, field string) float64 {
	t.Helper()
	v, ok := r[field].(float64)
	if !ok {
		t.Fatalf("%v/%v: %s = %v (%T), want a number", r["benchmark"], r["pass"], field, r[field], r[field])
	}
	return v
}

// TestCompareFiltersTiny is the first test issue 4 asks for: a tiny
// -compare_filters run whose JSON parses, holds the documented fields, and
// shows fewer data blocks per absent Get with filters than without.
func TestCompareFiltersTiny(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	args := append(slices.Clone(tinyTree), "-compare_filters", "-json", jsonPath,
		"-benchmarks", "fillrandom,readrandom,readmissing,readmixed,scan")
	stdout, _ := runOK(t, args...)
	checkReprint(t, jsonPath, stdout)

	doc := readJSON(t, jsonPath)
	for _, key := range []string{"config", "shape", "results", "comparisons", "run", "load"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("JSON lacks top-level %q", key)
		}
	}
	config := doc["config"].(map[string]any)
	for _, flag := range []string{"benchmarks", "num", "reads", "key_size", "value_size", "bloom_bits",
		"cache_size", "db", "use_existing_db", "seed", "compare_filters", "sweep", "json", "csv", "plot",
		"progress", "hit_ratio"} {
		if _, ok := config[flag]; !ok {
			t.Errorf("config lacks flag %q", flag)
		}
	}
	if config["num"] != float64(20000) || config["compare_filters"] != true {
		t.Errorf("config does not echo the flags: num=%v compare_filters=%v", config["num"], config["compare_filters"])
	}
	sh := doc["shape"].(map[string]any)
	levels := 0
	for _, l := range sh["levels"].([]any) {
		if l.(map[string]any)["files"].(float64) > 0 {
			levels++
		}
	}
	if levels < 2 {
		t.Errorf("tiny tree settled into %d level(s); the test wants several: %v", levels, sh)
	}
	// Memory on the record: resident filters and indexes, per key, and the
	// peak RSS (read from the system on Unix).
	for _, field := range []string{"filter_bytes_resident", "index_bytes_resident", "resident_bytes_per_key", "peak_rss_bytes"} {
		if v, _ := sh[field].(float64); v <= 0 && (field != "peak_rss_bytes" || runtime.GOOS != "windows") {
			t.Errorf("shape.%s = %v, want > 0", field, sh[field])
		}
	}
	if !strings.Contains(stdout, "memory   resident outside the block cache: filters ") {
		t.Errorf("the report does not show resident memory:\n%s", stdout)
	}

	results := resultsOf(t, doc)
	with := find(t, results, "readmissing", "filters")
	without := find(t, results, "readmissing", "ignore_filters")
	if with["filters_consulted"] != true || without["filters_consulted"] != false {
		t.Errorf("filters_consulted: with=%v without=%v", with["filters_consulted"], without["filters_consulted"])
	}
	if with["bloom_bits"] != float64(10) || without["bloom_bits"] != float64(10) {
		t.Errorf("bloom_bits: with=%v without=%v, want 10 for both (the same tables)", with["bloom_bits"], without["bloom_bits"])
	}
	bw, bwo := num(t, with, "data_blocks_per_get"), num(t, without, "data_blocks_per_get")
	if !(bw < bwo) {
		t.Errorf("data blocks per absent Get: with filters %.4f, without %.4f; want fewer with", bw, bwo)
	}
	// A miss without filters reads a block in every table it probes.
	if tp := num(t, without, "tables_probed_per_get"); bwo < 0.99*tp || tp < 1 {
		t.Errorf("without filters: %.3f blocks per absent Get for %.3f tables probed", bwo, tp)
	}
	if fp := num(t, with, "fp_rate_measured"); fp > 0.05 {
		t.Errorf("measured FP rate %.4f at 10 bits/key; theory is under 1%%", fp)
	}
	if without["fp_rate_measured"] != nil {
		t.Errorf("fp_rate_measured without consulting filters = %v, want null", without["fp_rate_measured"])
	}
	for _, pass := range []string{"filters", "ignore_filters"} {
		if r := find(t, results, "readrandom", pass); num(t, r, "ops") != 5000 || r["found"] != float64(5000) {
			t.Errorf("readrandom/%s: ops %v found %v, want 5000 and 5000", pass, r["ops"], r["found"])
		}
		if r := find(t, results, "readmissing", pass); r["found"] != float64(0) {
			t.Errorf("readmissing/%s found %v keys, want 0", pass, r["found"])
		}
	}
	// The same keys are read in both passes, so the tables probed match.
	if a, b := find(t, results, "readrandom", "filters")["tables_probed"], find(t, results, "readrandom", "ignore_filters")["tables_probed"]; a != b {
		t.Errorf("readrandom probed %v tables with filters and %v without: the passes read different keys", a, b)
	}
	if cs := doc["comparisons"].([]any); len(cs) != 8 {
		t.Errorf("%d comparisons, want 8 (one per read workload and round)", len(cs))
	}
	// The passes alternate, filters, ignored, filters, ignored, and the
	// second round reads as the first.
	var order []string
	for _, r := range results {
		if r["benchmark"] == "readmissing" && r["pass"] != "load" {
			order = append(order, fmt.Sprintf("%v/%v", r["pass"], r["round"]))
		}
	}
	if want := []string{"filters/1", "ignore_filters/1", "filters/2", "ignore_filters/2"}; !slices.Equal(order, want) {
		t.Errorf("readmissing passes ran %v, want %v", order, want)
	}
	for _, want := range []string{"with vs without filters", "readmissing (filters)", "readmissing (filters ignored)", "tree after load and settle"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

// TestSweepTiny is the second test issue 4 asks for: a sweep produces one
// row per setting (JSON, CSV and report), and the chart is a valid image.
func TestSweepTiny(t *testing.T) {
	dir := t.TempDir()
	jsonPath, csvPath, pngPath := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.csv"), filepath.Join(dir, "s.png")
	settings := []float64{0, 4, 10}
	args := append(slices.Clone(tinyTree), "-sweep", "off,4,10", "-json", jsonPath, "-csv", csvPath, "-plot", pngPath)
	stdout, _ := runOK(t, args...)
	checkReprint(t, jsonPath, stdout)

	results := resultsOf(t, readJSON(t, jsonPath))
	var missing []map[string]any
	for _, r := range results {
		if r["pass"] == "sweep" && r["benchmark"] == "readmissing" {
			missing = append(missing, r)
		}
	}
	if len(missing) != len(settings) {
		t.Fatalf("%d readmissing sweep results, want one per setting (%d)", len(missing), len(settings))
	}
	for i, r := range missing {
		want := settings[i]
		if want == 0 {
			want = -1
		}
		if r["bloom_bits"] != want {
			t.Errorf("sweep row %d: bloom_bits %v, want %v", i, r["bloom_bits"], want)
		}
	}
	// No filter: every miss reads a block of the one table it probes.
	// More bits: fewer false positives, fewer blocks.
	b0, b4, b10 := num(t, missing[0], "data_blocks_per_get"), num(t, missing[1], "data_blocks_per_get"), num(t, missing[2], "data_blocks_per_get")
	if !(b0 > b4 && b4 > b10) || b0 < 0.99 {
		t.Errorf("data blocks per absent Get at 0, 4, 10 bits/key: %.4f %.4f %.4f; want falling from about 1", b0, b4, b10)
	}
	if missing[0]["fp_rate_measured"] != nil || missing[0]["filter_bytes"] != float64(0) {
		t.Errorf("0 bits/key: fp_rate_measured %v, filter_bytes %v; want null and 0", missing[0]["fp_rate_measured"], missing[0]["filter_bytes"])
	}
	fp4, th4 := num(t, missing[1], "fp_rate_measured"), num(t, missing[1], "fp_rate_theory")
	if fp4 < th4/2 || fp4 > th4*2 {
		t.Errorf("4 bits/key: measured FP %.4f, theory %.4f; want within 2x on this sample", fp4, th4)
	}
	if bpk := num(t, missing[2], "filter_bits_per_key"); bpk < 9.5 || bpk > 11 {
		t.Errorf("10 bits/key setting spent %.2f bits/key", bpk)
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v", err)
	}
	if len(rows) != 1+len(results) {
		t.Errorf("CSV has %d rows, want a header and %d results", len(rows), len(results))
	}
	for _, col := range documentedResultFields {
		if !slices.Contains(rows[0], col) {
			t.Errorf("CSV header lacks %q", col)
		}
	}
	col := slices.Index(rows[0], "benchmark")
	n := 0
	for _, r := range rows[1:] {
		if r[col] == "readmissing" && r[slices.Index(rows[0], "pass")] == "sweep" {
			n++
		}
	}
	if n != len(settings) {
		t.Errorf("CSV has %d readmissing sweep rows, want %d", n, len(settings))
	}

	img, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	cfg, err := png.DecodeConfig(img)
	if err != nil {
		t.Fatalf("chart is not a valid PNG: %v", err)
	}
	if cfg.Width < 400 || cfg.Height < 400 {
		t.Errorf("chart is %dx%d pixels", cfg.Width, cfg.Height)
	}
	if _, err := img.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(img); err != nil {
		t.Errorf("chart PNG does not decode: %v", err)
	}
	if !strings.Contains(stdout, "sweep: readmissing") || !strings.Contains(stdout, "sweep: readrandom") {
		t.Errorf("report lacks the sweep tables:\n%s", stdout)
	}
}

// TestSweepSVG checks the other chart format on the smallest sweep.
func TestSweepSVG(t *testing.T) {
	svgPath := filepath.Join(t.TempDir(), "s.svg")
	runOK(t, "-num", "3000", "-reads", "1000", "-progress=false", "-benchmarks", "fillseq,readmissing", "-batch_size", "64",
		"-sweep", "off,8", "-plot", svgPath)
	data, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal(data, &root); err != nil || root.XMLName.Local != "svg" {
		t.Fatalf("chart is not an SVG document: %v (root %q)", err, root.XMLName.Local)
	}
}

// TestExistingDB fills a -db directory, then reuses it: the second run
// skips the fill and still finds every key.
func TestExistingDB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	common := []string{"-num", "5000", "-reads", "2000", "-progress=false", "-db", dir}
	runOK(t, append(common, "-benchmarks", "fillseq,readrandom")...)
	var out, errb bytes.Buffer
	if code := run(append(common, "-benchmarks", "fillseq"), &out, &errb); code != 1 || !strings.Contains(errb.String(), "not empty") {
		t.Errorf("refilling a used -db: exit %d, stderr %q; want 1 and a refusal", code, errb.String())
	}
	jsonPath := filepath.Join(t.TempDir(), "e.json")
	stdout, _ := runOK(t, append(common, "-use_existing_db", "-benchmarks", "fillrandom,readrandom,readmissing", "-json", jsonPath, "-threads", "3")...)
	results := resultsOf(t, readJSON(t, jsonPath))
	for _, r := range results {
		if r["pass"] == "load" {
			t.Errorf("-use_existing_db ran fill %v", r["benchmark"])
		}
	}
	if r := find(t, results, "readrandom", "read"); r["found"] != float64(2000) {
		t.Errorf("reused database: readrandom found %v of 2000", r["found"])
	}
	if strings.Contains(stdout, "WARNING") {
		t.Errorf("unexpected warning:\n%s", stdout)
	}
	// Reading with another -num finds the keys missing, and says why.
	stdout, _ = runOK(t, "-num", "7000", "-reads", "500", "-progress=false", "-db", dir, "-use_existing_db", "-benchmarks", "readrandom")
	if !strings.Contains(stdout, "WARNING: readrandom") {
		t.Errorf("a database filled with another -num gave no warning:\n%s", stdout)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-benchmarks", "readfast"},
		{"-num", "1"},
		{"-key_size", "4"},
		{"-sweep", "2,x"},
		{"-sweep", "65"},
		{"-plot", "a.png"},
		{"-sweep", "1", "-plot", "a.gif"},
		{"-compare_filters", "-sweep", "4"},
		{"-compare_filters", "-filter_bits", "-1"},
		{"-sweep", "0,4"},
		{"-bloom_bits", "8", "-filter_bits", "9"},
		{"-compare_filters", "-read_compactions"},
		{"-use_existing_db"},
		{"-benchmarks", "readrandom"},
		{"-hit_ratio", "1.5"},
		{"-filter_pinning", "some"},
		{"-sweep", "4", "-filter_sweep", "standard", "-plot", "a.png"},
		{"-benchmarks", "fillrandom,scanempty", "-range_sweep", "1"},
		{"-benchmarks", "fillrandom,scanempty", "-range_sweep", "8,x"},
		{"-benchmarks", "fillrandom,scanempty", "-range_widths", "16"},
		{"-benchmarks", "fillrandom,scanempty", "-range_sweep", "8", "-range_widths", "0"},
		{"-benchmarks", "fillrandom,readrandom", "-range_sweep", "8"},
		{"-benchmarks", "fillrandom,scanempty", "-range_sweep", "8", "-sweep", "4"},
		{"stray"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("kvbench %v: exit %d, stderr %q; want 2 and a message", args, code, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("kvbench %v wrote a report for bad flags", args)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "-compare_filters") {
		t.Errorf("-h: exit %d, usage %q", code, errb.String())
	}
}

// TestCSVColumnsMatchJSON pins that CSV columns are the JSON names.
func TestCSVColumnsMatchJSON(t *testing.T) {
	one := 1.0
	data, err := json.Marshal(&result{FPRateMeasured: &one})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	cols := csvColumns()
	if len(cols) != len(m) {
		t.Errorf("%d CSV columns, %d JSON fields", len(cols), len(m))
	}
	for _, c := range cols {
		if _, ok := m[c]; !ok {
			t.Errorf("CSV column %q is not a JSON field", c)
		}
	}
	var buf bytes.Buffer
	if err := writeCSV(&buf, []*result{{Benchmark: "readmissing", FPRateMeasured: &one, FilesPerLevel: []int{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	get := func(col string) string { return rows[1][slices.Index(rows[0], col)] }
	if get("fp_rate_measured") != "1" || get("fp_rate_theory") != "" || get("files_per_level") != "1 2" {
		t.Errorf("CSV cells: fp_rate_measured %q, fp_rate_theory %q, files_per_level %q",
			get("fp_rate_measured"), get("fp_rate_theory"), get("files_per_level"))
	}
}

// TestRowWorkloads: with -rows, the prefix seeks find every column of a
// written row and nothing of an absent one (a fresh run errors otherwise),
// readmissingcol finds nothing, and the row filters spare absent-row seeks
// nearly every block.
func TestRowWorkloads(t *testing.T) {
	var out, errb bytes.Buffer
	jsonPath := filepath.Join(t.TempDir(), "rows.json")
	args := []string{"-rows", "2000", "-cols_per_row", "5", "-reads", "4000", "-progress=false", "-json", jsonPath,
		"-benchmarks", "fillrandom,seekprefix,seekprefixmissing,readmissingcol", "-compare_filters",
		"-max_bytes_for_level_base", "65536", "-target_file_size_base", "32768", "-write_buffer_size", "65536"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	checkReprint(t, jsonPath, out.String())
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			Benchmark       string   `json:"benchmark"`
			Pass            string   `json:"pass"`
			DataBlocksPerOp *float64 `json:"data_blocks_per_op"`
		} `json:"results"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	blocks := map[string]float64{}
	for _, r := range doc.Results {
		if r.Benchmark == "seekprefixmissing" && r.DataBlocksPerOp != nil {
			blocks[r.Pass] = *r.DataBlocksPerOp
		}
	}
	if with, without := blocks["filters"], blocks["ignore_filters"]; without == 0 || with > without/5 {
		t.Fatalf("absent-row seeks read %.3f blocks with filters, %.3f without", with, without)
	}
	report := out.String()
	for _, want := range []string{"per seek", "seekprefixmissing (filters)", "data blocks/seek"} {
		if !strings.Contains(report, want) {
			t.Fatalf("report lacks %q:\n%s", want, report)
		}
	}
	if code := run([]string{"-benchmarks", "seekprefix"}, &out, &errb); code != 2 {
		t.Fatalf("seekprefix without -rows: exit %d, want 2", code)
	}
}

// TestRowWorkloadsInSweep: a bits-per-key sweep reports prefix seeks per
// seek (from the iterator metrics), with a measured false-positive rate for
// absent rows that falls as the bits grow.
func TestRowWorkloadsInSweep(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-rows", "2000", "-cols_per_row", "5", "-reads", "20000", "-progress=false",
		"-benchmarks", "fillrandom,seekprefixmissing", "-sweep", "4,12",
		"-max_bytes_for_level_base", "65536", "-target_file_size_base", "32768", "-write_buffer_size", "65536"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	report := out.String()
	i := strings.Index(report, "sweep: seekprefixmissing")
	if i < 0 || !strings.Contains(report[i:], "blocks/seek") {
		t.Fatalf("no per-seek sweep table:\n%s", report)
	}
	var rates []float64
	for _, line := range strings.Split(report[i:], "\n")[1:3] {
		f := strings.Fields(line) // "4 bits/key spent k mem unit FP% ..."
		if len(f) < 7 {
			t.Fatalf("short sweep row %q", line)
		}
		rate, err := strconv.ParseFloat(strings.TrimSuffix(f[6], "%"), 64)
		if err != nil {
			t.Fatalf("sweep row %q: FP rate %q: %v", line, f[6], err)
		}
		rates = append(rates, rate)
	}
	if !(rates[0] > rates[1]) {
		t.Fatalf("FP rate at 4 bits/key %.3g%% not above 12 bits/key's %.3g%%:\n%s", rates[0], rates[1], report[i:])
	}
}

// TestCacheFilterBlocksFlag: -cache_filter_blocks keeps filters in a block
// cache smaller than they are; the report shows the filter-cache table
// with lookups per Get, and every present key is still found.
func TestCacheFilterBlocksFlag(t *testing.T) {
	args := append(slices.Clone(tinyTree), "-cache_filter_blocks", "-filter_pinning", "none", "-cache_size", "16384",
		"-benchmarks", "fillrandom,readrandom,readmissing")
	stdout, _ := runOK(t, args...)
	if !strings.Contains(stdout, "filters in block cache") || !strings.Contains(stdout, "5000/5000") {
		t.Errorf("report:\n%s", stdout)
	}
}
