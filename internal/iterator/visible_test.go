package iterator

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// visibleModel is the reference for Visible: the visible keys computed from a
// map, and a cursor with the same exhaustion rules.
type visibleModel struct {
	keys, values []string
	lower        string
	state        position // posUnpositioned, posForward (on a key), posBeforeStart, posAfterEnd
	idx          int
}

func newVisibleModel(history []entry, seq uint64, lower, upper []byte) *visibleModel {
	newest := map[string]entry{}
	for _, e := range history {
		if e.seq > seq {
			continue
		}
		if old, ok := newest[e.ukey]; !ok || e.seq > old.seq {
			newest[e.ukey] = e
		}
	}
	m := &visibleModel{lower: string(lower)}
	for k, e := range newest {
		if e.kind != base.KindSet ||
			(lower != nil && k < string(lower)) || (upper != nil && k >= string(upper)) {
			continue
		}
		m.keys = append(m.keys, k)
	}
	sort.Strings(m.keys)
	for _, k := range m.keys {
		m.values = append(m.values, newest[k].value)
	}
	return m
}

func (m *visibleModel) set(i int) bool {
	m.idx = i
	switch {
	case i < 0:
		m.state = posBeforeStart
	case i >= len(m.keys):
		m.state = posAfterEnd
	default:
		m.state = posForward
	}
	return m.state == posForward
}

func (m *visibleModel) first() bool { return m.set(0) }
func (m *visibleModel) last() bool  { return m.set(len(m.keys) - 1) }
func (m *visibleModel) seekGE(k string) bool {
	if k < m.lower {
		k = m.lower
	}
	return m.set(sort.SearchStrings(m.keys, k))
}

func (m *visibleModel) next() bool {
	switch m.state {
	case posForward:
		return m.set(m.idx + 1)
	case posBeforeStart:
		return m.first()
	}
	return false
}

func (m *visibleModel) prev() bool {
	switch m.state {
	case posForward:
		return m.set(m.idx - 1)
	case posAfterEnd:
		return m.last()
	}
	return false
}

// visibleCase is one randomized scenario.
type visibleCase struct {
	keys         []string
	history      []entry
	parts        [][]entry
	seq          uint64
	lower, upper []byte
}

func randomBound(rng *rand.Rand, keys []string) []byte {
	switch rng.Intn(4) {
	case 0:
		return nil
	case 1: // a key that is not in the key space
		return append([]byte(keys[rng.Intn(len(keys))]), 'x')
	}
	return []byte(keys[rng.Intn(len(keys))])
}

func randomVisibleCase(rng *rand.Rand) visibleCase {
	var c visibleCase
	c.keys = randomUserKeys(rng, 1+rng.Intn(10))
	c.history = randomHistory(rng, c.keys, rng.Intn(60))
	c.parts = splitAcross(rng, c.history, 1+rng.Intn(4))
	maxSeq := uint64(0)
	if len(c.history) > 0 {
		maxSeq = c.history[len(c.history)-1].seq
	}
	c.seq = uint64(rng.Int63n(int64(maxSeq) + 2))
	if rng.Intn(5) == 0 {
		c.seq = base.MaxSeq
	}
	c.lower, c.upper = randomBound(rng, c.keys), randomBound(rng, c.keys)
	return c
}

