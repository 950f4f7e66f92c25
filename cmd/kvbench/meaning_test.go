package main

import (
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestZeroMeansDefault pins issue 30's "one meaning for 0": every kvbench
// flag reads 0 as bloomkv.Options does (the default) and a negative value
// as off, and -bloom_bits is an alias of -filter_bits, not a second
// setting. Before, -bloom_bits 0 wrote tables without filters and
// -cache_size 0 turned the cache off.
func TestZeroMeansDefault(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		bits      int     // the tables' whole bits per key, -1 = none
		cache     int64   // Options.BlockCacheSize kvbench passes
		bitsSaid  float64 // Options.BloomBitsPerKey / FilterBitsPerKey kvbench passes, -1 = none
		fractured bool    // the budget goes in FilterBitsPerKey
	}{
		{nil, 10, 8 << 20, 10, false},
		{[]string{"-filter_bits", "0"}, 10, 8 << 20, 10, false},
		{[]string{"-bloom_bits", "0"}, 10, 8 << 20, 10, false},
		{[]string{"-bloom_bits", "4"}, 4, 8 << 20, 4, false},
		{[]string{"-filter_bits", "-1"}, -1, 8 << 20, -1, false},
		{[]string{"-bloom_bits", "-3"}, -1, 8 << 20, -1, false},
		{[]string{"-filter_bits", "9.5"}, 10, 8 << 20, 9.5, true},
		{[]string{"-bloom_bits", "8", "-filter_bits", "8"}, 8, 8 << 20, 8, false},
		{[]string{"-cache_size", "0"}, 10, 8 << 20, 10, false},
		{[]string{"-cache_size", "-5"}, 10, -1, 10, false},
		{[]string{"-cache_size", "65536"}, 10, 65536, 10, false},
	} {
		var errb bytes.Buffer
		c, err := parseConfig(tc.args, &errb)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		s := &study{cfg: c}
		o := s.options(c.bloomBits, false)
		said := float64(o.BloomBitsPerKey)
		if o.FilterBitsPerKey > 0 {
			said = o.FilterBitsPerKey
		}
		if c.bloomBits != tc.bits || o.BlockCacheSize != tc.cache || said != tc.bitsSaid || (o.FilterBitsPerKey > 0) != tc.fractured {
			t.Errorf("%v: tables %d bits/key, Options{BloomBitsPerKey: %d, FilterBitsPerKey: %g, BlockCacheSize: %d}; want %d bits/key, %g, cache %d",
				tc.args, c.bloomBits, o.BloomBitsPerKey, o.FilterBitsPerKey, o.BlockCacheSize, tc.bits, tc.bitsSaid, tc.cache)
		}
		// A script that meant the old 0 hears about the change.
		if (slices.Equal(tc.args, []string{"-bloom_bits", "0"}) || slices.Equal(tc.args, []string{"-cache_size", "0"})) && !strings.Contains(errb.String(), "-1") {
			t.Errorf("%v: no note on stderr about the new meaning of 0: %q", tc.args, errb.String())
		}
	}
}

// TestZeroSpellingsRefused: a -sweep list's 0 used to mean "no filter";
// it is refused with a pointer to off rather than read another way, and
// two spellings of one setting must agree.
func TestZeroSpellingsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-sweep", "0,4"},
		{"-bloom_bits", "8", "-filter_bits", "9"},
		{"-filter_bits", "65"},
	} {
		if _, err := parseConfig(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	c, err := parseConfig([]string{"-sweep", "off,4,-1"}, &bytes.Buffer{})
	if err != nil || !slices.Equal(c.sweep, []int{-1, 4, -1}) {
		t.Errorf("-sweep off,4,-1: %v %v, want [-1 4 -1]", c, err)
	}
}

// TestHelpSaysWhatZeroMeans: the flag help, not only the docs, says what
// 0 and negatives mean, and what the default run shows.
func TestHelpSaysWhatZeroMeans(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	help := errb.String()
	for _, want := range []string{
		"0 = the engine default (10), negative = tables without filters",
		"0 = the engine default (8.0 MiB), negative = no block cache",
		"deprecated alias of -filter_bits",
		"Options.IgnoreFilters",
		"legend",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("-h lacks %q:\n%s", want, help)
		}
	}
}

