package bloomkv

// Prefix seeks, SeekLT, SetBounds and IterOptions.Prefix against a model:
// random rows of a row+column store, deletes, snapshots, flushes,
// compactions and reopens with filters of every kind (row filters under the
// same extractor name, row filters under a name the reader does not know,
// whole-key filters, none), so that a filter can skip a table but never hide
// a key.

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

const (
	prefixRows   = 200 // rows 150..199 are never written: absent prefixes
	prefixLiveTo = 150
	prefixCols   = 10
)

func rowKey(row int) string       { return fmt.Sprintf("r%04d|", row) }
func cellKey(row, col int) string { return fmt.Sprintf("r%04d|c%02d", row, col) }

// rowPrefix6 is the extractor: the fixed-width row, delimiter included, so every
// key of a row starts with it and every key starting with it is the row's.
func rowPrefix6(k []byte) []byte {
	if len(k) < 6 {
		return k
	}
	return k[:6]
}

// prefixModelKeys returns the model's keys that start with prefix and lie
// in [lower, upper), ascending.
func prefixModelKeys(m model, prefix string, lower, upper []byte) []string {
	var ks []string
	for _, k := range m.sortedKeys(lower, upper) {
		if strings.HasPrefix(k, prefix) {
			ks = append(ks, k)
		}
	}
	return ks
}

// checkPrefixWalk positions with seek, expecting keys[pos], then walks
// randomly inside the prefix and checks each step and both edges.
func checkPrefixWalk(t *testing.T, rng *rand.Rand, it *Iterator, m model, keys []string, pos int, ok bool, what string) {
	t.Helper()
	expect := func(ok bool, op string) {
		t.Helper()
		valid := pos >= 0 && pos < len(keys)
		if ok != valid || it.Valid() != valid {
			t.Fatalf("%s: after %s: valid=%v, want %v (pos %d of %d: %v)", what, op, ok, valid, pos, len(keys), keys)
		}
		if valid && (string(it.Key()) != keys[pos] || string(it.Value()) != m[keys[pos]]) {
			t.Fatalf("%s: after %s: at %q=%q, want %q=%q", what, op, it.Key(), it.Value(), keys[pos], m[keys[pos]])
		}
	}
	expect(ok, "seek")
	for step := 0; step < 12 && pos >= 0 && pos < len(keys); step++ {
		if rng.IntN(3) == 0 {
			pos--
			expect(it.Prev(), "Prev")
		} else {
			pos++
			expect(it.Next(), "Next")
		}
	}
	// Off an edge, the iterator stays off until positioned again.
	if pos < 0 || pos >= len(keys) {
		if it.Next() || it.Prev() {
			t.Fatalf("%s: moved again after running off the prefix", what)
		}
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkPrefixOps runs random prefix seeks, SeekLT and SetBounds on view
// (the DB, or a snapshot with its model).
func checkPrefixOps(t *testing.T, rng *rand.Rand, newIter func(*IterOptions) *Iterator, m model, rowFilters bool, what string) {
	t.Helper()
	for round := 0; round < 6; round++ {
		var lower, upper []byte
		if rng.IntN(3) == 0 {
			lower = []byte(cellKey(rng.IntN(prefixRows), rng.IntN(prefixCols)))
			upper = []byte(cellKey(rng.IntN(prefixRows), rng.IntN(prefixCols)))
			if string(lower) > string(upper) {
				lower, upper = upper, lower
			}
		}
		it := newIter(&IterOptions{LowerBound: lower, UpperBound: upper})
		for i := 0; i < 8; i++ {
			row, col := rng.IntN(prefixRows), rng.IntN(prefixCols)
			key := cellKey(row, col)
			prefix := key // without an extractor a prefix seek is a point seek
			if rowFilters {
				prefix = rowKey(row)
			}
			keys := prefixModelKeys(m, prefix, lower, upper)
			target := key
			if lower != nil && string(lower) > target {
				target = string(lower)
			}
			pos := sort.SearchStrings(keys, target)
			checkPrefixWalk(t, rng, it, m, keys, pos, it.SeekPrefixGE([]byte(key)), fmt.Sprintf("%s: SeekPrefixGE(%s) in [%q, %q)", what, key, lower, upper))

			// SeekLT, then a plain walk over the bounded view.
			all := m.sortedKeys(lower, upper)
			lt := sort.SearchStrings(all, key) - 1
			ok := it.SeekLT([]byte(key))
			if want := lt >= 0; ok != want || ok && string(it.Key()) != all[lt] {
				t.Fatalf("%s: SeekLT(%s) = %v at %q, want %v at index %d of %d", what, key, ok, it.Key(), want, lt, len(all))
			}
		}
		// SetBounds reuses the iterator over another range.
		lo, hi := cellKey(rng.IntN(prefixRows), 0), cellKey(rng.IntN(prefixRows), 5)
		if lo > hi {
			lo, hi = hi, lo
		}
		it.SetBounds([]byte(lo), []byte(hi))
		checkIter(t, rng, it, m, []byte(lo), []byte(hi), what+": after SetBounds")
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		// IterOptions.Prefix: exactly one row, both ways.
		row := rng.IntN(prefixRows)
		pit := newIter(&IterOptions{Prefix: []byte(rowKey(row))})
		want := prefixModelKeys(m, rowKey(row), nil, nil)
		var got []string
		for ok := pit.First(); ok; ok = pit.Next() {
			got = append(got, string(pit.Key()))
		}
		var back []string
		for ok := pit.Last(); ok; ok = pit.Prev() {
			back = append([]string{string(pit.Key())}, back...)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(back) != fmt.Sprint(want) {
			t.Fatalf("%s: Prefix %s: forward %v, backward %v, want %v", what, rowKey(row), got, back, want)
		}
		if err := pit.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPrefixSeekAgainstModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { prefixModelRun(t, seed) })
	}
}

func prefixModelRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0xf11))
	fs := vfs.NewMem()
	m := model{}
	type snap struct {
		s *Snapshot
		m model
	}
	var snaps []snap
	// Each reopen picks how the tables written from then on are filtered
	// and how the reader may use them.
	open := func() (*DB, bool) {
		o := tinyOptions(fs)
		rowFilters := true
		switch rng.IntN(5) {
		case 4: // rows and whole keys together
			o.FilterKey, o.FilterKeyName, o.FilterWholeKey = rowPrefix6, "row6", true
		case 0: // rows, one name
			o.FilterKey, o.FilterKeyName = rowPrefix6, "row6"
		case 1: // rows, but the name changed: older row tables lose their filters
			o.FilterKey, o.FilterKeyName = rowPrefix6, fmt.Sprintf("row6-v%d", rng.IntN(2))
		case 2: // whole keys
			rowFilters = false
		case 3: // no filters
			o.FilterKey, o.FilterKeyName = rowPrefix6, "row6"
			o.BloomBitsPerKey = -1
		}
		if rng.IntN(2) == 0 {
			o.MemtableFilterRatio = 0.05 // memtable filters must never hide a key either
		}
		return mustOpen(t, "/db", o), rowFilters
	}
	db, rowFilters := open()
	for step := 0; step < 600; step++ {
		row, col := rng.IntN(prefixLiveTo), rng.IntN(prefixCols)
		k := cellKey(row, col)
		switch r := rng.IntN(100); {
		case r < 70:
			v := fmt.Sprintf("v%d", step)
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			m[k] = v
		case r < 85:
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		case r < 90:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 92:
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		case r < 94 && len(snaps) < 4:
			snaps = append(snaps, snap{db.NewSnapshot(), m.clone()})
		case r < 96:
			for _, s := range snaps {
				s.s.Close()
			}
			snaps = nil
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, rowFilters = open()
		}
		if step%50 == 49 {
			what := fmt.Sprintf("seed %d step %d", rng.Uint64(), step)
			checkPrefixOps(t, rng, db.NewIterator, m, rowFilters, what)
			for i, s := range snaps {
				checkPrefixOps(t, rng, s.s.NewIterator, s.m, rowFilters, fmt.Sprintf("%s snapshot %d", what, i))
			}
		}
	}
	for _, s := range snaps {
		s.s.Close()
	}
	db.Close()
}

