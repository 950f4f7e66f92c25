package bloomkv

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
)

// deleteRange removes [lo, hi) from the model.
func (m model) deleteRange(lo, hi string) {
	for k := range m {
		if k >= lo && k < hi {
			delete(m, k)
		}
	}
}

// checkSeekLT compares SeekLT (and a step back and forth) with the model.
func checkSeekLT(t *testing.T, it *Iterator, m model, lower, upper []byte, k string, what string) {
	t.Helper()
	keys := m.sortedKeys(lower, upper)
	i := sort.SearchStrings(keys, k) - 1 // last key < k
	ok := it.SeekLT([]byte(k))
	if ok != (i >= 0) {
		t.Fatalf("%s: SeekLT(%q) valid=%v, want %v", what, k, ok, i >= 0)
	}
	if ok && (string(it.Key()) != keys[i] || string(it.Value()) != m[keys[i]]) {
		t.Fatalf("%s: SeekLT(%q) at %q=%q, want %q=%q", what, k, it.Key(), it.Value(), keys[i], m[keys[i]])
	}
	if ok {
		if it.Prev() != (i > 0) || i > 0 && string(it.Key()) != keys[i-1] {
			t.Fatalf("%s: Prev after SeekLT(%q) at %q (valid %v), want index %d", what, k, it.Key(), it.Valid(), i-1)
		}
	}
}

// checkSeekPrefix compares SeekPrefixGE with the model: the first key >=
// max(k, lower) below upper with k's prefix (prefixOf; nil: the whole key).
func checkSeekPrefix(t *testing.T, it *Iterator, m model, lower, upper []byte, k string, prefixOf func([]byte) []byte, what string) {
	t.Helper()
	if prefixOf == nil {
		prefixOf = func(b []byte) []byte { return b }
	}
	p := string(prefixOf([]byte(k)))
	keys := m.sortedKeys(lower, upper)
	want := ""
	if i := sort.SearchStrings(keys, k); i < len(keys) && string(prefixOf([]byte(keys[i]))) == p {
		want = keys[i]
	}
	ok := it.SeekPrefixGE([]byte(k))
	if ok != (want != "") || ok && (string(it.Key()) != want || string(it.Value()) != m[want]) {
		t.Fatalf("%s: SeekPrefixGE(%q) valid=%v key %q, want %q", what, k, ok, it.Key(), want)
	}
}

