package bloomkv

// The read-path differential test (issue 34): random writes, deletes, range
// deletions, batches, flushes, compactions (manual, idle, read-triggered)
// and reopens under randomly changing filter settings, with every read --
// Get, and iterators with arbitrary Prefixes and bounds moved every way --
// checked against a map, at the present, at snapshots and through
// iterators held open across the writes.
//
// Every read-path option is in play at once: row filters under two
// extractors and names (so reopens meet tables whose filters they may not
// use), whole-key filters, memtable filters, per-level bits,
// FilterSkipLastLevel, all three variants, fractional bits and target
// rates, filters cached in the block cache and pinned, tiny caches,
// blocks and tables, mmap on and off, every WAL mode, IgnoreFilters.
// Prefixes are whole rows (filter keys, which may skip tables), parts of
// rows, whole keys, keys and more, bare prefixes shorter than a row,
// absent rows and the empty prefix.
//
// Budget: a few seconds under -short; longer runs with flags, e.g.
//
//	go test -run TestPrefixModelAllReadOptions -model.time 10m -timeout 0 .
//	go test -run TestPrefixModelAllReadOptions -model.seed 77 -model.seeds 1 -model.ops 20000 .
//
// The test logs the seeds it ran, the operations, the reads it checked,
// the reopens and the compactions, and how many tables filters skipped (so
// that a run that never used a filter does not pass for one that did).
// docs/design-notes.md records a long run.

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

var (
	modelOps   = flag.Int("model.ops", 0, "TestPrefixModelAllReadOptions: operations per seed (0: 1500 under -short, 4000 otherwise)")
	modelSeed  = flag.Uint64("model.seed", 1, "TestPrefixModelAllReadOptions: first seed")
	modelSeeds = flag.Int("model.seeds", 2, "TestPrefixModelAllReadOptions: seeds to run, from -model.seed on (ignored with -model.time)")
	modelTime  = flag.Duration("model.time", 0, "TestPrefixModelAllReadOptions: run seeds from -model.seed on until this much time has passed")
)

const (
	pmRows     = 40 // rows written: r000/ .. r039/; r040/ .. r049/ are absent
	pmCols     = 16
	pmAbsentTo = 50
)

// fixed5 is the second extractor: on the test's keys it gives the same
// rows as rowOfSlash ("r012/"), under another name, so tables written under
// one are read without their filters under the other. Keys shorter than a
// row are their own filter key, as with rowOfSlash.
func fixed5(k []byte) []byte {
	if len(k) < 5 {
		return k
	}
	return k[:5]
}

// pmStats are what a run did, summed over seeds.
type pmStats struct {
	seeds, ops, reads, reopens        int
	compactions, idle, readTriggered  uint64
	iterFilterNegatives, getNegatives uint64
	prefixIters, filterKeyPrefixIters int
}

func (s *pmStats) addMetrics(m Metrics) {
	s.compactions += m.Compactions
	s.idle += m.IdleCompactions
	s.readTriggered += m.ReadCompactions
	s.iterFilterNegatives += m.IterFilterNegatives
	s.getNegatives += m.FilterNegatives
}

func TestPrefixModelAllReadOptions(t *testing.T) {
	// Read-triggered compactions wait for a second-long write pause; here
	// they must happen between the test's writes.
	saved := readCompactionQuiet
	readCompactionQuiet = 0
	t.Cleanup(func() { readCompactionQuiet = saved })

	ops := *modelOps
	if ops == 0 {
		ops = 4000
		if testing.Short() {
			ops = 1500
		}
	}
	var st pmStats
	start := time.Now()
	for i := 0; ; i++ {
		if *modelTime > 0 {
			if time.Since(start) >= *modelTime {
				break
			}
		} else if i >= *modelSeeds {
			break
		}
		seed := *modelSeed + uint64(i)
		if !t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { prefixModelAllOptionsRun(t, seed, ops, &st) }) {
			break
		}
	}
	t.Logf("%d seeds from %d, %d ops each: %d ops, %d reads checked, %d reopens, %d prefix iterators (%d with a filter-key prefix); "+
		"%d compactions (%d idle, %d read-triggered); filters skipped %d tables for iterators, %d for Gets; %s",
		st.seeds, *modelSeed, ops, st.ops, st.reads, st.reopens, st.prefixIters, st.filterKeyPrefixIters,
		st.compactions, st.idle, st.readTriggered, st.iterFilterNegatives, st.getNegatives, time.Since(start).Round(time.Second))
}

