package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program: the report goes to stdout, progress and errors
// to stderr. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "compare:", err)
		return 2
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "compare:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "compare:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := compare(cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "compare:", err)
		return 1
	}
	writeText(stdout, rep)
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			fmt.Fprintln(stderr, "compare:", err)
			return 1
		}
	}
	return 0
}

// compare runs every selected pairing on every engine that can take part,
// -runs times with the engines interleaved, and gathers the report.
func compare(cfg *config, progress io.Writer) (*report, error) {
	begin := time.Now()
	rep := newReport(cfg)
	ks := newKeySpace(cfg.num, cfg.keySize, cfg.valueSize, cfg.compressionRatio)
	if cfg.colsPerRow > 0 {
		ks.withRows(cfg.colsPerRow)
	}
	for r := range cfg.runs {
		for i, d := range cfg.durabilities {
			p := &rep.Pairings[i]
			for _, name := range p.Engines {
				e := engineByName(name)
				er, err := runEngine(cfg, ks, e, d, r, progress)
				if err != nil {
					return nil, fmt.Errorf("run %d, %s, %s: %w", r+1, d, e.name, err)
				}
				p.Runs = append(p.Runs, er)
			}
		}
	}
	rep.finish()
	rep.Seconds = time.Since(begin).Seconds()
	return rep, nil
}

// engineRun is what one engine did in one pairing in one run.
type engineRun struct {
	Engine  string                 `json:"engine"`
	Run     int                    `json:"run"`
	Results map[string]measurement `json:"results"`
	// Settled is the fillrandom tree the reads started on; AfterReads is
	// it after the reads (it differs only if the engine compacted during
	// them).
	Settled    *treeShape `json:"settled,omitempty"`
	AfterReads *treeShape `json:"after_reads,omitempty"`
	// SettleSeconds is how long the settling after fillrandom took.
	SettleSeconds float64 `json:"settle_seconds,omitempty"`
}

// runEngine runs the selected workloads on engine e with durability d:
// fillseq on a fresh database, then fillrandom on another, which is settled
// and read. Every database lives in a fresh temporary directory, removed
// afterwards.
func runEngine(cfg *config, ks *keySpace, e *engine, d durability, r int, progress io.Writer) (engineRun, error) {
	er := engineRun{Engine: e.name, Run: r + 1, Results: map[string]measurement{}}
	say := func(w string, m measurement) {
		fmt.Fprintf(progress, "run %d/%d %-13s %-9s %-11s %12s ops/s  p50 %8s us  p99 %8s us\n",
			r+1, cfg.runs, d, e.name, w, thousands(m.OpsPerSec), latency(m.P50us), latency(m.P99us))
	}
	writers := cfg.writersFor(d)
	rc := readConfig{ops: cfg.reads, threads: cfg.threads, seed: cfg.seed, hitRatio: cfg.hitRatio, scanLength: cfg.scanLength}

	if slices.Contains(cfg.workloads, fillSeq) {
		err := withStore(cfg, e, d, func(st store) error {
			m, err := fill(st, ks, fillSeq, writers, cfg.seed)
			if err != nil {
				return fmt.Errorf("%s: %w", fillSeq, err)
			}
			er.Results[fillSeq] = m
			say(fillSeq, m)
			return checkCount(st, ks)
		})
		if err != nil {
			return er, err
		}
	}

	var reads []string
	for _, w := range cfg.workloads {
		if !isFill(w) && (!isPrefixWorkload(w) || e.noPrefixSeeks == "") {
			reads = append(reads, w)
		}
	}
	if !slices.Contains(cfg.workloads, fillRandom) && len(reads) == 0 {
		return er, nil
	}
	err := withStore(cfg, e, d, func(st store) error {
		m, err := fill(st, ks, fillRandom, writers, cfg.seed)
		if err != nil {
			return fmt.Errorf("%s: %w", fillRandom, err)
		}
		if slices.Contains(cfg.workloads, fillRandom) {
			er.Results[fillRandom] = m
			say(fillRandom, m)
		}
		if len(reads) == 0 {
			return checkCount(st, ks)
		}
		t0 := time.Now()
		if err := st.settle(); err != nil {
			return fmt.Errorf("settling after %s: %w", fillRandom, err)
		}
		er.SettleSeconds = time.Since(t0).Seconds()
		settled := st.shape()
		er.Settled = &settled
		for _, w := range reads {
			// Settle again: work an engine started during the previous
			// workload must not run into this one's timing.
			if err := st.settle(); err != nil {
				return fmt.Errorf("settling before %s: %w", w, err)
			}
			m, err := read(st, ks, w, rc)
			if err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
			er.Results[w] = m
			say(w, m)
		}
		after := st.shape()
		er.AfterReads = &after
		return checkCount(st, ks)
	})
	return er, err
}

// withStore opens e in a fresh temporary directory, runs f, closes the
// store and removes the directory.
func withStore(cfg *config, e *engine, d durability, f func(store) error) (err error) {
	dir, err := os.MkdirTemp(cfg.dir, "bloomkv-compare-"+e.name+"-")
	if err != nil {
		return err
	}
	defer func() {
		if rerr := os.RemoveAll(dir); err == nil {
			err = rerr
		}
	}()
	st, err := e.open(dir, &cfg.settings, d)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	err = f(st)
	if cerr := st.close(); err == nil {
		err = cerr
	}
	// The next engine starts with a clean heap, not this one's garbage.
	runtime.GC()
	return err
}

// checkCount checks, outside any timed loop, that the database holds
// exactly the -num keys a fill wrote, in order.
func checkCount(st store, ks *keySpace) error {
	n, err := count(st)
	if err != nil {
		return fmt.Errorf("counting keys: %w", err)
	}
	if n != int64(ks.num) {
		return fmt.Errorf("the database holds %d keys, the fill wrote %d", n, ks.num)
	}
	return nil
}