func (c visibleCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seq=%d lower=%q upper=%q\n", c.seq, c.lower, c.upper)
	for i, p := range c.parts {
		sortEntries(p)
		fmt.Fprintf(&b, "child %d:", i)
		for _, e := range p {
			fmt.Fprintf(&b, " %q#%d,%s=%q", e.ukey, e.seq, e.kind, e.value)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runVisibleOps drives v and the model with the same random operations and
// compares after each.
func runVisibleOps(t *testing.T, rng *rand.Rand, c visibleCase, v *Visible, m *visibleModel, nops int) {
	t.Helper()
	var trace []string
	for op := 0; op < nops; op++ {
		var got, want bool
		switch r := rng.Intn(12); {
		case r == 0:
			got, want = v.First(), m.first()
			trace = append(trace, "First")
		case r == 1:
			got, want = v.Last(), m.last()
			trace = append(trace, "Last")
		case r < 4:
			k := c.keys[rng.Intn(len(c.keys))]
			if rng.Intn(3) == 0 {
				k += string(rune('a' + rng.Intn(3)))
			}
			got, want = v.SeekGE([]byte(k)), m.seekGE(k)
			trace = append(trace, fmt.Sprintf("SeekGE(%q)", k))
		case r < 8:
			got, want = v.Next(), m.next()
			trace = append(trace, "Next")
		default:
			got, want = v.Prev(), m.prev()
			trace = append(trace, "Prev")
		}
		if got != want || v.Valid() != want {
			t.Fatalf("%s\nafter %v: valid %v/%v, want %v", c, trace, got, v.Valid(), want)
		}
		if want && (string(v.Key()) != m.keys[m.idx] || string(v.Value()) != m.values[m.idx]) {
			t.Fatalf("%s\nafter %v: got %q=%q, want %q=%q", c, trace, v.Key(), v.Value(), m.keys[m.idx], m.values[m.idx])
		}
		if err := v.Error(); err != nil {
			t.Fatalf("after %v: %v", trace, err)
		}
	}
}

func TestVisibleRandomAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	for round := 0; round < rounds; round++ {
		c := randomVisibleCase(rng)
		v := NewVisible(mergedScribbled(c.parts), c.seq, c.lower, c.upper)
		m := newVisibleModel(c.history, c.seq, c.lower, c.upper)
		runVisibleOps(t, rng, c, v, m, 100)
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVisibleWalks compares complete forward and backward walks, starting
// from First/Last and from a seek, with the model's key list.
func TestVisibleWalks(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for round := 0; round < 1000; round++ {
		c := randomVisibleCase(rng)
		m := newVisibleModel(c.history, c.seq, c.lower, c.upper)
		want := strings.Join(m.keys, ",")
		v := NewVisible(mergedScribbled(c.parts), c.seq, c.lower, c.upper)
		var fwd, bwd []string
		for ok := v.First(); ok; ok = v.Next() {
			fwd = append(fwd, string(v.Key()))
		}
		for ok := v.Last(); ok; ok = v.Prev() {
			bwd = append([]string{string(v.Key())}, bwd...)
		}
		if strings.Join(fwd, ",") != want || strings.Join(bwd, ",") != want {
			t.Fatalf("%s\nforward %q\nbackward %q\nwant %q", c, fwd, bwd, m.keys)
		}
		_ = v.Close()
	}
}

// TestVisiblePrevFindsNewest pins the classic backward bug: walking
// backwards the newest visible version of a key is met last.
func TestVisiblePrevFindsNewest(t *testing.T) {
	h := []entry{
		{ukey: "a", seq: 1, kind: base.KindSet, value: "a1"},
		{ukey: "b", seq: 2, kind: base.KindSet, value: "b2"},
		{ukey: "b", seq: 3, kind: base.KindSet, value: "b3"},
		{ukey: "b", seq: 4, kind: base.KindDelete},
		{ukey: "b", seq: 5, kind: base.KindSet, value: "b5"},
		{ukey: "c", seq: 6, kind: base.KindSet, value: "c6"},
		{ukey: "c", seq: 7, kind: base.KindDelete},
	}
	cases := []struct {
		seq  uint64
		want string // backward walk
	}{
		{seq: 7, want: "b=b5 a=a1"},
		{seq: 6, want: "c=c6 b=b5 a=a1"},
		{seq: 4, want: "a=a1"},
		{seq: 3, want: "b=b3 a=a1"},
		{seq: 2, want: "b=b2 a=a1"},
		{seq: 0, want: ""},
	}
	for _, tc := range cases {
		v := NewVisible(sliceIterOf(h), tc.seq, nil, nil)
		var got []string
		for ok := v.Last(); ok; ok = v.Prev() {
			got = append(got, fmt.Sprintf("%s=%s", v.Key(), v.Value()))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("seq %d: backward walk %q, want %q", tc.seq, strings.Join(got, " "), tc.want)
		}
	}
}

func TestVisibleBounds(t *testing.T) {
	var h []entry
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		h = append(h, entry{ukey: k, seq: uint64(i + 1), kind: base.KindSet, value: k})
	}
	v := NewVisible(sliceIterOf(h), base.MaxSeq, []byte("b"), []byte("d"))
	check := func(what string, ok bool, want string) {
		t.Helper()
		got := ""
		if ok {
			got = string(v.Key())
		}
		if got != want {
			t.Fatalf("%s: got %q, want %q", what, got, want)
		}
	}
	check("First", v.First(), "b")
	check("Last", v.Last(), "c")
	check("SeekGE(a)", v.SeekGE([]byte("a")), "b")
	check("SeekGE(bb)", v.SeekGE([]byte("bb")), "c")
	check("SeekGE(d)", v.SeekGE([]byte("d")), "")
	check("Prev after end", v.Prev(), "c")
	check("Next", v.Next(), "")
	check("Next at end", v.Next(), "")
	check("Prev", v.Prev(), "c")
	check("Prev", v.Prev(), "b")
	check("Prev", v.Prev(), "")
	check("Prev at start", v.Prev(), "")
	check("Next after start", v.Next(), "b")

	empty := NewVisible(sliceIterOf(h), base.MaxSeq, []byte("c"), []byte("c"))
	if empty.First() || empty.Last() || empty.SeekGE([]byte("a")) {
		t.Fatal("empty range shows a key")
	}
	// Bounds are copied: changing the caller's slice changes nothing.
	lo := []byte("c")
	v2 := NewVisible(sliceIterOf(h), base.MaxSeq, lo, nil)
	lo[0] = 'a'
	check2 := v2.First()
	if !check2 || string(v2.Key()) != "c" {
		t.Fatalf("bound not copied: %q", v2.Key())
	}
}

func TestVisibleUnpositioned(t *testing.T) {
	v := NewVisible(sliceIterOf([]entry{{ukey: "a", seq: 1, kind: base.KindSet}}), base.MaxSeq, nil, nil)
	if v.Valid() || v.Next() || v.Prev() {
		t.Fatal("fresh iterator moved")
	}
}

// TestVisibleKeyStableUntilMove checks that Key and Value do not change while
// other iterators (sharing nothing) move, and are copies where they must be:
// every child here scribbles over its slices when it moves.
func TestVisibleKeyStableUntilMove(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for round := 0; round < 300; round++ {
		c := randomVisibleCase(rng)
		v := NewVisible(mergedScribbled(c.parts), c.seq, c.lower, c.upper)
		for ok := v.Last(); ok; ok = v.Prev() {
			k, val := string(v.Key()), string(v.Value())
			if v.Valid() && (string(v.Key()) != k || string(v.Value()) != val) {
				t.Fatal("key changed without a move")
			}
			if strings.Contains(k, "\xee\xee") || strings.Contains(val, "\xee\xee") {
				t.Fatalf("read scribbled bytes %q=%q", k, val)
			}
		}
	}
}

func TestVisibleInnerError(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	for round := 0; round < 30; round++ {
		c := randomVisibleCase(rng)
		for failAt := 0; failAt < 200; failAt++ {
			f := &failIter{InternalIterator: mergedScribbled(c.parts), failAt: failAt}
			v := NewVisible(f, c.seq, c.lower, c.upper)
			m := newVisibleModel(c.history, c.seq, c.lower, c.upper)
			orng := rand.New(rand.NewSource(int64(round)))
			for op := 0; op < 40; op++ {
				var got, want bool
				switch orng.Intn(4) {
				case 0:
					got, want = v.First(), m.first()
				case 1:
					got, want = v.Last(), m.last()
				case 2:
					got, want = v.Next(), m.next()
				default:
					got, want = v.Prev(), m.prev()
				}
				if f.err != nil {
					if got || v.Valid() || !errors.Is(v.Error(), errInjected) {
						t.Fatalf("after inner failure: valid=%v err=%v", got, v.Error())
					}
					if v.First() || v.Next() || v.Prev() || v.Last() || v.SeekGE([]byte("a")) {
						t.Fatal("failed iterator moved")
					}
					break
				}
				if got != want || (want && string(v.Key()) != m.keys[m.idx]) {
					t.Fatalf("before failure: valid %v want %v", got, want)
				}
			}
			if err := v.Close(); err != nil || !f.closed {
				t.Fatalf("Close: %v, closed=%v", err, f.closed)
			}
			if f.err == nil {
				break
			}
		}
	}
}

func TestVisibleMalformedKey(t *testing.T) {
	keys := [][]byte{[]byte("abc")} // shorter than a trailer
	v := NewVisible(NewSliceIter(keys, [][]byte{nil}), base.MaxSeq, nil, nil)
	if v.First() || !errors.Is(v.Error(), base.ErrCorruption) ||
		!strings.HasPrefix(v.Error().Error(), "bloomkv/iterator: ") {
		t.Fatalf("malformed key: err=%v", v.Error())
	}
	bad := base.MakeInternalKey([]byte("k"), 3, base.KindSeek) // never stored
	v = NewVisible(NewSliceIter([][]byte{bad}, [][]byte{nil}), base.MaxSeq, nil, nil)
	if v.Last() || !errors.Is(v.Error(), base.ErrCorruption) {
		t.Fatalf("seek kind stored: err=%v", v.Error())
	}
}

func TestVisibleClose(t *testing.T) {
	s := sliceIterOf([]entry{{ukey: "a", seq: 1, kind: base.KindSet}})
	v := NewVisible(s, base.MaxSeq, nil, nil)
	if !v.First() {
		t.Fatal("First")
	}
	if err := v.Close(); err != nil || !s.Closed() {
		t.Fatal("Close did not close inner")
	}
	if v.Valid() || v.First() || v.Next() || v.Close() != nil {
		t.Fatal("closed iterator moved")
	}
}