// pmOptions picks every read-path setting for the next open.
func pmOptions(rng *rand.Rand, fs vfs.FS) *Options {
	o := tinyOptions(fs)
	o.LBaseMaxBytes, o.TargetFileSize = 8<<10, 2<<10 // many small tables, several levels
	o.MaxOpenFiles = []int{10, 20}[rng.IntN(2)]
	switch rng.IntN(8) {
	case 0, 1, 2:
		o.FilterKey, o.FilterKeyName = rowOfSlash, "slash"
	case 3, 4:
		o.FilterKey, o.FilterKeyName = fixed5, "fixed5"
	case 5:
		o.FilterKey, o.FilterKeyName = rowOfSlash, "slash-v2" // an unknown name to the others
	default: // whole-key filters only
	}
	o.FilterWholeKey = o.FilterKey != nil && rng.IntN(2) == 0
	o.MemtableFilterRatio = []float64{0, 0.02, 0.1, 0.25}[rng.IntN(4)]
	o.FilterVariant = []filter.Variant{filter.VariantStandard, filter.VariantBlocked, filter.VariantFuse}[rng.IntN(3)]
	switch rng.IntN(6) {
	case 0:
		o.BloomBitsPerKey = -1 // no filters in new tables
	case 1:
		o.BloomBitsPerKey = 1 // many false positives
	case 2:
		o.FilterBitsPerKey = 2.5
	case 3:
		o.FilterTargetFPR = 0.01
	default:
		o.BloomBitsPerKey = 10
	}
	o.FilterPerLevel = o.FilterVariant != filter.VariantFuse && rng.IntN(2) == 0
	o.FilterSkipLastLevel = rng.IntN(2) == 0
	o.BlockCacheSize = []int64{-1, 1 << 10, 16 << 10}[rng.IntN(3)]
	if o.BlockCacheSize > 0 && rng.IntN(2) == 0 {
		o.CacheFilterBlocks = true
		o.FilterPinning = []FilterPinning{PinLevel0Filters, PinAllFilters, PinNoFilters}[rng.IntN(3)]
	}
	o.IgnoreFilters = rng.IntN(10) == 0
	o.BlockSize = []int{64, 256, 4096}[rng.IntN(3)]
	o.Compression = []Compression{SnappyCompression, NoCompression}[rng.IntN(2)]
	o.WALMode = []WALMode{WALWriteThrough, WALBuffered, WALSync, WALDisabled}[rng.IntN(4)]
	o.DisableMmap = rng.IntN(2) == 0
	o.IdleCompactionDelay = []time.Duration{-1, time.Millisecond, 5 * time.Millisecond}[rng.IntN(3)]
	o.DisableReadCompactions = rng.IntN(4) == 0
	// Range filters (issue 27): some tables with, some without.
	o.RangeFilterBitsPerKey = []float64{0, 2, 10, 20}[rng.IntN(4)]
	// Issue 25: partitioned index and filters, down to one partition per
	// data block.
	o.IndexPartitionSize = []int{-1, 1, 48, 4096}[rng.IntN(4)]
	return o
}

func (o *Options) pmDescribe() string {
	return fmt.Sprintf("FilterKeyName=%q whole=%v mem=%g variant=%d bits=%d/%g/%g perLevel=%v skipLast=%v cache=%d cacheFilters=%v pin=%d ignore=%v block=%d wal=%d mmapOff=%v idle=%s noReadComp=%v rangeFilter=%g partition=%d",
		o.FilterKeyName, o.FilterWholeKey, o.MemtableFilterRatio, o.FilterVariant, o.BloomBitsPerKey, o.FilterBitsPerKey, o.FilterTargetFPR,
		o.FilterPerLevel, o.FilterSkipLastLevel, o.BlockCacheSize, o.CacheFilterBlocks, o.FilterPinning, o.IgnoreFilters,
		o.BlockSize, o.WALMode, o.DisableMmap, o.IdleCompactionDelay, o.DisableReadCompactions, o.RangeFilterBitsPerKey, o.IndexPartitionSize)
}