// TestPrefixSeekSkipsTables: on a settled tree with row filters, a prefix
// seek for an absent row reads no data block (every table it considers is
// skipped on its filter, or it is a rare false positive), while the same
// seeks with filters ignored read blocks; a present row is always found.
func TestPrefixSeekSkipsTables(t *testing.T) {
	fs := vfs.NewMem()
	o := tinyOptions(fs)
	o.FilterKey, o.FilterKeyName = rowPrefix6, "row6"
	db := mustOpen(t, "/db", o)
	for row := 0; row < 1000; row += 2 { // odd rows are absent
		for col := 0; col < 5; col++ {
			if err := db.Put([]byte(cellKey(row, col)), []byte("value-of-a-cell")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	seek := func(db *DB, row int) (found int, d Metrics) {
		before := db.Metrics()
		it := db.NewIterator(nil)
		for ok := it.SeekPrefixGE([]byte(rowKey(row))); ok; ok = it.Next() {
			found++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return found, db.Metrics().Sub(before)
	}
	var miss, missIgnored Metrics
	for row := 1; row < 1000; row += 20 {
		n, d := seek(db, row)
		if n != 0 {
			t.Fatalf("absent row %d: found %d keys", row, n)
		}
		miss.IterDataBlockReads += d.IterDataBlockReads
		miss.IterFilterNegatives += d.IterFilterNegatives
		miss.IterPrefixSeeks += d.IterPrefixSeeks
		if n, _ := seek(db, row-1); n != 5 {
			t.Fatalf("present row %d: found %d of 5 keys", row-1, n)
		}
	}
	db.Close()
	o.IgnoreFilters = true
	db = mustOpen(t, "/db", o)
	defer db.Close()
	for row := 1; row < 1000; row += 20 {
		_, d := seek(db, row)
		missIgnored.IterDataBlockReads += d.IterDataBlockReads
	}
	t.Logf("absent rows: %d seeks read %d data blocks with filters (%d filter negatives), %d without",
		miss.IterPrefixSeeks, miss.IterDataBlockReads, miss.IterFilterNegatives, missIgnored.IterDataBlockReads)
	if miss.IterFilterNegatives == 0 || miss.IterDataBlockReads*10 > missIgnored.IterDataBlockReads {
		t.Fatalf("filters did not skip tables: %d blocks with filters, %d without", miss.IterDataBlockReads, missIgnored.IterDataBlockReads)
	}
}
