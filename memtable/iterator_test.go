package memtable

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// refIter mirrors the iterator's documented positioning semantics on a
// sorted slice: pos is -1 before the first entry, len(r) after the last.
type refIter struct {
	r          refTable
	pos        int
	positioned bool
}

func (ri *refIter) valid() bool { return ri.pos >= 0 && ri.pos < len(ri.r) }

func (ri *refIter) next() bool {
	if !ri.positioned {
		ri.pos, ri.positioned = 0, true
	} else {
		ri.pos = min(ri.pos+1, len(ri.r))
	}
	return ri.valid()
}

func (ri *refIter) prev() bool {
	if !ri.positioned {
		ri.pos, ri.positioned = len(ri.r)-1, true
	} else {
		ri.pos = max(ri.pos-1, -1)
	}
	return ri.valid()
}

func (ri *refIter) set(pos int) bool {
	ri.pos, ri.positioned = pos, true
	return ri.valid()
}

// TestIteratorRandomWalk drives the iterator and the reference with the
// same random mix of seeks and long runs of Next/Prev (long enough to force
// window refills and growth) and compares every step.
func TestIteratorRandomWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ n, nkeys int }{{0, 1}, {1, 1}, {2, 2}, {15, 5}, {17, 40}, {700, 100}, {3000, 1000}} {
		ref := randomEntries(rng, tc.n, tc.nkeys)
		want := ref.sorted()
		m := fill(ref)
		it := m.NewIter()
		ri := &refIter{r: want}
		var trace []string
		for step := 0; step < 3000; step++ {
			var got, exp bool
			switch op := rng.IntN(12); {
			case op == 0:
				trace = append(trace, "First")
				got, exp = it.First(), ri.set(0)
			case op == 1:
				trace = append(trace, "Last")
				got, exp = it.Last(), ri.set(len(want)-1)
			case op == 2:
				k := randomSeekKey(rng, want, tc.nkeys)
				trace = append(trace, "SeekGE "+kv.FormatInternalKey(k))
				got, exp = it.SeekGE(k), ri.set(want.seekGE(k))
			case op == 3:
				k := randomSeekKey(rng, want, tc.nkeys)
				trace = append(trace, "SeekLT "+kv.FormatInternalKey(k))
				got, exp = it.SeekLT(k), ri.set(want.seekLT(k))
			default:
				// A run of steps in one direction, sometimes long.
				run := 1 + rng.IntN(4)
				if rng.IntN(4) == 0 {
					run = 1 + rng.IntN(600)
				}
				fwd := op%2 == 0
				for range run {
					if fwd {
						got, exp = it.Next(), ri.next()
					} else {
						got, exp = it.Prev(), ri.prev()
					}
					if got != exp {
						break
					}
					if got {
						checkAt(t, it, want, ri.pos)
					}
				}
				trace = append(trace, map[bool]string{true: "Next", false: "Prev"}[fwd]+" x"+strconv.Itoa(run))
			}
			if got != exp || it.Valid() != exp {
				t.Fatalf("n=%d: after %v: valid=%v/%v, reference %v (pos %d)", tc.n, last(trace, 6), got, it.Valid(), exp, ri.pos)
			}
			if got {
				checkAt(t, it, want, ri.pos)
			}
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		it.Close()
	}
}

func last(s []string, n int) []string { return s[max(0, len(s)-n):] }

func TestIteratorUnpositionedActsAsFirstOrLast(t *testing.T) {
	m := fill(refTable{
		{kv.MakeInternalKey([]byte("a"), 1, kv.KindSet), []byte("1")},
		{kv.MakeInternalKey([]byte("b"), 2, kv.KindSet), []byte("2")},
	})
	it := m.NewIter()
	if !it.Next() || string(kv.UserKey(it.Key())) != "a" {
		t.Fatal("Next on a fresh iterator did not land on the first entry")
	}
	it = m.NewIter()
	if !it.Prev() || string(kv.UserKey(it.Key())) != "b" {
		t.Fatal("Prev on a fresh iterator did not land on the last entry")
	}
	it = m.NewIter()
	if it.Valid() {
		t.Fatal("fresh iterator is valid")
	}
}

