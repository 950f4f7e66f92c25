package main

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/cputime"
)

// TestCPUTimeTiny: a tiny run records, for every workload, the process's
// CPU time over its timed phase (positive) and that time per operation,
// prints them in a table of their own, and -report reprints it exactly.
func TestCPUTimeTiny(t *testing.T) {
	if cputime.Process() == 0 {
		t.Skip("this system does not report process CPU time")
	}
	jsonPath := filepath.Join(t.TempDir(), "cpu.json")
	stdout, _ := runOK(t, append(tinyTree, "-json", jsonPath)...)
	checkReprint(t, jsonPath, stdout)
	results := resultsOf(t, readJSON(t, jsonPath))
	for _, r := range results {
		cpu, perOp, ops := num(t, r, "cpu_seconds"), num(t, r, "cpu_us_per_op"), num(t, r, "ops")
		if cpu <= 0 || perOp <= 0 {
			t.Errorf("%v/%v: cpu_seconds %v, cpu_us_per_op %v: want both positive", r["benchmark"], r["pass"], cpu, perOp)
		}
		if want := cpu * 1e6 / ops; math.Abs(perOp-want) > 1e-6*want {
			t.Errorf("%v/%v: cpu_us_per_op %v, want cpu_seconds*1e6/ops = %v", r["benchmark"], r["pass"], perOp, want)
		}
	}
	_, table, ok := strings.Cut(stdout, "\ncpu time ")
	if !ok {
		t.Fatalf("no cpu time table in the report:\n%s", stdout)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	if rows := strings.Count(table, "\n"); rows != len(results) {
		t.Errorf("the cpu time table has %d rows, the JSON %d results:\n%s", rows, len(results), table)
	}
}

// TestCPUTableOnlyWithTheField: a report written before the CPU figures
// (every committed one today) prints no CPU table, so it reprints as it
// did; the same report with the figures filled in does.
func TestCPUTableOnlyWithTheField(t *testing.T) {
	rep, err := readReport(filepath.Join("..", "..", "docs", "kvbench", "default-1m.json"))
	if err != nil {
		t.Fatal(err)
	}
	var before bytes.Buffer
	if err := printReport(&before, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(before.String(), "cpu time") {
		t.Fatalf("a report without cpu_seconds printed a CPU table:\n%s", before.String())
	}
	for _, r := range rep.Results {
		r.CPUSeconds, r.CPUUsPerOp = 0.5, 0.5e6/float64(r.Ops)
	}
	var after bytes.Buffer
	if err := printReport(&after, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(after.String(), "\ncpu time ") || !strings.HasPrefix(after.String(), strings.Split(before.String(), "\ncpu")[0]) {
		t.Errorf("with cpu_seconds set: want the same report plus a CPU table, got\n%s", after.String())
	}
}
