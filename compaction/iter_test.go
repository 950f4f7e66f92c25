package compaction

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
)

// filterEntry is one entry of a generated history.
type filterEntry struct {
	ukey  string
	seq   uint64
	kind  base.Kind
	value string
}

func (v filterEntry) ikey() []byte { return base.MakeInternalKey([]byte(v.ukey), v.seq, v.kind) }

func (v filterEntry) String() string {
	if v.kind == base.KindDelete {
		return fmt.Sprintf("%s#%d,DEL", v.ukey, v.seq)
	}
	return fmt.Sprintf("%s#%d=%s", v.ukey, v.seq, v.value)
}

func sortEntries(vs []filterEntry) {
	sort.Slice(vs, func(i, j int) bool { return base.CompareInternal(vs[i].ikey(), vs[j].ikey()) < 0 })
}

// scribbleIter hands out copies of Key/Value and overwrites them on the next
// move, so a consumer that keeps a slice too long reads garbage.
type scribbleIter struct {
	base.InternalIterator
	key, value []byte
}

func (s *scribbleIter) moved(ok bool) bool {
	for _, b := range [][]byte{s.key, s.value} {
		for i := range b {
			b[i] = 0xEE
		}
	}
	s.key, s.value = nil, nil
	if ok {
		s.key = slices.Clone(s.InternalIterator.Key())
		s.value = slices.Clone(s.InternalIterator.Value())
	}
	return ok
}

func (s *scribbleIter) First() bool   { return s.moved(s.InternalIterator.First()) }
func (s *scribbleIter) Next() bool    { return s.moved(s.InternalIterator.Next()) }
func (s *scribbleIter) Key() []byte   { return s.key }
func (s *scribbleIter) Value() []byte { return s.value }

func filterInput(vs []filterEntry) base.InternalIterator {
	vs = slices.Clone(vs)
	sortEntries(vs)
	keys := make([][]byte, len(vs))
	vals := make([][]byte, len(vs))
	for i, v := range vs {
		keys[i], vals[i] = v.ikey(), []byte(v.value)
	}
	return &scribbleIter{InternalIterator: iterator.NewSliceIter(keys, vals)}
}

// compact runs the filter over vs and returns what it writes.
func runFilter(t testing.TB, vs []filterEntry, snapshots []uint64, bottommost func([]byte) bool) []filterEntry {
	t.Helper()
	c := NewIter(filterInput(vs), snapshots, bottommost)
	var out []filterEntry
	for ok := c.First(); ok; ok = c.Next() {
		ukey, seq, kind, parsed := base.ParseInternalKey(c.Key())
		if !parsed {
			t.Fatalf("output key %x does not parse", c.Key())
		}
		out = append(out, filterEntry{ukey: string(ukey), seq: seq, kind: kind, value: string(c.Value())})
	}
	if err := c.Error(); err != nil {
		t.Fatal(err)
	}
	if c.Next() || c.Valid() {
		t.Fatal("exhausted iterator moved")
	}
	return out
}

func renderEntries(vs []filterEntry) string {
	var s []string
	for _, v := range vs {
		s = append(s, v.String())
	}
	return strings.Join(s, " ")
}

// parseEntries reads "a#5=x b#3,DEL" into versions.
func parseEntries(s string) []filterEntry {
	var vs []filterEntry
	for _, f := range strings.Fields(s) {
		var v filterEntry
		k, rest, _ := strings.Cut(f, "#")
		v.ukey = k
		if seq, ok := strings.CutSuffix(rest, ",DEL"); ok {
			fmt.Sscan(seq, &v.seq)
			v.kind = base.KindDelete
		} else {
			seq, val, _ := strings.Cut(rest, "=")
			fmt.Sscan(seq, &v.seq)
			v.kind, v.value = base.KindSet, val
		}
		vs = append(vs, v)
	}
	return vs
}

