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

	"github.com/bloomkv/bloomkv/internal/cputime"
)

// Workload names accepted by -benchmarks.
const (
	fillSeq     = "fillseq"
	fillRandom  = "fillrandom"
	readRandom  = "readrandom"
	readMissing = "readmissing"
	readMixed   = "readmixed"
	scanBench   = "scan"
)

var allWorkloads = []string{fillSeq, fillRandom, readRandom, readMissing, readMixed, scanBench}

// Prefix workloads, with -cols_per_row only.
const (
	seekPrefix        = "seekprefix"
	seekPrefixMissing = "seekprefixmissing"
)

var prefixWorkloads = []string{seekPrefix, seekPrefixMissing}

func isPrefixWorkload(w string) bool { return w == seekPrefix || w == seekPrefixMissing }

func isFill(w string) bool { return w == fillSeq || w == fillRandom }

// measurement is what one workload did on one engine in one run.
type measurement struct {
	Ops       int64         `json:"ops"`
	Found     int64         `json:"found"` // reads: Gets that found their key; scan: entries visited
	Elapsed   time.Duration `json:"elapsed_ns"`
	OpsPerSec float64       `json:"ops_per_sec"`
	P50us     float64       `json:"p50_us"`
	P95us     float64       `json:"p95_us"`
	P99us     float64       `json:"p99_us"`
	P999us    float64       `json:"p999_us"`
	MaxUs     float64       `json:"max_us"`
	// CPUSeconds is the process's user + system CPU time over the timed
	// phase (background work the engine did meanwhile included), and
	// CPUUsPerOp that per operation: figures that leave out the time other
	// programs held the CPUs, which ops/s includes (the caches and clock
	// speed they share still move them). Absent in reports made before
	// them, and where the system does not say.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	CPUUsPerOp float64 `json:"cpu_us_per_op,omitempty"`
}

// Latencies are recorded in nanoseconds from 1 ns to a minute with three
// significant digits.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Minute), 3)
}

func record(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(int64(d), 1), int64(time.Minute)))
}

// summarize makes the measurement of ops operations that took elapsed and
// cpu (the process's CPU time over the same phase; 0: unknown).
func summarize(ops, found int64, elapsed, cpu time.Duration, h *hdrhistogram.Histogram) measurement {
	us := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e3 }
	m := measurement{
		Ops: ops, Found: found, Elapsed: elapsed,
		OpsPerSec: float64(ops) / elapsed.Seconds(),
		P50us:     us(50), P95us: us(95), P99us: us(99), P999us: us(99.9),
		MaxUs: float64(h.Max()) / 1e3,
	}
	if cpu > 0 && ops > 0 {
		m.CPUSeconds = cpu.Seconds()
		m.CPUUsPerOp = float64(cpu.Nanoseconds()) / 1e3 / float64(ops)
	}
	return m
}

// cpuSince returns the process CPU time used since the reading cpu0, or 0
// when either reading is missing.
func cpuSince(cpu0 time.Duration) time.Duration {
	if cpu0 <= 0 {
		return 0
	}
	return max(0, cputime.Process()-cpu0)
}

// stream derives a generator stream from a workload name and a goroutine
// number, so each workload reads its own keys, the same on every engine.
func stream(name string, goroutine int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() + uint64(goroutine)
}