// pmRun is one seed's state.
type pmRun struct {
	t    *testing.T
	rng  *rand.Rand
	st   *pmStats
	opts *Options
	step int
}

// filterKeyOf is the extractor's filter key of k, or k itself without one:
// what SeekPrefixGE keeps to.
func (r *pmRun) filterKeyOf(k string) string {
	if r.opts.FilterKey == nil {
		return k
	}
	return string(r.opts.FilterKey([]byte(k)))
}

func (r *pmRun) key() string {
	row := r.rng.IntN(pmRows)
	if r.rng.IntN(12) == 0 {
		return fmt.Sprintf("r%03d", row) // a bare key, shorter than a row
	}
	return fmt.Sprintf("r%03d/c%02d", row, r.rng.IntN(pmCols))
}

// readKey is a key to look up or seek to: a written one, one of an absent
// row, or a string between keys.
func (r *pmRun) readKey() string {
	switch r.rng.IntN(10) {
	case 0:
		return fmt.Sprintf("r%03d/c%02d", pmRows+r.rng.IntN(pmAbsentTo-pmRows), r.rng.IntN(pmCols))
	case 1:
		return r.key() + "\x00"
	case 2:
		return max(r.prefix(), "r") // keys are never empty
	}
	return r.key()
}

// prefix returns an IterOptions.Prefix of any shape (never nil).
func (r *pmRun) prefix() string {
	row := r.rng.IntN(pmRows)
	col := r.rng.IntN(pmCols)
	rowS := fmt.Sprintf("r%03d/", row)
	switch r.rng.IntN(10) {
	case 0, 1:
		return rowS // a filter key
	case 2:
		return fmt.Sprintf("r%03d/", pmRows+r.rng.IntN(pmAbsentTo-pmRows)) // an absent row
	case 3:
		return fmt.Sprintf("r%03d/c%d", row, col/10) // part of a row
	case 4:
		return rowS + "c" // part of a row
	case 5:
		return fmt.Sprintf("r%03d/c%02d", row, col) // a whole key
	case 6:
		return fmt.Sprintf("r%03d/c%02dx", row, col) // longer than any key
	case 7:
		return fmt.Sprintf("r%03d", row) // a bare key, and every key of its row
	case 8:
		return fmt.Sprintf("r%0*d", 1+r.rng.IntN(2), row/10) // bare: "r0", "r01"
	}
	return []string{"", "r", "s", "r0"}[r.rng.IntN(4)] // everything, or nothing
}

// bounds returns random iterator bounds (each nil half the time), in order.
func (r *pmRun) bounds() (lower, upper []byte) {
	if r.rng.IntN(2) == 0 {
		lower = []byte(r.readKey())
	}
	if r.rng.IntN(2) == 0 {
		upper = []byte(r.readKey())
	}
	if lower != nil && upper != nil && string(lower) > string(upper) {
		lower, upper = upper, lower
	}
	return lower, upper
}

// rangeEnds returns a range to delete or compact: mostly a few columns of
// one row, now and then ends of any shape (prefixes, bare rows), so that
// some deletions span rows and some end inside one.
func (r *pmRun) rangeEnds() (string, string) {
	var a, b string
	if r.rng.IntN(5) != 0 {
		row, col := r.rng.IntN(pmRows), r.rng.IntN(pmCols)
		a = fmt.Sprintf("r%03d/c%02d", row, col)
		b = fmt.Sprintf("r%03d/c%02d", row, col+1+r.rng.IntN(4))
	} else {
		a, b = r.prefix(), r.prefix()
	}
	// Keys are not empty, and neither are range ends.
	a, b = max(a, "r"), max(b, "r")
	if a > b {
		a, b = b, a
	}
	if a == b {
		b += "\x00"
	}
	return a, b
}

func (r *pmRun) checkGet(get func([]byte) ([]byte, error), m model, key, what string) {
	r.t.Helper()
	r.st.reads++
	checkGet(r.t, get, m, key, fmt.Sprintf("step %d %s [%s]", r.step, what, r.opts.pmDescribe()))
}