func TestCompactionIterCases(t *testing.T) {
	always := func([]byte) bool { return true }
	never := func([]byte) bool { return false }
	cases := []struct {
		name       string
		in         string
		snapshots  []uint64
		bottommost func([]byte) bool
		want       string
	}{
		{"newest only", "a#5=x a#3=y a#1,DEL b#2=z", nil, never, "a#5=x b#2=z"},
		{"snapshot keeps stripe newest", "a#5=x a#3=y a#1=w", []uint64{3}, never, "a#5=x a#3=y"},
		{"snapshot between", "a#5=x a#3=y a#1=w", []uint64{2}, never, "a#5=x a#1=w"},
		{"snapshot below all", "a#5=x a#3=y", []uint64{1}, never, "a#5=x"},
		{"every stripe", "a#9=p a#7=q a#5=r a#3=s", []uint64{3, 5, 7}, never, "a#9=p a#7=q a#5=r a#3=s"},
		{"newest tombstone kept above data", "a#5,DEL a#3=y", nil, always, ""},
		{"tombstone kept when not bottom", "a#5,DEL a#3=y", nil, never, "a#5,DEL"},
		{"tombstone needed by snapshot", "a#5,DEL a#3=y", []uint64{4}, always, "a#5,DEL a#3=y"},
		{"oldest tombstone elided", "a#5=x a#3,DEL", []uint64{4}, always, "a#5=x"},
		{"oldest tombstone kept", "a#5=x a#3,DEL", []uint64{4}, never, "a#5=x a#3,DEL"},
		{"tombstone over tombstone", "a#7,DEL a#4,DEL a#1=w", []uint64{2, 5}, never, "a#4,DEL a#1=w"},
		{"tombstone run at bottom", "a#7,DEL a#4,DEL", []uint64{5}, always, ""},
		{"tombstone run not bottom", "a#7,DEL a#4,DEL", []uint64{5}, never, "a#4,DEL"},
		{"set del set", "a#7=p a#4,DEL a#1=w", []uint64{2, 5}, always, "a#7=p a#4,DEL a#1=w"},
		{"per key bottommost", "a#3,DEL b#2,DEL", nil, func(k []byte) bool { return string(k) == "a" }, "b#2,DEL"},
		{"nil bottommost", "a#3,DEL", nil, nil, "a#3,DEL"},
		{"keys that are prefixes", "a#4,DEL a#2=x aa#3=y", []uint64{2}, always, "a#4,DEL a#2=x aa#3=y"},
		{"empty", "", []uint64{1}, always, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderEntries(runFilter(t, parseEntries(tc.in), tc.snapshots, tc.bottommost))
			if got != tc.want {
				t.Fatalf("in %q snapshots %v:\ngot  %q\nwant %q", tc.in, tc.snapshots, got, tc.want)
			}
		})
	}
}

// readEntriesAt returns what a reader at seq sees for every key in keys, reading
// the newest filterEntry <= seq from the given sources.
func readEntriesAt(seq uint64, keys []string, sources ...[]filterEntry) map[string]string {
	newest := map[string]filterEntry{}
	for _, src := range sources {
		for _, v := range src {
			if v.seq > seq {
				continue
			}
			if old, ok := newest[v.ukey]; !ok || v.seq > old.seq {
				newest[v.ukey] = v
			}
		}
	}
	got := map[string]string{}
	for _, k := range keys {
		if v, ok := newest[k]; ok && v.kind == base.KindSet {
			got[k] = v.value
		}
	}
	return got
}

// referenceFilter is the reference filter, written per key group from the
// rules in the package doc: newest filterEntry per stripe, then (oldest first)
// drop a tombstone directly above a kept tombstone, or with nothing older
// kept when bottommost.
func referenceFilter(vs []filterEntry, snapshots []uint64, bottommost func([]byte) bool) []filterEntry {
	vs = slices.Clone(vs)
	sortEntries(vs)
	stripeOf := func(seq uint64) int {
		n := 0
		for _, s := range snapshots {
			if s < seq {
				n++
			}
		}
		return n
	}
	var out []filterEntry
	for i := 0; i < len(vs); {
		j := i
		for j < len(vs) && vs[j].ukey == vs[i].ukey {
			j++
		}
		var kept []filterEntry // newest first
		seen := map[int]bool{}
		for _, v := range vs[i:j] {
			if s := stripeOf(v.seq); !seen[s] {
				seen[s] = true
				kept = append(kept, v)
			}
		}
		var result []filterEntry // oldest first
		for k := len(kept) - 1; k >= 0; k-- {
			v := kept[k]
			if v.kind == base.KindDelete {
				if len(result) == 0 && bottommost([]byte(v.ukey)) {
					continue
				}
				if len(result) > 0 && result[len(result)-1].kind == base.KindDelete {
					continue
				}
			}
			result = append(result, v)
		}
		slices.Reverse(result)
		out = append(out, result...)
		i = j
	}
	return out
}

// filterScenario is a compaction input, older data in the levels below for
// some keys (with smaller sequence numbers), live snapshots, and a bottommost
// callback that is truthful about the levels below.
type filterScenario struct {
	keys       []string
	input      []filterEntry
	below      []filterEntry
	snapshots  []uint64
	bottommost func([]byte) bool
}

