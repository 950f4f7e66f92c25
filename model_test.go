package bloomkv

// The randomized model test: random writes, reads, iterators and snapshots
// checked against an in-memory map, across reopens and option changes.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// model is the reference the randomized tests compare the DB against.
type model map[string]string

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// sortedKeys returns the model's keys in [lower, upper), ascending.
func (m model) sortedKeys(lower, upper []byte) []string {
	var ks []string
	for k := range m {
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// checkGet compares db.Get (or a snapshot's) with the model for key.
func checkGet(t *testing.T, get func([]byte) ([]byte, error), m model, key string, what string) {
	t.Helper()
	got, err := get([]byte(key))
	want, ok := m[key]
	switch {
	case !ok && !errors.Is(err, ErrNotFound):
		t.Fatalf("%s: Get(%q) = %q, %v; want ErrNotFound", what, key, got, err)
	case ok && err != nil:
		t.Fatalf("%s: Get(%q) error %v; want %q", what, key, err, want)
	case ok && string(got) != want:
		t.Fatalf("%s: Get(%q) = %q; want %q", what, key, got, want)
	}
}

// checkIter walks it with a random mix of moves and compares every position
// with the model restricted to the bounds.
func checkIter(t *testing.T, rng *rand.Rand, it *Iterator, m model, lower, upper []byte, what string) {
	t.Helper()
	keys := m.sortedKeys(lower, upper)
	pos := -2 // -2 = unpositioned; -1 / len(keys) = off the ends
	expect := func(ok bool, op string) {
		t.Helper()
		valid := pos >= 0 && pos < len(keys)
		if ok != valid || it.Valid() != valid {
			t.Fatalf("%s: after %s: valid=%v, want %v (pos %d of %d)", what, op, ok, valid, pos, len(keys))
		}
		if valid {
			if string(it.Key()) != keys[pos] || string(it.Value()) != m[keys[pos]] {
				t.Fatalf("%s: after %s: at %q=%q, want %q=%q", what, op, it.Key(), it.Value(), keys[pos], m[keys[pos]])
			}
		}
	}
	for step := 0; step < 40; step++ {
		switch r := rng.IntN(10); {
		case r == 0:
			pos = 0
			expect(it.First(), "First")
		case r == 1:
			pos = len(keys) - 1
			expect(it.Last(), "Last")
		case r == 2:
			k := fmt.Sprintf("k%04d", rng.IntN(modelKeySpace))
			target := k
			if lower != nil && string(lower) > target {
				target = string(lower)
			}
			pos = sort.SearchStrings(keys, target)
			expect(it.SeekGE([]byte(k)), "SeekGE("+k+")")
		case r < 7:
			if pos == -2 || pos < 0 || pos >= len(keys) {
				continue
			}
			pos++
			expect(it.Next(), "Next")
		default:
			if pos == -2 || pos < 0 || pos >= len(keys) {
				continue
			}
			pos--
			expect(it.Prev(), "Prev")
		}
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: iterator error %v", what, err)
	}
}

// modelKeySpace is the number of distinct keys the model test uses: large
// enough, with tiny tables, for a tree of several levels.
const modelKeySpace = 2000

type openIter struct {
	it           *Iterator
	m            model
	lower, upper []byte
}

// modelRun is the setup the randomized model tests share: a seed (default,
// or BLOOMKV_SEED for soak runs), a file system of fsKind ("mem", "os" or
// "mem-random-options"), and tiny options for a deep tree, randomized for
// "mem-random-options".
type modelRun struct {
	rng       *rand.Rand
	dir       string
	opts      *Options
	randomize bool
}

func newModelRun(t *testing.T, fsKind string, seed, stream uint64) modelRun {
	t.Helper()
	if s := os.Getenv("BLOOMKV_SEED"); s != "" {
		// Soak: BLOOMKV_SEED=n go test -run AgainstModel
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d", seed)
	r := modelRun{rng: rand.New(rand.NewPCG(seed, stream)), dir: "/db"}
	var fs vfs.FS = vfs.NewMem()
	if fsKind == "os" {
		fs, r.dir = vfs.Default, t.TempDir()
	}
	r.opts = tinyOptions(fs)
	r.opts.LBaseMaxBytes, r.opts.TargetFileSize = 8<<10, 4<<10 // a deeper tree
	r.randomize = fsKind == "mem-random-options"
	if r.randomize {
		randomizeOptions(r.rng, r.opts)
	}
	return r
}

type openSnapshot struct {
	s *Snapshot
	m model
}

// TestRandomizedAgainstModel runs random operations against a DB with tiny
// memtables and tables (so that many tables, flushes and compactions
// happen), checking every read against a map, reopening now and then.
func TestRandomizedAgainstModel(t *testing.T) {
	for _, fsKind := range []string{"mem", "os", "mem-random-options"} {
		t.Run(fsKind, func(t *testing.T) {
			run := newModelRun(t, fsKind, 1, 42)
			rng, dir, opts, randomize := run.rng, run.dir, run.opts, run.randomize
			db := mustOpen(t, dir, opts)
			defer func() { db.Close() }()
			m := model{}
			var snaps []openSnapshot
			var total Metrics // counters summed over reopens
			var iters []openIter
			deepest := 0 // deepest level seen holding tables
			steps := 6000
			if testing.Short() {
				steps = 2000
			}
			key := func() string { return fmt.Sprintf("k%04d", rng.IntN(modelKeySpace)) }
			for step := 0; step < steps; step++ {
				switch r := rng.IntN(100); {
				case r < 40:
					k, v := key(), fmt.Sprintf("v%d-%s", step, bytes.Repeat([]byte("x"), rng.IntN(60)))
					if err := db.Put([]byte(k), []byte(v)); err != nil {
						t.Fatal(err)
					}
					m[k] = v
				case r < 50:
					k := key()
					if err := db.Delete([]byte(k)); err != nil {
						t.Fatal(err)
					}
					delete(m, k)
				case r < 58:
					b := NewBatch()
					pending := model{}
					var dels []string
					for i := rng.IntN(8); i >= 0; i-- {
						k := key()
						if rng.IntN(3) == 0 {
							b.Delete([]byte(k))
							delete(pending, k)
							dels = append(dels, k)
						} else {
							v := fmt.Sprintf("b%d-%d", step, i)
							b.Put([]byte(k), []byte(v))
							pending[k] = v
							dels = slicesDelete(dels, k)
						}
					}
					if err := db.Write(b); err != nil {
						t.Fatal(err)
					}
					for _, k := range dels {
						delete(m, k)
					}
					for k, v := range pending {
						m[k] = v
					}
				case r < 80:
					checkGet(t, db.Get, m, key(), "db")
				case r < 83:
					var lower, upper []byte
					if rng.IntN(2) == 0 {
						lower = []byte(key())
					}
					if rng.IntN(2) == 0 {
						upper = []byte(key())
					}
					it := db.NewIterator(&IterOptions{LowerBound: lower, UpperBound: upper})
					if lower != nil && upper != nil && string(lower) > string(upper) {
						// Inverted bounds are an error, not an empty range.
						if it.First() || !errors.Is(it.Error(), ErrInvalidArgument) || !errors.Is(it.Close(), ErrInvalidArgument) {
							t.Fatalf("step %d iter [%q,%q): First moved or no error: %v", step, lower, upper, it.Error())
						}
						continue
					}
					checkIter(t, rng, it, m, lower, upper, fmt.Sprintf("step %d iter [%q,%q)", step, lower, upper))
					if rng.IntN(3) == 0 {
						// Keep it open: later steps write, flush and compact
						// under it, and it must keep its point in time.
						iters = append(iters, openIter{it, m.clone(), lower, upper})
					} else if err := it.Close(); err != nil {
						t.Fatal(err)
					}
					if len(iters) > 0 && rng.IntN(2) == 0 {
						i := rng.IntN(len(iters))
						o := iters[i]
						checkIter(t, rng, o.it, o.m, o.lower, o.upper, fmt.Sprintf("step %d held iter", step))
						if rng.IntN(3) == 0 {
							if err := o.it.Close(); err != nil {
								t.Fatal(err)
							}
							iters = append(iters[:i], iters[i+1:]...)
						}
					}
				case r < 86:
					snaps = append(snaps, openSnapshot{db.NewSnapshot(), m.clone()})
				case r < 91 && len(snaps) > 0:
					s := snaps[rng.IntN(len(snaps))]
					checkGet(t, s.s.Get, s.m, key(), fmt.Sprintf("step %d snapshot", step))
					if rng.IntN(4) == 0 {
						it := s.s.NewIterator(nil)
						checkIter(t, rng, it, s.m, nil, nil, fmt.Sprintf("step %d snapshot iter", step))
						it.Close()
					}
				case r < 93 && len(snaps) > 0:
					i := rng.IntN(len(snaps))
					if err := snaps[i].s.Close(); err != nil {
						t.Fatal(err)
					}
					snaps = append(snaps[:i], snaps[i+1:]...)
				case r < 95:
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				case r < 96:
					if err := db.Compact(nil, nil); err != nil {
						t.Fatal(err)
					}
				case r < 97:
					lo, hi := key(), key()
					if lo > hi {
						lo, hi = hi, lo
					}
					if err := db.Compact([]byte(lo), []byte(hi)); err != nil {
						t.Fatal(err)
					}
				case r < 98:
					for _, s := range snaps {
						s.s.Close()
					}
					snaps = nil
					for _, o := range iters {
						if err := o.it.Close(); err != nil {
							t.Fatal(err)
						}
					}
					iters = nil
					before := db.Metrics()
					total.Flushes += before.Flushes
					total.Compactions += before.Compactions
					total.TablesProbed += before.TablesProbed
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					if randomize {
						// Reopening with other filter, block and cache settings
						// must never lose a key: old tables stay readable.
						randomizeOptions(rng, opts)
					}
					db = mustOpen(t, dir, opts)
				default:
					if err := db.WaitForCompactions(); err != nil {
						t.Fatal(err)
					}
					checkInvariants(t, db)
					for l, lm := range db.Metrics().Levels {
						if lm.Files > 0 {
							deepest = max(deepest, l)
						}
					}
				}
			}
			for _, o := range iters {
				checkIter(t, rng, o.it, o.m, o.lower, o.upper, "final held iter")
				o.it.Close()
			}
			for k := range m {
				checkGet(t, db.Get, m, k, "final")
			}
			it := db.NewIterator(nil)
			checkIter(t, rng, it, m, nil, nil, "final iter")
			it.Close()
			met := db.Metrics()
			t.Logf("metrics since the last reopen:\n%s", met)
			total.Flushes += met.Flushes
			total.Compactions += met.Compactions
			total.TablesProbed += met.TablesProbed
			t.Logf("deepest level holding tables: L%d", deepest)
			if deepest < 2 {
				t.Fatalf("tree too shallow for the test to mean much: deepest level L%d", deepest)
			}
			if total.Flushes == 0 || total.Compactions == 0 || total.TablesProbed == 0 {
				t.Fatalf("workload too small to exercise tables: %d flushes, %d compactions, %d tables probed",
					total.Flushes, total.Compactions, total.TablesProbed)
			}
		})
	}
}

// randomizeOptions picks table, filter, cache and level-target settings, including a
// ROW-style extractor over the keys' first three bytes under one of two
// names (tables written under the other name must be read without their
// filter).
func randomizeOptions(rng *rand.Rand, o *Options) {
	o.Compression = []Compression{SnappyCompression, NoCompression}[rng.IntN(2)]
	o.BloomBitsPerKey = []int{-1, 1, 4, 10, 20}[rng.IntN(5)]
	o.FilterVariant = []filter.Variant{filter.VariantStandard, filter.VariantBlocked}[rng.IntN(2)]
	o.BlockSize = []int{64, 256, 4096}[rng.IntN(3)]
	o.BlockCacheSize = []int64{-1, 1 << 10, 64 << 10}[rng.IntN(3)]
	// Idle compactions of level 0 in the mix (TestMain turns them off by default).
	o.IdleCompactionDelay = []time.Duration{-1, time.Millisecond, 10 * time.Millisecond}[rng.IntN(3)]
	o.TreeFilter = rng.IntN(2) == 0 // issue 28: on and off across reopens
	o.FilterKey, o.FilterKeyName = nil, ""
	if rng.IntN(2) == 0 {
		o.FilterKey = func(k []byte) []byte { return k[:min(3, len(k))] }
		o.FilterKeyName = []string{"prefix3", "prefix3-renamed"}[rng.IntN(2)]
	}
	o.RangeFilterBitsPerKey = []float64{0, 2, 10, 20}[rng.IntN(4)]
	// Issue 25: partitioned index and filters (1 byte: a partition per
	// data block), held or in the block cache.
	o.IndexPartitionSize = []int{-1, 1, 48, 4096}[rng.IntN(4)]
	o.CacheFilterBlocks = o.BlockCacheSize > 0 && rng.IntN(2) == 0
	// Issue 25: level targets from the bottom up, switched on and off
	// across reopens (a static tree then drains toward its last level).
	o.DynamicLevelBytes = rng.IntN(2) == 0
}

func slicesDelete(s []string, k string) []string {
	out := s[:0]
	for _, x := range s {
		if x != k {
			out = append(out, x)
		}
	}
	return out
}
