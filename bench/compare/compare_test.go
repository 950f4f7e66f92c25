package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/cputime"
)

// TestEveryWorkloadEveryEngine runs every workload on every engine in every
// pairing with a small key space and checks that the figures are sane. The
// run itself already fails on any Get that finds an absent key, misses a
// present one or returns a wrong value, and on a database that does not
// hold exactly the keys its fill wrote.
func TestEveryWorkloadEveryEngine(t *testing.T) {

	const num, reads, scanLength = 2000, 2000, 10
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	args := []string{"-num", "2000", "-reads", "2000", "-durability", "all", "-settle_quiet", "60ms", "-scan_length", "10",
		"-dir", t.TempDir(), "-json", jsonPath, "-note", "smoke test"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d\nstderr:\n%s", code, stderr.String())
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}

	wantEngines := map[string][]string{
		"write-through": {"bloomkv", "goleveldb"},
		"buffered":      {"bloomkv", "pebble", "pebble-l6"},
		"sync":          {"bloomkv", "pebble", "pebble-l6", "goleveldb"},
	}
	if len(rep.Pairings) != len(wantEngines) {
		t.Fatalf("%d pairings, want %d", len(rep.Pairings), len(wantEngines))
	}
	for _, p := range rep.Pairings {
		if !slices.Equal(p.Engines, wantEngines[p.Durability]) {
			t.Errorf("%s: engines %v, want %v", p.Durability, p.Engines, wantEngines[p.Durability])
		}
		if want := map[string]int{"sync": 8}[p.Durability]; p.Writers != max(want, 1) {
			t.Errorf("%s: %d writers, want %d", p.Durability, p.Writers, max(want, 1))
		}
		for _, e := range p.Engines {
			results := p.Medians[e]
			for _, w := range allWorkloads {
				m, ok := results[w]
				if !ok {
					t.Errorf("%s %s: no %s result", p.Durability, e, w)
					continue
				}
				if m.OpsPerSec <= 0 || m.P50us <= 0 || m.P99us < m.P50us {
					t.Errorf("%s %s %s: ops/s %g, p50 %g, p99 %g", p.Durability, e, w, m.OpsPerSec, m.P50us, m.P99us)
				}
				// CPU time, read in the child process that ran the engine.
				if cputime.Process() > 0 && (m.CPUSeconds <= 0 || m.CPUUsPerOp <= 0 || m.CPUUsPerOp > m.CPUSeconds*1e6/float64(m.Ops)*1.000001) {
					t.Errorf("%s %s %s: cpu_seconds %g, cpu_us_per_op %g over %d ops", p.Durability, e, w, m.CPUSeconds, m.CPUUsPerOp, m.Ops)
				}
				var wantOps int64 = reads
				switch w {
				case fillSeq, fillRandom:
					wantOps = num
					if m.Found != num {
						t.Errorf("%s %s %s: wrote %d keys, want %d", p.Durability, e, w, m.Found, num)
					}
				case readRandom:
					if m.Found != reads {
						t.Errorf("%s %s readrandom: found %d of %d", p.Durability, e, m.Found, reads)
					}
				case readMissing:
					if m.Found != 0 {
						t.Errorf("%s %s readmissing: found %d absent keys", p.Durability, e, m.Found)
					}
				case readMixed:
					if m.Found < reads/4 || m.Found > reads*3/4 {
						t.Errorf("%s %s readmixed: found %d of %d at hit ratio 0.5", p.Durability, e, m.Found, reads)
					}
				case scanBench:
					if m.Found < reads*(scanLength-1) || m.Found > reads*scanLength {
						t.Errorf("%s %s scan: visited %d entries in %d seeks of %d", p.Durability, e, m.Found, reads, scanLength)
					}
				}
				if m.Ops != wantOps {
					t.Errorf("%s %s %s: %d ops, want %d", p.Durability, e, w, m.Ops, wantOps)
				}
			}
		}
		for _, peer := range p.Engines[1:] {
			if r := p.Ratios[fillRandom][peer]; r <= 0 {
				t.Errorf("%s: no fillrandom ratio against %s", p.Durability, peer)
			}
		}
	}
	for _, e := range rep.Engines {
		if e.Version == "" || e.Version == "unknown" {
			t.Errorf("%s: version %q", e.Name, e.Version)
		}
	}
	if rep.Machine.NumCPU < 1 || rep.Date == "" || rep.Flags["num"] != float64(num) {
		t.Errorf("machine %+v, date %q, flags %v", rep.Machine, rep.Date, rep.Flags)
	}
	for _, want := range []string{"### write-through", "### buffered", "### sync", "bloomkv/pebble", "bloomkv/goleveldb",
		"pebble: not in this pairing", "goleveldb: not in this pairing", "Memory for reads", "Compactions while reads were timed",
		"command: `go run . -num 2000", "CPU time per operation", "| bloomkv CPU µs/op | pebble CPU µs/op |", "pebble/bloomkv"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, p := range rep.Pairings {
		for _, r := range p.Runs {
			m := r.Memory
			switch {
			case m == nil:
				t.Errorf("%s %s: no memory report", p.Durability, r.Engine)
			case m.BlockCache <= 0 || m.BlockCache > 8<<20 || m.AfterReads.FilterBytes <= 0 || m.AfterReads.IndexBytes <= 0:
				t.Errorf("%s %s: block cache %d, filters %d B, index %d B", p.Durability, r.Engine, m.BlockCache, m.AfterReads.FilterBytes, m.AfterReads.IndexBytes)
			case r.Engine == "bloomkv" && m.BlockCache+m.AfterReads.OutsideCacheBytes > 8<<20:
				// -memory equal: the index outside the cache is charged to it.
				t.Errorf("%s bloomkv: cache %d + outside %d above 8 MiB", p.Durability, m.BlockCache, m.AfterReads.OutsideCacheBytes)
			case r.Engine != "bloomkv" && m.AfterReads.OutsideCacheBytes != 0:
				t.Errorf("%s %s: %d B outside the cache", p.Durability, r.Engine, m.AfterReads.OutsideCacheBytes)
			}
			if r.FillWriteAmp < 1 {
				t.Errorf("%s %s: fill write amplification %g", p.Durability, r.Engine, r.FillWriteAmp)
			}
			if len(r.DuringReads) != 4 {
				t.Errorf("%s %s: background work recorded for %d read workloads, want 4", p.Durability, r.Engine, len(r.DuringReads))
			}
		}
	}

	// The published tables are regenerated from the JSON alone.
	var again bytes.Buffer
	if code := run([]string{"-report", jsonPath}, &again, &stderr); code != 0 {
		t.Fatalf("-report: exit code %d\nstderr:\n%s", code, stderr.String())
	}
	if again.String() != stdout.String() {
		t.Errorf("-report printed\n%s\nthe run printed\n%s", again.String(), stdout.String())
	}
}

func TestRotate(t *testing.T) {
	names := []string{"a", "b", "c"}
	for r, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}} {
		if got := rotate(names, r); !slices.Equal(got, want) {
			t.Errorf("rotate(%v, %d) = %v, want %v", names, r, got, want)
		}
	}
}