// fill writes every present key once with `writers` goroutines that take
// the next key in turn: in key order (fillseq) or in an order shuffled by
// seed (fillrandom). Each Put's latency is recorded.
func fill(st store, ks *keySpace, name string, writers int, seed uint64) (measurement, error) {
	var order []uint32
	if name == fillRandom {
		order = make([]uint32, ks.num)
		for i := range order {
			order[i] = uint32(i)
		}
		rng := rand.New(rand.NewPCG(seed, stream(name, 0)))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	var next atomic.Int64
	hists := make([]*hdrhistogram.Histogram, writers)
	errs := make([]error, writers)
	var failed atomic.Bool
	var wg sync.WaitGroup
	cpu0 := cputime.Process()
	begin := time.Now()
	for w := range writers {
		hists[w] = newHistogram()
		wg.Go(func() {
			var key, value []byte
			for !failed.Load() {
				i := next.Add(1) - 1
				if i >= int64(ks.num) {
					return
				}
				slot := present(int(i))
				if order != nil {
					slot = present(int(order[i]))
				}
				key, value = ks.key(key, slot), ks.value(value, slot)
				t0 := time.Now()
				err := st.put(key, value)
				record(hists[w], time.Since(t0))
				if err != nil {
					errs[w] = fmt.Errorf("put %d: %w", i, err)
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(begin), cpuSince(cpu0)
	if err := errors.Join(errs...); err != nil {
		return measurement{}, err
	}
	h := newHistogram()
	for _, w := range hists {
		h.Merge(w)
	}
	return summarize(int64(ks.num), int64(ks.num), elapsed, cpu, h), nil
}

// readConfig is what the read workloads need besides the store.
type readConfig struct {
	ops        int     // operations per workload (scan: seeks)
	threads    int     // goroutines sharing them
	seed       uint64  // with the workload name, picks the keys read
	hitRatio   float64 // readmixed: fraction of present keys
	scanLength int     // scan: entries visited per seek
}

// read runs one read workload. Every Get is checked: a present key must be
// found with its value, an absent key must not be found; any surprise is an
// error, so no figure is reported for reads that went wrong.
func read(st store, ks *keySpace, name string, rc readConfig) (measurement, error) {
	type result struct {
		found int64
		hist  *hdrhistogram.Histogram
		err   error
	}
	results := make([]result, rc.threads)
	var failed atomic.Bool
	var wg sync.WaitGroup
	cpu0 := cputime.Process()
	begin := time.Now()
	for t := range rc.threads {
		share := rc.ops / rc.threads
		if t < rc.ops%rc.threads {
			share++
		}
		wg.Go(func() {
			res := &results[t]
			res.hist = newHistogram()
			rng := rand.New(rand.NewPCG(rc.seed, stream(name, t)))
			switch {
			case name == scanBench:
				res.found, res.err = scanLoop(st, ks, share, rc.scanLength, rng, res.hist, &failed)
			case isPrefixWorkload(name):
				res.found, res.err = prefixLoop(st, ks, name, share, rng, res.hist, &failed)
			default:
				res.found, res.err = getLoop(st, ks, name, share, rc.hitRatio, rng, res.hist, &failed)
			}
			if res.err != nil {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(begin), cpuSince(cpu0)
	h := newHistogram()
	var found int64
	var errs []error
	for _, r := range results {
		found += r.found
		h.Merge(r.hist)
		errs = append(errs, r.err)
	}
	if err := errors.Join(errs...); err != nil {
		return measurement{}, err
	}
	return summarize(int64(rc.ops), found, elapsed, cpu, h), nil
}

func getLoop(st store, ks *keySpace, name string, n int, hitRatio float64, rng *rand.Rand,
	h *hdrhistogram.Histogram, failed *atomic.Bool) (int64, error) {
	var key, dst, want []byte
	var found int64
	for i := range n {
		if i%256 == 255 && failed.Load() {
			return found, nil // another goroutine failed and reports why
		}
		var slot uint64
		var hit bool
		switch name {
		case readRandom:
			slot, hit = ks.randomPresent(rng), true
		case readMissing:
			slot = ks.randomAbsent(rng)
		case readMixed:
			if rng.Float64() < hitRatio {
				slot, hit = ks.randomPresent(rng), true
			} else {
				slot = ks.randomAbsent(rng)
			}
		default:
			return found, fmt.Errorf("unknown read workload %q", name)
		}
		key = ks.key(key, slot)
		t0 := time.Now()
		v, ok, err := st.get(key, dst)
		record(h, time.Since(t0))
		switch {
		case err != nil:
			return found, fmt.Errorf("get %x: %w", key, err)
		case ok != hit && hit:
			return found, fmt.Errorf("key %x (slot %d) was written but get did not find it", key, slot)
		case ok != hit:
			return found, fmt.Errorf("key %x (slot %d) was never written but get found it", key, slot)
		}
		if ok {
			found++
			if want = ks.value(want, slot); !bytes.Equal(v, want) {
				return found, fmt.Errorf("key %x (slot %d): wrong value (%d bytes)", key, slot, len(v))
			}
			dst = v
		}
	}
	return found, nil
}

// scanLoop does n seeks to random present keys on one iterator, each
// followed by Next calls until scanLength entries were visited. It checks
// that each seek lands on the key sought (count checks the order of all
// keys, outside the timed loops).
func scanLoop(st store, ks *keySpace, n, scanLength int, rng *rand.Rand,
	h *hdrhistogram.Histogram, failed *atomic.Bool) (visited int64, err error) {
	it, err := st.newIter()
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := it.close(); err == nil {
			err = cerr
		}
	}()
	var key []byte
	for i := range n {
		if i%256 == 255 && failed.Load() {
			return visited, nil
		}
		slot := ks.randomPresent(rng)
		key = ks.key(key, slot)
		t0 := time.Now()
		ok := it.seekGE(key)
		if !ok || !bytes.Equal(it.key(), key) {
			if err := it.err(); err != nil {
				return visited, fmt.Errorf("seek %x: %w", key, err)
			}
			return visited, fmt.Errorf("seek %x (slot %d) did not land on it", key, slot)
		}
		for j := 1; ok && j < scanLength; j++ {
			visited++
			ok = it.next()
		}
		if ok {
			visited++
		}
		record(h, time.Since(t0))
		if err := it.err(); err != nil {
			return visited, fmt.Errorf("scan from %x: %w", key, err)
		}
	}
	return visited, nil
}

// prefixLoop does n SeekPrefixGE calls on one iterator, each to the prefix
// of a random present row (seekprefix), whose columns it then visits, or of
// an absent row (seekprefixmissing). It checks that a present row yields
// exactly its columns, in order, and an absent one nothing.
func prefixLoop(st store, ks *keySpace, name string, n int, rng *rand.Rand,
	h *hdrhistogram.Histogram, failed *atomic.Bool) (visited int64, err error) {
	it, err := st.newIter()
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := it.close(); err == nil {
			err = cerr
		}
	}()
	var prefix, want []byte
	for i := range n {
		if i%256 == 255 && failed.Load() {
			return visited, nil
		}
		presentRow := name == seekPrefix
		rs := ks.randomAbsentRow(rng)
		if presentRow {
			rs = ks.randomPresentRow(rng)
		}
		prefix = ks.rowPrefix(prefix, rs)
		if presentRow {
			want = ks.key(want, present(int(rs/2)*ks.cols)) // the row's column 0
		}
		t0 := time.Now()
		cols := 0
		ok := it.seekPrefixGE(prefix)
		firstOK := !ok || bytes.Equal(it.key(), want)
		for ; ok; ok = it.next() {
			cols++
		}
		record(h, time.Since(t0))
		if err := it.err(); err != nil {
			return visited, fmt.Errorf("seek prefix %x: %w", prefix, err)
		}
		switch {
		case presentRow && (cols != ks.cols || !firstOK):
			return visited, fmt.Errorf("row %x (row slot %d): %d columns (first one right: %v), want %d", prefix, rs, cols, firstOK, ks.cols)
		case !presentRow && cols != 0:
			return visited, fmt.Errorf("absent row %x (row slot %d) yielded %d entries", prefix, rs, cols)
		}
		visited += int64(cols)
	}
	return visited, nil
}

// count visits every key once, checks that keys strictly increase, and
// returns how many there are: the check that a fill wrote exactly -num keys.
func count(st store) (int64, error) {
	it, err := st.newIter()
	if err != nil {
		return 0, err
	}
	var n int64
	var prev []byte
	for ok := it.seekGE([]byte{}); ok; ok = it.next() {
		if n > 0 && bytes.Compare(it.key(), prev) <= 0 {
			it.close()
			return n, fmt.Errorf("key %x follows %x", it.key(), prev)
		}
		prev = append(prev[:0], it.key()...)
		n++
	}
	if err := it.close(); err != nil {
		return n, err
	}
	return n, nil
}
