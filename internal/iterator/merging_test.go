package iterator

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// mergeModel is the reference for a merging iterator: all entries in the
// total order (internal key, child index) and a cursor into them.
type mergeModel struct {
	keys   [][]byte
	values [][]byte
	idx    int // valid iff 0 <= idx < len(keys)
	valid  bool
}

type childEntry struct {
	ikey, value []byte
	child       int
}

func newMergeModel(parts [][]childEntry) *mergeModel {
	var all []childEntry
	for _, p := range parts {
		all = append(all, p...)
	}
	sort.Slice(all, func(i, j int) bool {
		if c := base.CompareInternal(all[i].ikey, all[j].ikey); c != 0 {
			return c < 0
		}
		return all[i].child < all[j].child
	})
	m := &mergeModel{}
	for _, e := range all {
		m.keys = append(m.keys, e.ikey)
		m.values = append(m.values, e.value)
	}
	return m
}

func (m *mergeModel) set(i int) bool {
	m.idx, m.valid = i, i >= 0 && i < len(m.keys)
	return m.valid
}

func (m *mergeModel) seekGE(k []byte) bool {
	return m.set(sort.Search(len(m.keys), func(i int) bool { return base.CompareInternal(m.keys[i], k) >= 0 }))
}

func (m *mergeModel) seekLT(k []byte) bool {
	return m.set(sort.Search(len(m.keys), func(i int) bool { return base.CompareInternal(m.keys[i], k) >= 0 }) - 1)
}

func (m *mergeModel) next() bool { return m.valid && m.set(m.idx+1) }
func (m *mergeModel) prev() bool { return m.valid && m.set(m.idx-1) }

// buildChildren turns per-child entries into scribbling SliceIters.
func buildChildren(parts [][]childEntry) []base.InternalIterator {
	its := make([]base.InternalIterator, len(parts))
	for i, p := range parts {
		sort.Slice(p, func(a, b int) bool { return base.CompareInternal(p[a].ikey, p[b].ikey) < 0 })
		var ks, vs [][]byte
		for _, e := range p {
			ks, vs = append(ks, e.ikey), append(vs, e.value)
		}
		its[i] = scribble(NewSliceIter(ks, vs))
	}
	return its
}

// randomMergeInput makes entries for n children. With ties, the same
// internal key may appear in several children (never twice in one child).
func randomMergeInput(rng *rand.Rand, n int, ties bool) ([][]childEntry, []string) {
	keys := randomUserKeys(rng, 1+rng.Intn(12))
	parts := make([][]childEntry, n)
	used := map[string]bool{}
	total := rng.Intn(80)
	for i := 0; i < total; i++ {
		seq := uint64(1 + rng.Intn(40))
		kind := base.Kind(rng.Intn(2))
		ik := base.MakeInternalKey([]byte(keys[rng.Intn(len(keys))]), seq, kind)
		c := rng.Intn(n)
		id := fmt.Sprintf("%d/%x", c, ik)
		if used[id] || (!ties && used[string(ik)]) {
			continue
		}
		used[id], used[string(ik)] = true, true
		parts[c] = append(parts[c], childEntry{ikey: ik, value: fmt.Appendf(nil, "c%d-%d", c, i), child: c})
	}
	return parts, keys
}

func randomSeekKey(rng *rand.Rand, keys []string) []byte {
	uk := []byte(keys[rng.Intn(len(keys))])
	if rng.Intn(4) == 0 {
		uk = append(uk, byte(rng.Intn(256)))
	}
	kinds := []base.Kind{base.KindDelete, base.KindSet, base.KindSeek}
	return base.MakeInternalKey(uk, uint64(rng.Intn(42)), kinds[rng.Intn(3)])
}

func runMergeOps(t *testing.T, rng *rand.Rand, it base.InternalIterator, m *mergeModel, keys []string, nops int) {
	t.Helper()
	var trace []string
	for op := 0; op < nops; op++ {
		var got, want bool
		switch r := rng.Intn(10); {
		case r == 0:
			got, want = it.First(), m.set(0)
			trace = append(trace, "First")
		case r == 1:
			got, want = it.Last(), m.set(len(m.keys)-1)
			trace = append(trace, "Last")
		case r == 2:
			k := randomSeekKey(rng, keys)
			got, want = it.SeekGE(k), m.seekGE(k)
			trace = append(trace, "SeekGE("+base.FormatInternalKey(k)+")")
		case r == 3:
			k := randomSeekKey(rng, keys)
			got, want = it.SeekLT(k), m.seekLT(k)
			trace = append(trace, "SeekLT("+base.FormatInternalKey(k)+")")
		case r < 7:
			got, want = it.Next(), m.next()
			trace = append(trace, "Next")
		default:
			got, want = it.Prev(), m.prev()
			trace = append(trace, "Prev")
		}
		if got != want || it.Valid() != want {
			t.Fatalf("after %v: got valid=%v/%v, want %v", trace, got, it.Valid(), want)
		}
		if want && (!bytes.Equal(it.Key(), m.keys[m.idx]) || !bytes.Equal(it.Value(), m.values[m.idx])) {
			t.Fatalf("after %v: got %s=%q, want %s=%q", trace,
				base.FormatInternalKey(it.Key()), it.Value(),
				base.FormatInternalKey(m.keys[m.idx]), m.values[m.idx])
		}
		if err := it.Error(); err != nil {
			t.Fatalf("after %v: unexpected error %v", trace, err)
		}
	}
}