// randomFilterScenario makes a random filterScenario over a small key space.
func randomFilterScenario(rng *rand.Rand) filterScenario {
	var sc filterScenario
	pool := []string{"a", "a\x00", "aa", "ab", "b", "b\xff", "c", "d"}
	sc.keys = pool[:1+rng.Intn(len(pool))]
	seq := uint64(0)
	hasBelow := map[string]bool{}
	if rng.Intn(2) == 0 {
		for n := rng.Intn(8); n > 0; n-- {
			seq++
			v := filterEntry{ukey: sc.keys[rng.Intn(len(sc.keys))], seq: seq, kind: base.KindSet, value: fmt.Sprintf("old%d", seq)}
			if rng.Intn(3) == 0 {
				v.kind, v.value = base.KindDelete, ""
			}
			sc.below = append(sc.below, v)
			hasBelow[v.ukey] = true
		}
	}
	for n := rng.Intn(60); n > 0; n-- {
		seq += 1 + uint64(rng.Intn(2))
		v := filterEntry{ukey: sc.keys[rng.Intn(len(sc.keys))], seq: seq, kind: base.KindSet, value: fmt.Sprintf("v%d", seq)}
		if rng.Intn(5) < 2 {
			// Tombstones usually carry no value, but the filter must copy
			// whatever they carry.
			v.kind, v.value = base.KindDelete, ""
			if rng.Intn(3) == 0 {
				v.value = fmt.Sprintf("t%d", seq)
			}
		}
		sc.input = append(sc.input, v)
	}
	for n := rng.Intn(5); n > 0; n-- {
		sc.snapshots = append(sc.snapshots, uint64(rng.Int63n(int64(seq)+2)))
	}
	slices.Sort(sc.snapshots)
	sc.snapshots = slices.Compact(sc.snapshots)
	sc.bottommost = func(k []byte) bool { return !hasBelow[string(k)] }
	return sc
}

// checkFilterScenario runs the filter and checks every property the package doc
// promises.
func checkFilterScenario(t testing.TB, sc filterScenario) {
	t.Helper()
	out := runFilter(t, sc.input, sc.snapshots, sc.bottommost)
	ctx := func() string {
		in := slices.Clone(sc.input)
		sortEntries(in)
		return fmt.Sprintf("input %s\nbelow %s\nsnapshots %v\noutput %s", renderEntries(in), renderEntries(sc.below), sc.snapshots, renderEntries(out))
	}
	// Same answers at every snapshot and at the latest sequence.
	for _, s := range append(slices.Clone(sc.snapshots), base.MaxSeq) {
		want := readEntriesAt(s, sc.keys, sc.input, sc.below)
		got := readEntriesAt(s, sc.keys, out, sc.below)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s\nread at %d: got %v, want %v", ctx(), s, got, want)
		}
	}
	// Output is a sorted subsequence of the input.
	inSet := map[string]string{}
	for _, v := range sc.input {
		inSet[string(v.ikey())] = v.value
	}
	for i, v := range out {
		if val, ok := inSet[string(v.ikey())]; !ok || val != v.value {
			t.Fatalf("%s\noutput entry %v not in input", ctx(), v)
		}
		if i > 0 && base.CompareInternal(out[i-1].ikey(), v.ikey()) >= 0 {
			t.Fatalf("%s\noutput out of order at %d", ctx(), i)
		}
	}
	// Every tombstone written hides something: an older kept value of its
	// key, or (only when not bottommost) possibly data below.
	for i, v := range out {
		if v.kind != base.KindDelete {
			continue
		}
		hasOlder := i+1 < len(out) && out[i+1].ukey == v.ukey
		if hasOlder && out[i+1].kind != base.KindSet {
			t.Fatalf("%s\ntombstone %v directly above another tombstone", ctx(), v)
		}
		if !hasOlder && sc.bottommost([]byte(v.ukey)) {
			t.Fatalf("%s\nbottommost tombstone %v survived with nothing to hide", ctx(), v)
		}
	}
	// And exactly the entries the reference filter keeps.
	if want := renderEntries(referenceFilter(sc.input, sc.snapshots, sc.bottommost)); renderEntries(out) != want {
		t.Fatalf("%s\nwant output %s", ctx(), want)
	}
}

func TestCompactionIterRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	rounds := 5000
	if testing.Short() {
		rounds = 500
	}
	for range rounds {
		checkFilterScenario(t, randomFilterScenario(rng))
	}
}

// TestCompactionIterAllBottommost: with nothing below, no tombstone survives
// that no snapshot needs, and latest reads match.
func TestCompactionIterAllBottommost(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range 2000 {
		sc := randomFilterScenario(rng)
		sc.below = nil
		sc.bottommost = func([]byte) bool { return true }
		checkFilterScenario(t, sc)
		if len(sc.snapshots) == 0 {
			for _, v := range runFilter(t, sc.input, nil, sc.bottommost) {
				if v.kind == base.KindDelete {
					t.Fatalf("tombstone %v survived a bottommost compaction without snapshots", v)
				}
			}
		}
	}
}

// failingInput fails with an error after a given number of steps.
type failingInput struct {
	base.InternalIterator
	steps, failAt int
	err           error
}

var errInjected = errors.New("injected read failure")