func TestIteratorEmptyTable(t *testing.T) {
	it := New().NewIter()
	defer it.Close()
	seek := kv.MakeSearchKey([]byte("k"), kv.MaxSeq)
	for name, f := range map[string]func() bool{
		"First": it.First, "Last": it.Last, "Next": it.Next, "Prev": it.Prev,
		"SeekGE": func() bool { return it.SeekGE(seek) }, "SeekLT": func() bool { return it.SeekLT(seek) },
	} {
		if f() || it.Valid() {
			t.Errorf("%s on an empty table is valid", name)
		}
	}
}

func TestIteratorSeesPointInTimeView(t *testing.T) {
	m := New()
	for i := range 1000 {
		m.Add(uint64(i+1), kv.KindSet, []byte{byte(i >> 8), byte(i)}, []byte("before"))
	}
	it := m.NewIter()
	defer it.Close()
	// Later writes: new keys interleaved with the old ones, and newer
	// versions of existing keys. The iterator must not see any of them.
	for i := range 1000 {
		m.Add(uint64(2000+i), kv.KindSet, []byte{byte(i >> 8), byte(i), 0}, []byte("after"))
		m.Add(uint64(4000+i), kv.KindDelete, []byte{byte(i >> 8), byte(i)}, nil)
	}
	n := 0
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		if string(it.Value()) != "before" {
			t.Fatalf("iterator saw a later write %s", kv.FormatInternalKey(it.Key()))
		}
		if prev != nil && kv.CompareInternal(prev, it.Key()) >= 0 {
			t.Fatalf("out of order: %s then %s", kv.FormatInternalKey(prev), kv.FormatInternalKey(it.Key()))
		}
		prev = it.Key()
		n++
	}
	if n != 1000 {
		t.Fatalf("old iterator saw %d entries, want 1000", n)
	}
	it2 := m.NewIter()
	defer it2.Close()
	n = 0
	for ok := it2.First(); ok; ok = it2.Next() {
		n++
	}
	if n != 3000 {
		t.Fatalf("new iterator saw %d entries, want 3000", n)
	}
}

func TestIteratorRejectsMalformedSeekKey(t *testing.T) {
	m := fill(refTable{{kv.MakeInternalKey([]byte("a"), 1, kv.KindSet), nil}})
	it := m.NewIter()
	if it.SeekGE([]byte("short")) || it.Valid() || it.Error() == nil {
		t.Fatal("SeekGE with a 5-byte key did not fail")
	}
	if it.Next() {
		t.Fatal("Next after an error moved")
	}
	if !it.First() || it.Error() != nil {
		t.Fatal("First did not clear the error")
	}
	if it.SeekLT(nil) || it.Error() == nil {
		t.Fatal("SeekLT(nil) did not fail")
	}
}

func TestIteratorAfterClose(t *testing.T) {
	m := fill(refTable{{kv.MakeInternalKey([]byte("a"), 1, kv.KindSet), nil}})
	it := m.NewIter()
	it.First()
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if it.First() || it.Next() || it.Prev() || it.Valid() || it.Error() == nil || it.Key() != nil || it.Value() != nil {
		t.Fatal("closed iterator moved or reported no error")
	}
}

func TestIteratorKeysStayStable(t *testing.T) {
	m := New()
	m.Add(1, kv.KindSet, []byte("a"), []byte("va"))
	it := m.NewIter()
	it.First()
	k, v := it.Key(), it.Value()
	for i := range 5000 { // force node splits and copy-on-write copies
		m.Add(uint64(i+2), kv.KindSet, []byte{'a', byte(i), byte(i >> 8)}, []byte("x"))
	}
	it.Next()
	if !bytes.Equal(k, kv.MakeInternalKey([]byte("a"), 1, kv.KindSet)) || string(v) != "va" {
		t.Fatalf("key/value changed under the iterator: %s=%q", kv.FormatInternalKey(k), v)
	}
}
