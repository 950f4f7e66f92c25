package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
	if cfg.child != "" {
		return runChild(cfg, stdout, stderr) // isolate.go
	}
	if cfg.reportPath != "" {
		rep, err := readReport(cfg.reportPath)
		if err != nil {
			fmt.Fprintln(stderr, "compare:", err)
			return 1
		}
		if cfg.summary {
			writeSummaryHeader(stdout)
			writeSummary(stdout, rep, cfg.reportPath)
			fmt.Fprintf(stdout, "\n%s\n", tieLegend)
			return 0
		}
		writeText(stdout, rep)
		return 0
	}
	if cfg.cpuProfile != "" && !cfg.isolate { // isolated: each child profiles itself
		stop, err := startCPUProfile(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "compare:", err)
			return 1
		}
		defer stop()
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
	var ks *keySpace // built here only when the engines run in this process
	if !cfg.isolate {
		ks = newRunKeySpace(cfg)
	}
	for r := range cfg.runs {
		for i, d := range cfg.durabilities {
			p := &rep.Pairings[i]
			// Rotate the order between runs: an engine that always ran
			// first would always meet the machine at its coolest (page
			// cache, CPU frequency, the other tenants' load).
			for _, name := range rotate(p.Engines, r) {
				e := engineByName(name)
				var er engineRun
				var err error
				if cfg.isolate {
					er, err = runEngineChild(cfg, e, d, r, progress) // isolate.go
				} else {
					er, err = runEngine(cfg, ks, e, d, r, progress)
				}
				if err != nil {
					return nil, fmt.Errorf("run %d, %s, %s: %w", r+1, d, e.name, err)
				}
				p.Runs = append(p.Runs, er)
			}
		}
	}
	rep.finish()
	rep.Seconds = time.Since(begin).Seconds()
	rep.LoadEnd = loadAverage()
	return rep, nil
}

// newRunKeySpace returns the key space cfg describes.
func newRunKeySpace(cfg *config) *keySpace {
	ks := newKeySpace(cfg.num, cfg.keySize, cfg.valueSize, cfg.compressionRatio)
	if cfg.colsPerRow > 0 {
		ks.withRows(cfg.colsPerRow)
	}
	return ks
}

// rotate returns names turned left by r places.
func rotate(names []string, r int) []string {
	if len(names) == 0 {
		return nil
	}
	r %= len(names)
	return append(slices.Clone(names[r:]), names[:r]...)
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
	// SettleSeconds is how long the settling after fillrandom took, and
	// FillWriteAmp the bytes the engine wrote to its log and tables for
	// fillrandom and that settling over the bytes of keys and values.
	SettleSeconds float64 `json:"settle_seconds,omitempty"`
	FillWriteAmp  float64 `json:"fill_write_amp,omitempty"`
	// DuringReads is, per read workload, what the engine's background work
	// did while the workload was timed (compactions, bytes they wrote).
	DuringReads map[string]engineCounters `json:"during_reads,omitempty"`
	// Memory is what the engine held for reads and its peak RSS.
	Memory *memoryReport `json:"memory,omitempty"`
}

// memoryReport is one engine run's memory.
type memoryReport struct {
	// BlockCache is the block cache capacity the reads ran with, for
	// blocks (Pebble's memtable reservation left out).
	BlockCache int64 `json:"block_cache"`
	// AfterFill is the engine's figures once the fill settled (with every
	// table opened by a full scan), AfterReads after the read workloads.
	AfterFill  engineCounters `json:"after_fill"`
	AfterReads engineCounters `json:"after_reads"`
	// Isolated says the engine ran in a process of its own (isolate.go),
	// so its peaks are its own; false: in the harness's process, after the
	// engines before it (-isolate=false, and reports made before issue 31).
	Isolated bool `json:"isolated"`
	rssPeak
}

