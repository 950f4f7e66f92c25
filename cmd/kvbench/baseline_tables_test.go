package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestBaselineSameTables: the default run's report says its without-filters
// baseline read "the same tables" as the filtered pass; when a table is
// added between the passes, the run must fail instead of printing that.
func TestBaselineSameTables(t *testing.T) {
	args := append(slices.Clone(tinyTree), "-benchmarks", "fillrandom,readrandom,readmissing")
	// Untouched, the check passes and the comparison is printed.
	if stdout, _ := runOK(t, args...); !strings.Contains(stdout, "the same tables") {
		t.Fatalf("default run printed no comparison:\n%s", stdout)
	}
	testBetweenPasses = func(s *study) {
		db, err := s.open(s.cfg.bloomBits, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Put([]byte("zzzz-a-key-after-the-filtered-pass"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { testBetweenPasses = nil }()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "did not read the same tables") {
		t.Errorf("a table added between the passes: exit %d, stderr %q; want a failure naming the changed tables", code, errb.String())
	}
	if strings.Contains(out.String(), "the same tables") {
		t.Errorf("a table added between the passes, yet the report says the same tables:\n%s", out.String())
	}
}

// TestBaselineReadCompactions: with -read_compactions the filtered pass may
// change the tables, so the default run has no baseline, and an explicit
// -baseline_reads is refused.
func TestBaselineReadCompactions(t *testing.T) {
	args := append(slices.Clone(tinyTree), "-benchmarks", "fillrandom,readrandom", "-read_compactions")
	stdout, stderr := runOK(t, args...)
	if strings.Contains(stdout, "the same tables") || strings.Contains(stdout, "ignore_filters") {
		t.Errorf("-read_compactions: the default run still ran a baseline:\n%s", stdout)
	}
	if !strings.Contains(stderr, "no without-filters baseline") {
		t.Errorf("-read_compactions: no note that the baseline is left out; stderr %q", stderr)
	}
	var out, errb bytes.Buffer
	if code := run(append(args, "-baseline_reads", "100"), &out, &errb); code != 2 || errb.Len() == 0 {
		t.Errorf("-read_compactions -baseline_reads 100: exit %d, stderr %q; want 2 and a message", code, errb.String())
	}
}