func TestMergingRandomAgainstModel(t *testing.T) {
	for _, ties := range []bool{false, true} {
		t.Run(fmt.Sprintf("ties=%v", ties), func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			for round := 0; round < 400; round++ {
				n := 1 + rng.Intn(5)
				parts, keys := randomMergeInput(rng, n, ties)
				m := newMergeModel(parts)
				it := NewMerging(buildChildren(parts)...)
				runMergeOps(t, rng, it, m, keys, 150)
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestMergingFullWalks checks whole walks both ways, and that a backward walk
// is exactly the reverse of a forward one even with ties.
func TestMergingFullWalks(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for round := 0; round < 200; round++ {
		parts, _ := randomMergeInput(rng, 1+rng.Intn(6), true)
		m := newMergeModel(parts)
		it := NewMerging(buildChildren(parts)...)
		var fwd, bwd []string
		for ok := it.First(); ok; ok = it.Next() {
			fwd = append(fwd, fmt.Sprintf("%x=%s", it.Key(), it.Value()))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd = append(bwd, fmt.Sprintf("%x=%s", it.Key(), it.Value()))
		}
		if len(fwd) != len(m.keys) || len(bwd) != len(m.keys) {
			t.Fatalf("walk lengths %d/%d, want %d", len(fwd), len(bwd), len(m.keys))
		}
		for i := range fwd {
			want := fmt.Sprintf("%x=%s", m.keys[i], m.values[i])
			if fwd[i] != want || bwd[len(bwd)-1-i] != want {
				t.Fatalf("entry %d: forward %s, backward %s, want %s", i, fwd[i], bwd[len(bwd)-1-i], want)
			}
		}
	}
}

func TestMergingTieOrder(t *testing.T) {
	k := base.MakeInternalKey([]byte("k"), 5, base.KindSet)
	mk := func(v string) base.InternalIterator { return NewSliceIter([][]byte{k}, [][]byte{[]byte(v)}) }
	it := NewMerging(mk("newest"), mk("middle"), mk("oldest"))
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Value()))
	}
	if fmt.Sprint(got) != "[newest middle oldest]" {
		t.Fatalf("forward tie order %v", got)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Value()))
	}
	if fmt.Sprint(got) != "[oldest middle newest]" {
		t.Fatalf("backward tie order %v", got)
	}
}

func TestMergingEmpty(t *testing.T) {
	it := NewMerging()
	if it.First() || it.Last() || it.SeekGE([]byte("a\x00\x00\x00\x00\x00\x00\x00\x00")) || it.Next() || it.Prev() || it.Valid() {
		t.Fatal("empty merge is valid")
	}
	it = NewMerging(NewSliceIter(nil, nil), NewSliceIter(nil, nil))
	if it.First() || it.Last() || it.Valid() || it.Error() != nil {
		t.Fatal("merge of empty children is valid")
	}
}

// TestMergingChildErrors fails one child at its Nth call, for every N until
// the run completes without reaching it, and checks that the merge stops with
// that error and was right about every entry before it.
func TestMergingChildErrors(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 40; round++ {
		parts, keys := randomMergeInput(rng, 2+rng.Intn(3), false)
		victim := rng.Intn(len(parts))
		opSeed := rng.Int63()
		for failAt := 0; ; failAt++ {
			children := buildChildren(parts)
			f := &failIter{InternalIterator: children[victim], failAt: failAt}
			children[victim] = f
			it := NewMerging(children...)
			m := newMergeModel(parts)
			orng := rand.New(rand.NewSource(opSeed))
			failed := false
			for op := 0; op < 60 && !failed; op++ {
				var got, want bool
				switch orng.Intn(6) {
				case 0:
					got, want = it.First(), m.set(0)
				case 1:
					got, want = it.Last(), m.set(len(m.keys)-1)
				case 2:
					k := randomSeekKey(orng, keys)
					got, want = it.SeekGE(k), m.seekGE(k)
				case 3:
					k := randomSeekKey(orng, keys)
					got, want = it.SeekLT(k), m.seekLT(k)
				case 4:
					got, want = it.Next(), m.next()
				default:
					got, want = it.Prev(), m.prev()
				}
				if f.err != nil {
					failed = true
					if got || it.Valid() || !errors.Is(it.Error(), errInjected) {
						t.Fatalf("failAt=%d: after child failure valid=%v err=%v", failAt, got, it.Error())
					}
					break
				}
				if got != want || (want && !bytes.Equal(it.Key(), m.keys[m.idx])) {
					t.Fatalf("failAt=%d op %d: valid %v want %v", failAt, op, got, want)
				}
			}
			if failed {
				// A failed merge stays failed until repositioned.
				if it.Next() || it.Prev() {
					t.Fatal("failed merge moved")
				}
			}
			if err := it.Close(); err != nil || !f.closed {
				t.Fatalf("Close: err=%v closed=%v", err, f.closed)
			}
			if !failed {
				break
			}
		}
	}
}

func TestMergingCloseClosesAll(t *testing.T) {
	a, b := NewSliceIter(nil, nil), NewSliceIter(nil, nil)
	errClose := errors.New("close failed")
	c := &failIter{InternalIterator: NewSliceIter(nil, nil), failAt: 1 << 30, closeErr: errClose}
	it := NewMerging(a, c, b)
	if err := it.Close(); !errors.Is(err, errClose) {
		t.Fatalf("Close error %v, want %v", err, errClose)
	}
	if !a.Closed() || !b.Closed() || !c.closed {
		t.Fatal("a child was not closed")
	}
}