// pmIterSpec is what an iterator was made with.
type pmIterSpec struct {
	prefix       []byte // nil: none
	lower, upper []byte
}

// modelKeys returns the model's keys the iterator may show.
func (s pmIterSpec) modelKeys(m model) []string {
	ks := m.sortedKeys(s.lower, s.upper)
	if s.prefix == nil {
		return ks
	}
	out := ks[:0]
	for _, k := range ks {
		if strings.HasPrefix(k, string(s.prefix)) {
			out = append(out, k)
		}
	}
	return out
}

// checkIterMoves moves it at random and compares each position with the
// model: First, Last, SeekGE, SeekLT, SeekPrefixGE (which keeps to the
// filter key of its target until positioned again), Next, Prev and
// SetBounds (which keeps the prefix; spec then holds the new bounds).
func (r *pmRun) checkIterMoves(it *Iterator, m model, spec *pmIterSpec, moves int, what string) {
	r.t.Helper()
	t := r.t
	what = fmt.Sprintf("step %d %s prefix=%q [%q,%q) [%s]", r.step, what, spec.prefix, spec.lower, spec.upper, r.opts.pmDescribe())
	keys := spec.modelKeys(m)
	list := keys // what Next and Prev walk: keys, or one filter key's run of them
	pos := -2    // -2 unpositioned; -1 or len(list): off an end
	inPrefix := false
	var trail []string
	expect := func(ok bool, op string) {
		t.Helper()
		r.st.reads++
		trail = append(trail, op)
		valid := pos >= 0 && pos < len(list)
		if ok != valid || it.Valid() != valid {
			t.Fatalf("%s: after %v: valid=%v, want %v (at %q; want index %d of %v; error %v)", what, trail, ok, valid, it.Key(), pos, list, it.Error())
		}
		if valid && (string(it.Key()) != list[pos] || string(it.Value()) != m[list[pos]]) {
			t.Fatalf("%s: after %v: at %q=%q, want %q=%q", what, trail, it.Key(), it.Value(), list[pos], m[list[pos]])
		}
	}
	for i := 0; i < moves; i++ {
		switch c := r.rng.IntN(20); {
		case c < 2:
			list, inPrefix, pos = keys, false, 0
			expect(it.First(), "First")
		case c < 4:
			list, inPrefix = keys, false
			pos = len(list) - 1
			expect(it.Last(), "Last")
		case c < 6:
			k := r.readKey()
			list, inPrefix = keys, false
			pos = sort.SearchStrings(list, k)
			expect(it.SeekGE([]byte(k)), fmt.Sprintf("SeekGE(%q)", k))
		case c < 8:
			k := r.readKey()
			list, inPrefix = keys, false
			pos = sort.SearchStrings(list, k) - 1
			expect(it.SeekLT([]byte(k)), fmt.Sprintf("SeekLT(%q)", k))
		case c < 10:
			k := r.readKey()
			p := r.filterKeyOf(k)
			// The first key >= k, if its filter key is k's, and the run
			// of keys around it with that filter key (contiguous).
			i := sort.SearchStrings(keys, k)
			list, inPrefix, pos = nil, true, 0
			if i < len(keys) && r.filterKeyOf(keys[i]) == p {
				lo, hi := i, i+1
				for lo > 0 && r.filterKeyOf(keys[lo-1]) == p {
					lo--
				}
				for hi < len(keys) && r.filterKeyOf(keys[hi]) == p {
					hi++
				}
				list, pos = keys[lo:hi], i-lo
			}
			expect(it.SeekPrefixGE([]byte(k)), fmt.Sprintf("SeekPrefixGE(%q)", k))
		case c < 11:
			lo, hi := r.bounds()
			it.SetBounds(lo, hi)
			spec.lower, spec.upper = lo, hi
			keys = spec.modelKeys(m)
			list, inPrefix, pos = keys, false, -2
			trail = append(trail, fmt.Sprintf("SetBounds(%q,%q)", lo, hi))
		case c < 16:
			if pos < 0 || pos >= len(list) {
				continue
			}
			pos++
			expect(it.Next(), "Next")
		default:
			if pos < 0 || pos >= len(list) {
				continue
			}
			pos--
			expect(it.Prev(), "Prev")
		}
		if inPrefix && pos != -2 && (pos < 0 || pos >= len(list)) {
			// Off a prefix seek's edge the iterator stays off.
			if it.Next() || it.Prev() {
				t.Fatalf("%s: after %v: moved again after running off the prefix", what, trail)
			}
			pos = -2
		}
	}
	if err := it.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// newCheckedIter makes an iterator over view with a random spec (a prefix
// nine times in ten), checks inverted bounds once in a while, and returns
// it with its spec, or nil when the spec was the inverted-bounds check.
func (r *pmRun) newCheckedIter(newIter func(*IterOptions) *Iterator) (*Iterator, pmIterSpec) {
	var spec pmIterSpec
	if r.rng.IntN(10) != 0 {
		spec.prefix = []byte(r.prefix())
		r.st.prefixIters++
		if prefixIsFilterKey(r.opts.FilterKey, spec.prefix) {
			r.st.filterKeyPrefixIters++
		}
	}
	if r.rng.IntN(3) != 0 {
		spec.lower, spec.upper = r.bounds()
	}
	if r.rng.IntN(40) == 0 && spec.lower != nil && spec.upper != nil && string(spec.lower) < string(spec.upper) {
		it := newIter(&IterOptions{Prefix: spec.prefix, LowerBound: spec.upper, UpperBound: spec.lower})
		if it.First() || it.SeekGE(spec.lower) || !errors.Is(it.Error(), ErrInvalidArgument) || !errors.Is(it.Close(), ErrInvalidArgument) {
			r.t.Fatalf("step %d: inverted bounds [%q,%q): moved or no error: %v", r.step, spec.upper, spec.lower, it.Error())
		}
		return nil, spec
	}
	return newIter(&IterOptions{Prefix: spec.prefix, LowerBound: spec.lower, UpperBound: spec.upper}), spec
}

type pmHeld struct {
	it   *Iterator
	m    model
	spec pmIterSpec
}

func prefixModelAllOptionsRun(t *testing.T, seed uint64, ops int, st *pmStats) {
	r := &pmRun{t: t, rng: rand.New(rand.NewPCG(seed, 34)), st: st}
	fs := vfs.NewMem()
	r.opts = pmOptions(r.rng, fs)
	db := mustOpen(t, "/db", r.opts)
	m := model{}
	var snaps []openSnapshot
	var held []pmHeld
	closeAll := func() {
		for _, s := range snaps {
			if err := s.s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		snaps = nil
		for _, h := range held {
			if err := h.it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		held = nil
	}
	defer func() {
		closeAll()
		st.addMetrics(db.Metrics())
		db.Close()
	}()
	st.seeds++
	for r.step = 0; r.step < ops; r.step++ {
		st.ops++
		switch c := r.rng.IntN(200); {
		case c < 56:
			// Values of up to 100 random bytes (compression keeps them) fill
			// several levels of tiny tables.
			v := fmt.Appendf(nil, "v%d.%d.", seed, r.step)
			for range r.rng.IntN(6) {
				v = fmt.Appendf(v, "%016x", r.rng.Uint64())
			}
			k := r.key()
			if err := db.Put([]byte(k), v); err != nil {
				t.Fatal(err)
			}
			m[k] = string(v)
		case c < 65:
			k := r.key()
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		case c < 67:
			lo, hi := r.rangeEnds()
			if err := db.DeleteRange([]byte(lo), []byte(hi)); err != nil {
				t.Fatal(err)
			}
			m.deleteRange(lo, hi)
		case c < 76:
			// A batch applies its operations in order.
			b := NewBatch()
			next := m.clone()
			for i := r.rng.IntN(6); i >= 0; i-- {
				switch r.rng.IntN(5) {
				case 0:
					k := r.key()
					b.Delete([]byte(k))
					delete(next, k)
				case 1:
					lo, hi := r.rangeEnds()
					b.DeleteRange([]byte(lo), []byte(hi))
					next.deleteRange(lo, hi)
				default:
					k, v := r.key(), fmt.Sprintf("b%d.%d.%d", seed, r.step, i)
					b.Put([]byte(k), []byte(v))
					next[k] = v
				}
			}
			if err := db.Write(b); err != nil {
				t.Fatal(err)
			}
			m = next
		case c < 106:
			r.checkGet(db.Get, m, r.readKey(), "Get")
		case c < 140:
			it, spec := r.newCheckedIter(db.NewIterator)
			if it == nil {
				continue
			}
			r.checkIterMoves(it, m, &spec, 24, "iter")
			if r.rng.IntN(4) == 0 && len(held) < 6 {
				held = append(held, pmHeld{it, m.clone(), spec})
			} else if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		case c < 150 && len(held) > 0:
			// An iterator keeps its point in time (and bounds) across the
			// writes, flushes and compactions since it was made.
			i := r.rng.IntN(len(held))
			h := &held[i]
			r.checkIterMoves(h.it, h.m, &h.spec, 16, "held iter")
			if r.rng.IntN(3) == 0 {
				if err := h.it.Close(); err != nil {
					t.Fatal(err)
				}
				held = append(held[:i], held[i+1:]...)
			}
		case c < 156 && len(snaps) < 4:
			snaps = append(snaps, openSnapshot{db.NewSnapshot(), m.clone()})
		case c < 166 && len(snaps) > 0:
			s := snaps[r.rng.IntN(len(snaps))]
			r.checkGet(s.s.Get, s.m, r.readKey(), "snapshot Get")
			if it, spec := r.newCheckedIter(s.s.NewIterator); it != nil {
				r.checkIterMoves(it, s.m, &spec, 16, "snapshot iter")
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
			}
		case c < 168 && len(snaps) > 0:
			i := r.rng.IntN(len(snaps))
			if err := snaps[i].s.Close(); err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps[:i], snaps[i+1:]...)
		case c < 178:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case c < 180:
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		case c < 183:
			lo, hi := r.rangeEnds()
			if err := db.Compact([]byte(lo), []byte(hi)); err != nil {
				t.Fatal(err)
			}
		case c < 186:
			// Reopen with other filter settings: every table written so far
			// must stay readable, through its filter only when the filter
			// answers for what is asked.
			closeAll()
			st.addMetrics(db.Metrics())
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			r.opts = pmOptions(r.rng, fs)
			db = mustOpen(t, "/db", r.opts)
			st.reopens++
		case c < 189:
			if err := db.WaitForCompactions(); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, db)
		case c < 191:
			// A pause: idle compactions (and read-triggered ones, which wait
			// for writes to pause) get to run.
			time.Sleep(2 * time.Millisecond)
		case c < 193:
			// A burst of reads, which charges the tables seeks and Gets pass
			// through on their way deeper: read-triggered compactions.
			// Seeks into a few rows pass through the same tables again and
			// again; read compactions need 100 seeks' worth of charges on one.
			row := r.rng.IntN(pmRows - 2)
			keys := m.sortedKeys(nil, nil)
			it := db.NewIterator(nil)
			for range 300 {
				k := fmt.Sprintf("r%03d/c%02d", row+r.rng.IntN(3), r.rng.IntN(pmCols))
				i := sort.SearchStrings(keys, k)
				ok := it.SeekGE([]byte(k))
				r.st.reads++
				if ok != (i < len(keys)) || ok && (string(it.Key()) != keys[i] || string(it.Value()) != m[keys[i]]) {
					t.Fatalf("step %d burst SeekGE(%q) = %v at %q=%q, want index %d of %d [%s]", r.step, k, ok, it.Key(), it.Value(), i, len(keys), r.opts.pmDescribe())
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Finally every key, and whole rows, through a fresh view.
	for k := range m {
		r.checkGet(db.Get, m, k, "final Get")
	}
	for row := 0; row < pmAbsentTo; row++ {
		spec := pmIterSpec{prefix: fmt.Appendf(nil, "r%03d/", row)}
		it := db.NewIterator(&IterOptions{Prefix: spec.prefix})
		r.checkIterMoves(it, m, &spec, 8, "final row iter")
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