// runEngine runs the selected workloads on engine e with durability d:
// fillseq on a fresh database, then fillrandom on another, which is
// settled, reopened cold and read. Every database lives in a fresh
// temporary directory, removed afterwards.
func runEngine(cfg *config, ks *keySpace, e *engine, d durability, r int, progress io.Writer) (engineRun, error) {
	er := engineRun{Engine: e.name, Run: r + 1, Results: map[string]measurement{}}
	say := func(w string, m measurement) {
		fmt.Fprintf(progress, "run %d/%d %-13s %-9s %-11s %12s ops/s  p50 %8s us  p99 %8s us\n",
			r+1, cfg.runs, d, e.name, w, thousands(m.OpsPerSec), latency(m.P50us), latency(m.P99us))
	}
	writers := cfg.writersFor(d)
	rc := readConfig{ops: cfg.reads, threads: cfg.threads, seed: cfg.seed, hitRatio: cfg.hitRatio, scanLength: cfg.scanLength}
	rss := startRSS()
	mem := &memoryReport{}

	if slices.Contains(cfg.workloads, fillSeq) {
		err := withStore(cfg, e, d, func(st store) error {
			freeMemory()
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
		er.Memory = mem
		mem.rssPeak = rss.finish()
		return er, nil
	}
	s := &cfg.settings
	err := withStore(cfg, e, d, func(st store) error {
		freeMemory()
		m, err := fill(st, ks, fillRandom, writers, cfg.seed)
		if err != nil {
			return fmt.Errorf("%s: %w", fillRandom, err)
		}
		if slices.Contains(cfg.workloads, fillRandom) {
			er.Results[fillRandom] = m
			say(fillRandom, m)
		}
		t0 := time.Now()
		if err := settle(st, s.settleCompact); err != nil {
			return fmt.Errorf("settling after %s: %w", fillRandom, err)
		}
		er.SettleSeconds = time.Since(t0).Seconds()
		// The full scan that checks the fill also opens every table, so
		// that the index memory an engine keeps for open tables covers
		// them all.
		if err := checkCount(st, ks); err != nil {
			return err
		}
		mem.AfterFill = st.counters()
		er.FillWriteAmp = float64(mem.AfterFill.BytesWritten) / float64(int64(ks.num)*int64(ks.keySize+ks.valueSize))
		if len(reads) == 0 {
			return nil
		}

		// Every engine reads from a reopened database: every cache starts
		// cold (goleveldb's flush reopens it anyway), and with equal
		// memory an engine that keeps index blocks outside its block
		// cache gets a cache smaller by them.
		rp := readPhase{blockCache: s.cacheSize}
		if s.equalMemory && e.indexOutsideCache {
			rp.cacheFilters = true
			rp.blockCache = max(s.cacheSize-mem.AfterFill.IndexBytes, minReadCache)
		}
		mem.BlockCache = rp.blockCache
		if err := st.reopen(rp); err != nil {
			return fmt.Errorf("reopening for the reads: %w", err)
		}
		if err := settle(st, false); err != nil {
			return fmt.Errorf("settling after the reopen: %w", err)
		}
		settled := st.shape()
		er.Settled = &settled
		er.DuringReads = map[string]engineCounters{}
		for _, w := range reads {
			// Settle again: work an engine started during the previous
			// workload must not run into this one's timing.
			if err := settle(st, false); err != nil {
				return fmt.Errorf("settling before %s: %w", w, err)
			}
			freeMemory()
			before := st.counters()
			m, err := read(st, ks, w, rc)
			if err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
			er.DuringReads[w] = st.counters().sub(before)
			er.Results[w] = m
			say(w, m)
		}
		after := st.shape()
		er.AfterReads = &after
		mem.AfterReads = st.counters()
		return checkCount(st, ks)
	})
	mem.rssPeak = rss.finish()
	er.Memory = mem
	return er, err
}

// minReadCache is the smallest block cache equal memory leaves bloomkv
// when its index blocks alone take nearly all of -cache_size; the report
// then shows a total above the others'.
const minReadCache = 256 << 10

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
	// The next database starts with a clean heap, not this one's garbage.
	freeMemory()
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

// startCPUProfile profiles this process into path until the returned stop
// is called. The harness and each isolated child (isolate.go) use it, each
// for its own process.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