// TestDeleteRangeAgainstModel runs random Puts, Deletes, DeleteRanges and
// batches mixing them, with snapshots, flushes, compactions and reopens,
// and compares Get and iteration (forward, backward, bounded, SeekLT,
// SeekPrefixGE) with a map, at the present and at every snapshot.
func TestDeleteRangeAgainstModel(t *testing.T) {
	for _, fsKind := range []string{"mem", "mem-random-options", "os"} {
		t.Run(fsKind, func(t *testing.T) {
			run := newModelRun(t, fsKind, 7, 14)
			rng, dir, opts, randomize := run.rng, run.dir, run.opts, run.randomize
			db := mustOpen(t, dir, opts)
			defer func() { db.Close() }()
			m := model{}
			var snaps []openSnapshot
			var iters []openIter
			steps := 5000
			if testing.Short() {
				steps = 2000
			}
			key := func() string { return fmt.Sprintf("k%04d", rng.IntN(modelKeySpace)) }
			// rangeKeys returns a range of a few keys, now and then a wide one,
			// sometimes with ends that are not keys the test writes.
			rangeKeys := func() (string, string) {
				lo := rng.IntN(modelKeySpace)
				w := 1 + rng.IntN(20)
				if rng.IntN(10) == 0 {
					w = rng.IntN(modelKeySpace / 2)
				}
				a, b := fmt.Sprintf("k%04d", lo), fmt.Sprintf("k%04d", lo+w)
				if rng.IntN(4) == 0 {
					a += "5"
				}
				if rng.IntN(4) == 0 {
					b += "\x00"
				}
				return a, b
			}
			rangeDels, flushes, compactions := 0, 0, 0
			for step := 0; step < steps; step++ {
				switch r := rng.IntN(100); {
				case r < 35:
					k, v := key(), fmt.Sprintf("v%d-%s", step, bytes.Repeat([]byte("x"), rng.IntN(60)))
					if err := db.Put([]byte(k), []byte(v)); err != nil {
						t.Fatal(err)
					}
					m[k] = v
				case r < 40:
					k := key()
					if err := db.Delete([]byte(k)); err != nil {
						t.Fatal(err)
					}
					delete(m, k)
				case r < 45:
					lo, hi := rangeKeys()
					if err := db.DeleteRange([]byte(lo), []byte(hi)); err != nil {
						t.Fatal(err)
					}
					m.deleteRange(lo, hi)
					rangeDels++
				case r < 52:
					// A batch applies its operations in order.
					b := NewBatch()
					next := m.clone()
					for i := rng.IntN(8); i >= 0; i-- {
						switch rng.IntN(4) {
						case 0:
							k := key()
							b.Delete([]byte(k))
							delete(next, k)
						case 1:
							lo, hi := rangeKeys()
							b.DeleteRange([]byte(lo), []byte(hi))
							next.deleteRange(lo, hi)
							rangeDels++
						default:
							k, v := key(), fmt.Sprintf("b%d-%d", step, i)
							b.Put([]byte(k), []byte(v))
							next[k] = v
						}
					}
					if err := db.Write(b); err != nil {
						t.Fatal(err)
					}
					m = next
				case r < 70:
					checkGet(t, db.Get, m, key(), fmt.Sprintf("step %d", step))
				case r < 75:
					var lower, upper []byte
					if rng.IntN(2) == 0 {
						lower = []byte(key())
					}
					if rng.IntN(2) == 0 {
						upper = []byte(key())
					}
					if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 {
						lower, upper = upper, lower // inverted bounds are an error (errors_test.go)
					}
					what := fmt.Sprintf("step %d iter [%q,%q)", step, lower, upper)
					it := db.NewIterator(&IterOptions{LowerBound: lower, UpperBound: upper})
					checkIter(t, rng, it, m, lower, upper, what)
					checkSeekLT(t, it, m, lower, upper, key(), what)
					checkSeekPrefix(t, it, m, lower, upper, key(), opts.FilterKey, what)
					if rng.IntN(3) == 0 {
						iters = append(iters, openIter{it, m.clone(), lower, upper})
					} else if err := it.Close(); err != nil {
						t.Fatal(err)
					}
					if len(iters) > 0 && rng.IntN(2) == 0 {
						i := rng.IntN(len(iters))
						o := iters[i]
						checkIter(t, rng, o.it, o.m, o.lower, o.upper, fmt.Sprintf("step %d held iter", step))
						if rng.IntN(3) == 0 {
							o.it.Close()
							iters = append(iters[:i], iters[i+1:]...)
						}
					}
				case r < 79:
					snaps = append(snaps, openSnapshot{db.NewSnapshot(), m.clone()})
				case r < 85 && len(snaps) > 0:
					s := snaps[rng.IntN(len(snaps))]
					what := fmt.Sprintf("step %d snapshot", step)
					checkGet(t, s.s.Get, s.m, key(), what)
					if rng.IntN(3) == 0 {
						lower := []byte(key())
						it := s.s.NewIterator(&IterOptions{LowerBound: lower})
						checkIter(t, rng, it, s.m, lower, nil, what+" iter")
						checkSeekLT(t, it, s.m, lower, nil, key(), what+" iter")
						it.Close()
					}
				case r < 87 && len(snaps) > 0:
					i := rng.IntN(len(snaps))
					snaps[i].s.Close()
					snaps = append(snaps[:i], snaps[i+1:]...)
				case r < 92:
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
					flushes++
				case r < 94:
					if err := db.Compact(nil, nil); err != nil {
						t.Fatal(err)
					}
					compactions++
				case r < 96:
					lo, hi := key(), key()
					if lo > hi {
						lo, hi = hi, lo
					}
					if err := db.Compact([]byte(lo), []byte(hi)); err != nil {
						t.Fatal(err)
					}
					compactions++
				case r < 97:
					for _, s := range snaps {
						// Every snapshot, once more in full, before it goes.
						for k := range s.m {
							checkGet(t, s.s.Get, s.m, k, fmt.Sprintf("step %d snapshot before reopen", step))
						}
						s.s.Close()
					}
					snaps = nil
					for _, o := range iters {
						o.it.Close()
					}
					iters = nil
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					if randomize {
						randomizeOptions(rng, opts)
					}
					db = mustOpen(t, dir, opts)
				default:
					if err := db.WaitForCompactions(); err != nil {
						t.Fatal(err)
					}
					checkInvariants(t, db)
				}
			}
			for _, o := range iters {
				checkIter(t, rng, o.it, o.m, o.lower, o.upper, "final held iter")
				o.it.Close()
			}
			for _, s := range snaps {
				for i := 0; i < modelKeySpace; i += 7 {
					checkGet(t, s.s.Get, s.m, fmt.Sprintf("k%04d", i), "final snapshot")
				}
				s.s.Close()
			}
			for i := 0; i < modelKeySpace; i++ {
				checkGet(t, db.Get, m, fmt.Sprintf("k%04d", i), "final")
			}
			it := db.NewIterator(nil)
			checkIter(t, rng, it, m, nil, nil, "final iter")
			it.Close()
			t.Logf("%d range deletions, %d flushes, %d compactions, %d keys left", rangeDels, flushes, compactions, len(m))
		})
	}
}