// TestDefaultReportShowsWhatFiltersBought runs the default study (no
// -compare_filters) on a tiny tree: the report must answer its own
// question, with a without-filters baseline on the same tables and a
// legend, and the JSON must carry the comparison.
func TestDefaultReportShowsWhatFiltersBought(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	stdout, _ := runOK(t, append(slices.Clone(tinyTree), "-baseline_reads", "1000", "-json", jsonPath)...)
	checkReprint(t, jsonPath, stdout)
	for _, want := range []string{
		"filters written with 10 bits/key",
		"what the filters bought",
		"readmissing: ", "fewer data blocks read per Get",
		"readmissing (filters ignored)",
		"with vs without filters",
		// One line of each legend.
		"p50 = the median",
		"filter neg: of those, skipped",
		"tables considered per Get in that level",
		"reading the first 1000 of the same keys",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("default report lacks %q:\n%s", want, stdout)
		}
	}
	doc := readJSON(t, jsonPath)
	results := resultsOf(t, doc)
	with, without := find(t, results, "readmissing", "read"), find(t, results, "readmissing", "ignore_filters")
	if num(t, without, "ops") != 1000 || without["filters_consulted"] != false {
		t.Errorf("baseline readmissing: ops %v filters_consulted %v, want 1000 and false", without["ops"], without["filters_consulted"])
	}
	if bw, bwo := num(t, with, "data_blocks_per_get"), num(t, without, "data_blocks_per_get"); !(bw < bwo/5) {
		t.Errorf("data blocks per absent Get: with filters %.4f, without %.4f", bw, bwo)
	}
	if cs, _ := doc["comparisons"].([]any); len(cs) != 2 {
		t.Errorf("%d comparisons, want 2 (readrandom, readmissing)", len(cs))
	}
	// A theory is printed only beside a measured rate.
	if without["fp_rate_theory"] != nil {
		t.Errorf("fp_rate_theory %v for reads that ignored the filters", without["fp_rate_theory"])
	}

	quiet, _ := runOK(t, "-num", "2000", "-reads", "200", "-progress=false", "-legend=false", "-baseline_reads", "-1")
	if strings.Contains(quiet, "filter neg: of those") || strings.Contains(quiet, "what the filters bought") {
		t.Errorf("-legend=false -baseline_reads -1 still printed a legend or a baseline:\n%s", quiet)
	}
}

// TestSweepReportAgrees: a sweep's header names no single filter setting,
// each recompaction row's tree adds up to its own table count, and a
// setting without filters prints no theory beside its missing FP rate.
func TestSweepReportAgrees(t *testing.T) {
	stdout, _ := runOK(t, append(slices.Clone(tinyTree), "-sweep", "off,4", "-benchmarks", "fillrandom,readrandom")...)
	if strings.Contains(stdout, "filters written with") {
		t.Errorf("sweep header names one filter setting:\n%s", stdout)
	}
	lines := strings.Split(stdout, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "recompaction") })
	if i < 0 {
		t.Fatalf("no recompaction table:\n%s", stdout)
	}
	for _, l := range lines[i+1 : i+3] {
		// "no filter  0.1  12  L1 3, L2 9  0 B  0.00": label (two words),
		// seconds, tables, then the tree as level and count pairs.
		f := strings.Fields(strings.ReplaceAll(l, ",", ""))
		sum := 0
		for j := 4; j+1 < len(f); j += 2 {
			if !strings.HasPrefix(f[j], "L") {
				break
			}
			n, err := strconv.Atoi(f[j+1])
			if err != nil {
				t.Fatalf("recompaction row %q: %v", l, err)
			}
			sum += n
		}
		if f[3] != strconv.Itoa(sum) {
			t.Errorf("recompaction row %q: %s tables, its tree adds up to %d", l, f[3], sum)
		}
	}
	// In the per-workload sweep tables, "no filter  0.00  -  0 B  -  -
	// ...": FP rate and theory both "-".
	inSweep := false
	for _, l := range lines {
		switch f := strings.Fields(l); {
		case strings.HasPrefix(l, "sweep: "):
			inSweep = true
		case l == "":
			inSweep = false
		case inSweep && strings.HasPrefix(l, "no filter") && len(f) > 7:
			if f[6] != "-" || f[7] != "-" {
				t.Errorf("no-filter sweep row gives FP rate %s, theory %s; want - and -: %q", f[6], f[7], l)
			}
		}
	}
}

// TestShapeFlagsReachOptions: the tree-shape and I/O flags set the
// Options they name: dynamic level sizes unless -dynamic_level_bytes=false
// (the engine's default), mmap unless -disable_mmap.
func TestShapeFlagsReachOptions(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		dynamic, mmap bool
	}{
		{nil, true, false},
		{[]string{"-dynamic_level_bytes=false"}, false, false},
		{[]string{"-disable_mmap"}, true, true},
		{[]string{"-disable_mmap", "-dynamic_level_bytes=false"}, false, true},
	} {
		c, err := parseConfig(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		o := (&study{cfg: c}).options(c.bloomBits, false)
		if o.StaticLevelBytes == tc.dynamic || o.DisableMmap != tc.mmap {
			t.Errorf("%v: StaticLevelBytes %v, DisableMmap %v; want %v, %v", tc.args, o.StaticLevelBytes, o.DisableMmap, !tc.dynamic, tc.mmap)
		}
	}
}
