package bloomkv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// rfModel is the expected contents: key -> value.
type rfModel map[string]string

func (m rfModel) keysIn(lo, hi []byte) []string {
	var ks []string
	for k := range m {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// TestRangeFilterModel runs random writes, point and range deletions,
// snapshots, flushes and compactions on a database whose tables carry
// range filters (budgets from 2 bits per key, where they let much
// through, to 24, where they rarely do), and checks every bounded scan --
// SeekGE with an UpperBound, SeekLT with a LowerBound, Next and Prev
// across direction switches, SetBounds reuse -- against a model, now and
// at every open snapshot. A range holding a live key that a filter
// skipped would show as a missing key; a skipped point tombstone as a
// resurrected one. It also checks that filters did skip tables.
func TestRangeFilterModel(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRangeFilterModel(t, seed) })
	}
}

func runRangeFilterModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 27))
	o := tinyOptions(vfs.NewMem())
	o.RangeFilterBitsPerKey = []float64{2, 6, 12, 24}[(seed-1)/2]
	db := mustOpen(t, "db", o)
	defer db.Close()
	const space = 3000
	// Keys of 5 to 14 bytes: those longer than 8 share their filter
	// integer with their neighbours, which the filter must survive. Odd
	// seeds use text keys (which the filter resolves coarsely: "k0100" and
	// "k0105" are 5<<24 integers apart), even ones keys that start with a
	// big-endian integer (what it is built for), half of them after a
	// common prefix.
	key := func(i int) []byte {
		k := fmt.Sprintf("k%04d", i)
		if seed%2 == 0 {
			k = string(binary.BigEndian.AppendUint64(nil, uint64(i)*37))
		}
		if seed%4 == 0 { // a long common prefix, which tables strip
			k = "user:42/" + k
		}
		if i%3 == 0 {
			k += fmt.Sprintf("/%d", i%7)
		}
		if i%5 == 0 {
			k += "\x00\xff"
		}
		return []byte(k)
	}
	m := rfModel{}
	type snap struct {
		s *Snapshot
		m rfModel
	}
	var snaps []snap
	steps := 6000
	if testing.Short() {
		steps = 2500
	}
	for step := 0; step < steps; step++ {
		switch r := rng.IntN(100); {
		case r < 55:
			k, v := key(rng.IntN(space)), fmt.Sprintf("v%d", step)
			if err := db.Put(k, []byte(v)); err != nil {
				t.Fatal(err)
			}
			m[string(k)] = v
		case r < 70:
			k := key(rng.IntN(space))
			if err := db.Delete(k); err != nil {
				t.Fatal(err)
			}
			delete(m, string(k))
		case r < 73:
			a := rng.IntN(space)
			lo, hi := key(a), key(a+1+rng.IntN(40))
			if err := db.DeleteRange(lo, hi); err != nil {
				t.Fatal(err)
			}
			for k := range m {
				if k >= string(lo) && k < string(hi) {
					delete(m, k)
				}
			}
		case r < 75:
			snaps = append(snaps, snap{db.NewSnapshot(), maps.Clone(m)})
			if len(snaps) > 4 {
				snaps[0].s.Close()
				snaps = snaps[1:]
			}
		case r < 77:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 78:
			a := rng.IntN(space)
			if err := db.Compact(key(a), key(a+rng.IntN(space))); err != nil {
				t.Fatal(err)
			}
		default:
			a := rng.IntN(space + 10)
			lo, hi := key(a), key(a+1+rng.IntN(12))
			if rng.IntN(4) == 0 { // ends that are not keys
				lo = append(lo, 'x')
			}
			checkBoundedScans(t, db.NewIterator, m, lo, hi, rng, "db")
			if len(snaps) > 0 {
				s := snaps[rng.IntN(len(snaps))]
				checkBoundedScans(t, s.s.NewIterator, s.m, lo, hi, rng, "snapshot")
			}
		}
	}
	for _, s := range snaps {
		s.s.Close()
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	met := db.Metrics()
	t.Logf("bits/key %v: %d probes, %d negatives, %d false positives", o.RangeFilterBitsPerKey,
		met.RangeFilter.Probes, met.RangeFilter.Negatives, met.RangeFilter.FalsePositives)
	if met.RangeFilter.Negatives == 0 {
		t.Fatal("no table was ever skipped on its range filter")
	}
}

// checkBoundedScans checks a forward scan of [lo, hi), a backward one, a
// SeekGE and a SeekLT inside with turns, and a reuse through SetBounds,
// against m.
func checkBoundedScans(t *testing.T, newIter func(*IterOptions) *Iterator, m rfModel, lo, hi []byte, rng *rand.Rand, what string) {
	t.Helper()
	want := m.keysIn(lo, hi)
	it := newIter(&IterOptions{LowerBound: lo, UpperBound: hi})
	defer it.Close()
	expect := func(op string, ok bool, i int) {
		t.Helper()
		if ok != (i >= 0 && i < len(want)) {
			t.Fatalf("%s [%q, %q) %s: valid %v, want index %d of %q", what, lo, hi, op, ok, i, want)
		}
		if ok && (string(it.Key()) != want[i] || string(it.Value()) != m[want[i]]) {
			t.Fatalf("%s [%q, %q) %s: at %q=%q, want %q", what, lo, hi, op, it.Key(), it.Value(), want[i])
		}
	}
	var got []string
	for ok := it.SeekGE(lo); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s [%q, %q): forward scan %q, want %q", what, lo, hi, got, want)
	}
	got = got[:0]
	for ok := it.SeekLT(hi); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	slices.Reverse(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s [%q, %q): backward scan %q, want %q", what, lo, hi, got, want)
	}
	// SeekGE at a point inside, then turn back; SeekLT, then turn forward.
	mid := append(slices.Clone(lo), byte(rng.IntN(256)))
	i, _ := slices.BinarySearch(want, string(mid))
	expect("SeekGE(mid)", it.SeekGE(mid), i)
	if it.Valid() {
		expect("Prev after SeekGE", it.Prev(), i-1)
		expect("Next after Prev", it.Next(), i)
	}
	expect("SeekLT(mid)", it.SeekLT(mid), i-1)
	if it.Valid() {
		expect("Next after SeekLT", it.Next(), i)
		expect("Prev after Next", it.Prev(), i-1)
	}
	// Empty-looking ranges at the edges: a seek past every key in range
	// turned around must still find the keys before it.
	if !it.SeekGE(hi) && len(want) > 0 {
		expect("Prev after SeekGE(hi)", it.Prev(), len(want)-1)
	}
	// Reuse with other bounds: one key wide.
	if len(want) > 0 {
		k := []byte(want[rng.IntN(len(want))])
		it.SetBounds(k, append(slices.Clone(k), 0))
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) || it.Next() {
			t.Fatalf("%s: SetBounds to the one key %q lost it", what, k)
		}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}