func (f *failingInput) step(ok bool) bool {
	f.steps++
	if f.steps > f.failAt {
		f.err = errInjected
		return false
	}
	return ok
}
func (f *failingInput) First() bool  { return f.step(f.InternalIterator.First()) }
func (f *failingInput) Next() bool   { return f.step(f.InternalIterator.Next()) }
func (f *failingInput) Valid() bool  { return f.err == nil && f.InternalIterator.Valid() }
func (f *failingInput) Error() error { return f.err }

func TestCompactionIterInputError(t *testing.T) {
	in := parseEntries("a#9=x a#5,DEL b#4,DEL c#3=y d#2=z")
	for failAt := 0; failAt < 6; failAt++ {
		c := NewIter(&failingInput{InternalIterator: filterInput(in), failAt: failAt}, nil, nil)
		n := 0
		for ok := c.First(); ok; ok = c.Next() {
			n++
		}
		if !errors.Is(c.Error(), errInjected) || c.Valid() {
			t.Fatalf("failAt=%d: err=%v after %d entries", failAt, c.Error(), n)
		}
	}
}

func TestCompactionIterMalformedKey(t *testing.T) {
	bad := iterator.NewSliceIter([][]byte{[]byte("short")}, [][]byte{nil})
	c := NewIter(bad, nil, nil)
	if c.First() || !errors.Is(c.Error(), base.ErrCorruption) ||
		!strings.HasPrefix(c.Error().Error(), "bloomkv/compaction: ") {
		t.Fatalf("malformed key: err=%v", c.Error())
	}
	seekKind := iterator.NewSliceIter([][]byte{base.MakeInternalKey([]byte("k"), 1, base.KindSeek)}, [][]byte{nil})
	c = NewIter(seekKind, nil, nil)
	if c.First() || !errors.Is(c.Error(), base.ErrCorruption) {
		t.Fatalf("seek kind in input: err=%v", c.Error())
	}
}

// FuzzCompactionIter builds a filterScenario from the input bytes and checks the
// same properties as the randomized test.
func FuzzCompactionIter(f *testing.F) {
	f.Add([]byte{4, 3, 0x01, 0x82, 0x03, 0x84, 0x11, 2, 5, 9})
	f.Add([]byte{8, 0, 0x80, 0x80, 0x01, 0x81, 0x00, 0x92, 0x13, 0xa4, 3, 2, 4, 6})
	f.Add([]byte{2, 5, 0, 1, 2, 3, 0x84, 0x85, 0x86, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		pool := []string{"a", "a\x00", "aa", "b", "b\xff", "c"}
		var sc filterScenario
		sc.keys = pool[:1+int(next())%len(pool)]
		hasBelow := map[string]bool{}
		seq := uint64(0)
		for n := next() % 6; n > 0; n-- {
			seq++
			k := sc.keys[int(next())%len(sc.keys)]
			sc.below = append(sc.below, filterEntry{ukey: k, seq: seq, kind: base.KindSet, value: "old"})
			hasBelow[k] = true
		}
		for n := next() % 40; n > 0; n-- {
			b := next()
			seq++
			v := filterEntry{ukey: sc.keys[int(b&0x0F)%len(sc.keys)], seq: seq, kind: base.KindSet, value: fmt.Sprint(seq)}
			if b&0x80 != 0 {
				v.kind, v.value = base.KindDelete, ""
			}
			sc.input = append(sc.input, v)
		}
		for len(data) > 0 {
			sc.snapshots = append(sc.snapshots, uint64(next())%(seq+2))
		}
		slices.Sort(sc.snapshots)
		sc.snapshots = slices.Compact(sc.snapshots)
		sc.bottommost = func(k []byte) bool { return !hasBelow[string(k)] }
		checkFilterScenario(t, sc)
	})
}

func BenchmarkCompactionIter(b *testing.B) {
	// 100k entries: 25k keys with 4 versions each (one a tombstone), two
	// snapshots in the middle of the sequence range.
	var keys, vals [][]byte
	const nkeys, versionsPerKey = 25000, 4
	for k := 0; k < nkeys; k++ {
		for v := versionsPerKey - 1; v >= 0; v-- {
			seq := uint64(v*nkeys + k + 1)
			kind := base.KindSet
			if v == 1 {
				kind = base.KindDelete
			}
			keys = append(keys, base.MakeInternalKey(fmt.Appendf(nil, "key%08d", k), seq, kind))
			vals = append(vals, fmt.Appendf(nil, "value-%d-padding-padding", seq))
		}
	}
	snapshots := []uint64{nkeys + nkeys/2, 2*nkeys + nkeys/2}
	in := iterator.NewSliceIter(keys, vals)
	bottom := func([]byte) bool { return true }
	b.ReportAllocs()
	var n int
	for b.Loop() {
		c := NewIter(in, snapshots, bottom)
		for ok := c.First(); ok; ok = c.Next() {
			n++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/input-entry")
}
