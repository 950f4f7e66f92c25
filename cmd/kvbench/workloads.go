package main

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/cputime"
)

// workloadRun is what one workload did, before its metrics are attached.
type workloadRun struct {
	name    string
	ops     int64 // timed operations: writes, Gets or seeks
	found   int64 // Gets that found their key; scan: entries visited
	elapsed time.Duration
	// cpu is the process's CPU time over the same timed phase (0 where
	// the system does not say).
	cpu  time.Duration
	hist *hdrhistogram.Histogram
	// Range workloads: the range width and range-filter bits they ran with.
	rangeWidth uint64
	rangeBits  float64
}

// runner runs workloads against one open database.
type runner struct {
	cfg  *config
	ks   *keySpace
	prog *progress
	// fresh: the database was filled by this run, so kvbench knows exactly
	// which keys it holds and treats any surprise as an error.
	fresh bool
}

// fill writes every present key once: in key order (fillseq) or in an
// order shuffled by -seed (fillrandom).
func (r *runner) fill(db *bloomkv.DB, name string) (*workloadRun, error) {
	num := r.ks.num
	var order []uint32
	if name == fillRandom {
		order = make([]uint32, num)
		for i := range order {
			order[i] = uint32(i)
		}
		rng := rand.New(rand.NewPCG(r.cfg.seed, streamID(name, 0)))
		rng.Shuffle(num, func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	slotAt := func(i int) uint64 {
		if order != nil {
			return presentSlot(int(order[i]))
		}
		return presentSlot(i)
	}

	var done atomic.Int64
	stop := r.prog.start(name, int64(num), "keys", done.Load)
	defer stop()
	run := &workloadRun{name: name, hist: newLatencyHistogram()}
	batch := bloomkv.NewBatch()
	var key, value []byte
	cpu0 := cputime.Process()
	begin := time.Now()
	for i := 0; i < num; i += r.cfg.batchSize {
		n := min(r.cfg.batchSize, num-i)
		var err error
		var t0 time.Time
		if n == 1 {
			key = r.ks.key(key, slotAt(i))
			value = r.ks.value(value, slotAt(i))
			t0 = time.Now()
			err = db.Put(key, value)
		} else {
			batch.Reset()
			for j := i; j < i+n; j++ {
				key = r.ks.key(key, slotAt(j))
				value = r.ks.value(value, slotAt(j))
				batch.Put(key, value)
			}
			t0 = time.Now()
			err = db.Write(batch)
		}
		recordLatency(run.hist, time.Since(t0))
		if err != nil {
			return nil, fmt.Errorf("%s: write %d: %w", name, i, err)
		}
		done.Add(int64(n))
	}
	run.elapsed = time.Since(begin)
	run.cpu = cpuSince(cpu0)
	run.ops = int64(num)
	return run, nil
}

// streamID derives a generator stream from a workload name, so each
// workload reads its own key sequence and repeats it in every pass.
func streamID(name string, thread int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() + uint64(thread)
}

// read runs one read workload of reads operations (as -reads counts them)
// with -threads goroutines.
func (r *runner) read(db *bloomkv.DB, name string, reads int) (*workloadRun, error) {
	ops := int64(reads)
	switch name {
	case scanBench:
		ops = max(1, ops/int64(r.cfg.scanLength))
	case seekPrefix:
		ops = max(1, ops/int64(r.cfg.colsPerRow)) // each seek reads a row
	}
	threads := int64(r.cfg.threads)
	var done atomic.Int64
	var failed atomic.Bool
	stop := r.prog.start(name, ops, "ops", done.Load)

	type result struct {
		found int64
		hist  *hdrhistogram.Histogram
		err   error
	}
	results := make([]result, threads)
	var wg sync.WaitGroup
	cpu0 := cputime.Process()
	begin := time.Now()
	for t := range threads {
		share := ops/threads + b2i(t < ops%threads)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := &results[t]
			res.hist = newLatencyHistogram()
			rng := rand.New(rand.NewPCG(r.cfg.seed, streamID(name, int(t))))
			res.found, res.err = r.readLoop(db, name, share, rng, res.hist, &done, &failed)
			if res.err != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	cpu := cpuSince(cpu0)
	stop()

	run := &workloadRun{name: name, ops: ops, elapsed: elapsed, cpu: cpu, hist: newLatencyHistogram(),
		rangeWidth: r.cfg.rangeWidth, rangeBits: r.cfg.rangeFilterBits}
	var errs []error
	for _, res := range results {
		run.found += res.found
		run.hist.Merge(res.hist)
		errs = append(errs, res.err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return run, nil
}

// cpuSince returns the process CPU time used since the reading cpu0, or 0
// when either reading is missing.
func cpuSince(cpu0 time.Duration) time.Duration {
	if cpu0 <= 0 {
		return 0
	}
	return max(0, cputime.Process()-cpu0)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// readLoop issues n operations of workload name and returns how many found
// their key (scan: entries visited).
func (r *runner) readLoop(db *bloomkv.DB, name string, n int64, rng *rand.Rand,
	hist *hdrhistogram.Histogram, done *atomic.Int64, failed *atomic.Bool) (int64, error) {
	switch name {
	case scanBench:
		return r.scanLoop(db, n, rng, hist, done, failed)
	case seekPrefix, seekPrefixMissing:
		return r.seekPrefixLoop(db, name == seekPrefixMissing, n, rng, hist, done, failed)
	case scanEmpty, scanEmptyNear, scanBounded:
		return r.rangeLoop(db, name, n, rng, hist, done, failed)
	}
	var key, want []byte
	var found int64
	// Progress is published every 256 Gets: one shared atomic add per Get
	// would bounce a cache line between reader goroutines.
	const progressEvery = 256
	defer func() { done.Add(n % progressEvery) }()
	for i := range n {
		if i%progressEvery == progressEvery-1 {
			done.Add(progressEvery)
			if failed.Load() {
				return found, nil // another goroutine failed; its error is reported
			}
		}
		var slot uint64
		var wantHit bool
		switch name {
		case readRandom:
			slot, wantHit = r.ks.randomPresent(rng), true
		case readMissing, readMissingCol:
			// With row+column keys an absent slot is an unwritten column
			// of a written row (see keySpace.key).
			slot = r.ks.randomAbsent(rng)
		case readMixed:
			if rng.Float64() < r.cfg.hitRatio {
				slot, wantHit = r.ks.randomPresent(rng), true
			} else {
				slot = r.ks.randomAbsent(rng)
			}
		default:
			return found, fmt.Errorf("unknown read workload %q", name)
		}
		key = r.ks.key(key, slot)
		t0 := time.Now()
		v, err := db.Get(key)
		recordLatency(hist, time.Since(t0))
		switch {
		case errors.Is(err, bloomkv.ErrNotFound):
			if wantHit && r.fresh {
				return found, fmt.Errorf("key %x (slot %d) was written but Get says not found", key, slot)
			}
			continue
		case err != nil:
			return found, fmt.Errorf("reading key %x: %w", key, err)
		case !wantHit && r.fresh:
			return found, fmt.Errorf("key %x (slot %d) was never written but Get returned a value", key, slot)
		}
		found++
		if wantHit {
			if want = r.ks.value(want, slot); !bytes.Equal(v, want) {
				return found, fmt.Errorf("key %x (slot %d): Get returned a wrong value (%d bytes, want %d)%s",
					key, slot, len(v), r.ks.valueSize, r.existingHint())
			}
		}
	}
	return found, nil
}

// scanLoop does n seeks to random present keys, each followed by up to
// scan_length-1 Next calls, on one iterator.
func (r *runner) scanLoop(db *bloomkv.DB, n int64, rng *rand.Rand,
	hist *hdrhistogram.Histogram, done *atomic.Int64, failed *atomic.Bool) (int64, error) {
	it := db.NewIterator(nil)
	var key []byte
	var visited int64
	for i := range n {
		if failed.Load() {
			break
		}
		key = r.ks.key(key, r.ks.randomPresent(rng))
		t0 := time.Now()
		ok := it.SeekGE(key)
		for j := 0; ok && j < r.cfg.scanLength; j++ {
			visited++
			if j+1 < r.cfg.scanLength {
				ok = it.Next()
			}
		}
		recordLatency(hist, time.Since(t0))
		if err := it.Error(); err != nil {
			it.Close()
			return visited, fmt.Errorf("seek %d: %w", i, err)
		}
		done.Add(1)
	}
	if err := it.Close(); err != nil {
		return visited, err
	}
	return visited, nil
}

// seekPrefixLoop does n prefix seeks, on one iterator, to column 0 of a
// random written row (reading every column of it) or of a random absent
// row (finding nothing). It returns the entries visited.
func (r *runner) seekPrefixLoop(db *bloomkv.DB, absent bool, n int64, rng *rand.Rand,
	hist *hdrhistogram.Histogram, done *atomic.Int64, failed *atomic.Bool) (int64, error) {
	it := db.NewIterator(nil)
	var key []byte
	var visited int64
	for i := range n {
		if failed.Load() {
			break
		}
		row := r.ks.randomRow(rng, absent)
		key = r.ks.cellKey(key, row, 0)
		t0 := time.Now()
		cols := 0
		for ok := it.SeekPrefixGE(key); ok; ok = it.Next() {
			cols++
		}
		recordLatency(hist, time.Since(t0))
		if err := it.Error(); err != nil {
			it.Close()
			return visited, fmt.Errorf("prefix seek %d: %w", i, err)
		}
		if r.fresh && (absent && cols != 0 || !absent && cols != r.ks.cols) {
			it.Close()
			return visited, fmt.Errorf("prefix seek of row slot %d found %d columns, want %d", row, cols, b2i(!absent)*int64(r.ks.cols))
		}
		visited += int64(cols)
		done.Add(1)
	}
	if err := it.Close(); err != nil {
		return visited, err
	}
	return visited, nil
}

func (r *runner) existingHint() string {
	if r.fresh {
		return ""
	}
	return " (was -db filled with the same -num, -key_size, -value_size and -compression_ratio?)"
}