// TestPublishedReports: every report committed under docs/benchmarks/
// still parses with today's report code, and every table line it prints
// appears in docs/benchmarks.md, so the published figures are the ones the
// JSON beside them holds.
func TestPublishedReports(t *testing.T) {
	paths, _ := filepath.Glob("../../docs/benchmarks/*.json")
	if len(paths) == 0 {
		t.Skip("no committed reports")
	}
	doc, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		rep, err := readReport(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		var out bytes.Buffer
		writeText(&out, rep)
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "| ") && !strings.Contains(string(doc), line) {
				t.Errorf("%s: docs/benchmarks.md lacks the line\n%s\n(regenerate with: go run . -report %s)", path, line, path)
			}
		}
	}
}

// TestKeySpace checks the key space's promises: keys grow with the slot,
// so every absent key lies strictly between two present ones, and keys and
// values have the sizes asked for and depend only on the slot.
func TestKeySpace(t *testing.T) {
	ks := newKeySpace(1000, 20, 100, 0.5)
	var prev []byte
	for slot := range uint64(2000) {
		k := ks.key(nil, slot)
		if len(k) != 20 {
			t.Fatalf("slot %d: key of %d bytes", slot, len(k))
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("slot %d: key %x not above %x", slot, k, prev)
		}
		prev = k
	}
	if v1, v2 := ks.value(nil, 42), ks.value(nil, 42); !bytes.Equal(v1, v2) || len(v1) != 100 {
		t.Fatalf("values of one slot differ or have the wrong size: %d bytes", len(v1))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		if s := ks.randomAbsent(rng); s%2 != 1 || s >= 2*1000-1 {
			t.Fatalf("absent slot %d", s)
		}
		if s := ks.randomPresent(rng); s%2 != 0 || s >= 2*1000 {
			t.Fatalf("present slot %d", s)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-durability", "fast"}, {"-engines", "rocksdb"}, {"-benchmarks", "fillall"}, {"-num", "1"}, {"-key_size", "4"},
		{"-cols_per_row", "7"}, {"-cols_per_row", "10", "-key_size", "12"}, {"-benchmarks", "seekprefix"},
		{"-settings", "tuned"}, {"-memory", "more"}, {"-settle", "never"}, {"-read_compactions", "-no_read_compactions"},
	} {
		if code := run(args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
	}
}

// TestRowKeySpace checks the row layout's promises: keys still grow with
// the slot; each present row has its columns under one prefix; an absent
// row's prefix lies strictly between two present rows' and is the prefix
// of no key.
func TestRowKeySpace(t *testing.T) {
	const num, cols = 1000, 10
	ks := newKeySpace(num, 24, 100, 0.5).withRows(cols)
	var prev []byte
	for slot := range uint64(2 * num) {
		k := ks.key(nil, slot)
		if len(k) != 24 {
			t.Fatalf("slot %d: key of %d bytes", slot, len(k))
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("slot %d: key %x not above %x", slot, k, prev)
		}
		prev = k
		row := ks.rowPrefix(nil, 2*(slot/2/cols))
		if !bytes.HasPrefix(k, row) {
			t.Fatalf("slot %d: key %x lacks its row prefix %x", slot, k, row)
		}
	}
	for rs := uint64(1); rs < 2*num/cols-1; rs += 2 {
		below, absent, above := ks.rowPrefix(nil, rs-1), ks.rowPrefix(nil, rs), ks.rowPrefix(nil, rs+1)
		if bytes.Compare(below, absent) >= 0 || bytes.Compare(absent, above) >= 0 {
			t.Fatalf("absent row %d: prefix %x not between %x and %x", rs, absent, below, above)
		}
	}
}

// TestPrefixWorkloads runs the row layout's workloads on bloomkv and Pebble
// (goleveldb has no prefix seek and is left out of them). The run checks
// every seek: a present row yields exactly its columns, an absent one
// nothing.
func TestPrefixWorkloads(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	args := []string{"-num", "3000", "-cols_per_row", "10", "-settle_quiet", "60ms", "-reads", "1000", "-durability", "write-through,buffered",
		"-benchmarks", "fillrandom,seekprefix,seekprefixmissing,readmissing", "-dir", t.TempDir(), "-json", jsonPath}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d\nstderr:\n%s", code, stderr.String())
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Pairings {
		for _, e := range p.Engines {
			for _, w := range prefixWorkloads {
				m, ok := p.Medians[e][w]
				if e == "goleveldb" {
					if ok {
						t.Errorf("%s: goleveldb ran %s", p.Durability, w)
					}
					continue
				}
				if !ok || m.Ops != 1000 || m.OpsPerSec <= 0 {
					t.Errorf("%s %s %s: %+v (present %v)", p.Durability, e, w, m, ok)
				}
				if want := map[string]int64{seekPrefix: 1000 * 10, seekPrefixMissing: 0}[w]; m.Found != want {
					t.Errorf("%s %s %s: visited %d entries, want %d", p.Durability, e, w, m.Found, want)
				}
			}
		}
	}
}

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/sample-report.txt from testdata/sample-report.json")

// TestSampleReport: a committed report (a small run, a format sample, not a
// benchmark) still parses and prints exactly as committed, so a change to
// the report code that would change published tables shows here first
// (go test -rewrite accepts it).
func TestSampleReport(t *testing.T) {
	rep, err := readReport("testdata/sample-report.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeText(&out, rep)
	if *rewrite {
		if err := os.WriteFile("testdata/sample-report.txt", out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/sample-report.txt")
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("testdata/sample-report.json prints\n%s\nnot testdata/sample-report.txt:\n%s\n(go test -rewrite if the change is meant)", out.String(), want)
	}
}

// TestOtherModes runs the modes the published tables do not use: the
// shape set alike, every cache the same size, a full compaction to settle,
// read-triggered compactions on. As-set memory leaves bloomkv's filters and
// index outside its full-size cache, and the report says how much.
func TestOtherModes(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	args := []string{"-num", "2000", "-reads", "500", "-settle_quiet", "60ms", "-settings", "matched", "-memory", "as-set", "-settle", "compact",
		"-read_compactions", "-benchmarks", "fillrandom,readrandom,readmissing,scan", "-dir", t.TempDir(), "-json", jsonPath}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d\nstderr:\n%s", code, stderr.String())
	}
	rep, err := readReport(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Params; p.Settings != "matched" || p.Memory != "as-set" || p.Settle != "compact" || !p.ReadCompactions {
		t.Errorf("params %+v", p)
	}
	for _, p := range rep.Pairings {
		for _, r := range p.Runs {
			if r.Memory == nil || r.Memory.BlockCache != 8<<20 {
				t.Errorf("%s %s: memory %+v, want an 8 MiB block cache", p.Durability, r.Engine, r.Memory)
				continue
			}
			out := r.Memory.AfterReads.OutsideCacheBytes
			if want := r.Memory.AfterReads.FilterBytes + r.Memory.AfterReads.IndexBytes; r.Engine == "bloomkv" && out != want {
				t.Errorf("%s bloomkv: %d B outside the cache, want its filters and index, %d B", p.Durability, out, want)
			}
		}
	}
	if !strings.Contains(stdout.String(), "shape matched") {
		t.Errorf("report does not say the shape was matched:\n%s", stdout.String())
	}
}
