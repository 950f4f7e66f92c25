package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

func TestOrderMatchesSortedReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, nkeys int }{{0, 1}, {1, 1}, {50, 3}, {3000, 200}, {5000, 5000}} {
		t.Run(fmt.Sprintf("n=%d/keys=%d", tc.n, tc.nkeys), func(t *testing.T) {
			ref := randomEntries(rng, tc.n, tc.nkeys)
			m := fill(ref)
			want := ref.sorted()

			if m.Len() != tc.n || m.Empty() != (tc.n == 0) {
				t.Fatalf("Len=%d Empty=%v, want %d entries", m.Len(), m.Empty(), tc.n)
			}
			var wantSize int64
			for _, e := range want {
				wantSize += int64(len(e.ikey) + len(e.value) + EntryOverhead)
			}
			if got := m.ApproximateSize(); got != wantSize {
				t.Fatalf("ApproximateSize=%d, want %d", got, wantSize)
			}

			it := m.NewIter()
			defer it.Close()
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				checkAt(t, it, want, i)
				i++
			}
			if i != len(want) {
				t.Fatalf("forward scan saw %d entries, want %d", i, len(want))
			}
			i = len(want) - 1
			for ok := it.Last(); ok; ok = it.Prev() {
				checkAt(t, it, want, i)
				i--
			}
			if i != -1 {
				t.Fatalf("backward scan stopped at %d, want -1", i)
			}
			if err := it.Error(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkAt fails unless it is positioned on want[i].
func checkAt(t *testing.T, it kv.Iterator, want refTable, i int) {
	t.Helper()
	if !it.Valid() {
		t.Fatalf("iterator invalid, want entry %d %s", i, kv.FormatInternalKey(want[i].ikey))
	}
	if !bytes.Equal(it.Key(), want[i].ikey) || !bytes.Equal(it.Value(), want[i].value) {
		t.Fatalf("entry %d: got %s=%q, want %s=%q", i,
			kv.FormatInternalKey(it.Key()), it.Value(), kv.FormatInternalKey(want[i].ikey), want[i].value)
	}
}

func TestGetAtVariousSeqs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, nkeys = 4000, 300
	ref := randomEntries(rng, n, nkeys)
	m := fill(ref)
	want := ref.sorted()
	// Index the reference by user key: versions newest first.
	versions := map[string]refTable{}
	for _, e := range want {
		versions[string(kv.UserKey(e.ikey))] = append(versions[string(kv.UserKey(e.ikey))], e)
	}
	seqs := []uint64{0, 1, 2, n / 2, n - 1, n, n + 1, kv.MaxSeq, kv.MaxSeq + 1, ^uint64(0)}
	for range 20000 {
		ukey := fmt.Appendf(nil, "key%05d", rng.IntN(nkeys+20))
		if rng.IntN(10) == 0 {
			ukey = ukey[:rng.IntN(len(ukey)+1)]
		}
		seq := uint64(rng.IntN(n + 2))
		if rng.IntN(10) == 0 {
			seq = seqs[rng.IntN(len(seqs))]
		}
		v, k, ok := m.Get(ukey, seq)
		wv, wk, wok := versions[string(ukey)].get(ukey, min(seq, kv.MaxSeq))
		if ok != wok || k != wk || !bytes.Equal(v, wv) {
			t.Fatalf("Get(%q, %d) = %q,%v,%v; want %q,%v,%v", ukey, seq, v, k, ok, wv, wk, wok)
		}
		if ok && cap(v) != len(v) {
			t.Fatalf("Get(%q) value has spare capacity %d > %d: appends would clobber memory", ukey, cap(v), len(v))
		}
	}
}

func TestGetTombstoneAndShadowing(t *testing.T) {
	m := New()
	m.Add(10, kv.KindSet, []byte("a"), []byte("old"))
	m.Add(20, kv.KindDelete, []byte("a"), nil)
	m.Add(30, kv.KindSet, []byte("a"), []byte("new"))
	m.Add(5, kv.KindSet, []byte("ab"), []byte("other"))
	for _, tc := range []struct {
		seq   uint64
		value string
		kind  kv.Kind
		found bool
	}{
		{9, "", 0, false},
		{10, "old", kv.KindSet, true},
		{19, "old", kv.KindSet, true},
		{20, "", kv.KindDelete, true},
		{29, "", kv.KindDelete, true},
		{30, "new", kv.KindSet, true},
		{kv.MaxSeq, "new", kv.KindSet, true},
	} {
		v, k, ok := m.Get([]byte("a"), tc.seq)
		if string(v) != tc.value || k != tc.kind || ok != tc.found {
			t.Errorf("Get(a, %d) = %q,%v,%v; want %q,%v,%v", tc.seq, v, k, ok, tc.value, tc.kind, tc.found)
		}
	}
	if _, _, ok := m.Get([]byte(""), kv.MaxSeq); ok {
		t.Error("Get of the empty key found an entry")
	}
	if _, _, ok := m.Get([]byte("b"), kv.MaxSeq); ok {
		t.Error("Get(b) found an entry")
	}
}

func TestAddCopiesInputs(t *testing.T) {
	m := New()
	k, v := []byte("key"), []byte("value")
	m.Add(1, kv.KindSet, k, v)
	k[0], v[0] = 'X', 'X'
	got, _, ok := m.Get([]byte("key"), 1)
	if !ok || string(got) != "value" {
		t.Fatalf("Get after caller mutation = %q,%v; want value", got, ok)
	}
	// Appending to a returned slice must not reach the neighbouring bytes.
	_ = append(got, "junk"...)
	it := m.NewIter()
	defer it.Close()
	it.First()
	_ = append(it.Key(), "junk"...)
	if got, _, _ := m.Get([]byte("key"), 1); string(got) != "value" {
		t.Fatalf("value changed to %q after appends to returned slices", got)
	}
	if want := kv.MakeInternalKey([]byte("key"), 1, kv.KindSet); !bytes.Equal(it.Key(), want) {
		t.Fatalf("key %s, want %s", kv.FormatInternalKey(it.Key()), kv.FormatInternalKey(want))
	}
}

func TestAddSameKeyReplacesAndKeepsSize(t *testing.T) {
	m := New()
	m.Add(7, kv.KindSet, []byte("k"), []byte("first"))
	m.Add(7, kv.KindSet, []byte("k"), []byte("second!"))
	if m.Len() != 1 {
		t.Fatalf("Len = %d, want 1", m.Len())
	}
	if want := int64(1 + 8 + len("second!") + EntryOverhead); m.ApproximateSize() != want {
		t.Fatalf("ApproximateSize = %d, want %d", m.ApproximateSize(), want)
	}
	if v, _, _ := m.Get([]byte("k"), 7); string(v) != "second!" {
		t.Fatalf("Get = %q, want second!", v)
	}
}

func TestAddRejectsInvalidInput(t *testing.T) {
	for name, add := range map[string]func(m *Memtable){
		"seq":  func(m *Memtable) { m.Add(kv.MaxSeq+1, kv.KindSet, []byte("k"), nil) },
		"kind": func(m *Memtable) { m.Add(1, kv.KindSeek, []byte("k"), nil) },
	} {
		t.Run(name, func(t *testing.T) {
			m := New()
			defer func() {
				if recover() == nil {
					t.Fatal("Add did not panic")
				}
				if !m.Empty() {
					t.Fatal("rejected entry was stored")
				}
			}()
			add(m)
		})
	}
}

// TestCompareEntriesMatchesCompareInternal checks the integer key prefix
// shortcut against the reference comparator, on keys built from a tiny
// alphabet with zero bytes so that prefixes, padding and ties are common.
func TestCompareEntriesMatchesCompareInternal(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	alphabet := []byte{0, 1, 0x7f, 0x80, 0xff}
	randKey := func() []byte {
		k := make([]byte, rng.IntN(13))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	for range 200000 {
		ka, kb := randKey(), randKey()
		sa, sb := uint64(rng.IntN(3)), uint64(rng.IntN(3))
		ia, ib := kv.MakeInternalKey(ka, sa, kv.KindSet), kv.MakeInternalKey(kb, sb, kv.KindSet)
		ea, eb := newEntry(sa, kv.KindSet, ka, nil), pivot(kb, kv.Trailer(ib))
		if got, want := compareEntries(ea, eb), kv.CompareInternal(ia, ib); got != want {
			t.Fatalf("compareEntries(%s, %s) = %d, want %d", kv.FormatInternalKey(ia), kv.FormatInternalKey(ib), got, want)
		}
	}
}

// TestMemtableFilter: with a filter, Get of an absent key answers without a
// search, present keys are always found, and MayContainPrefix never denies
// a prefix of a key added; concurrent readers see every key whose Add
// finished (run under -race).
func TestMemtableFilter(t *testing.T) {
	rowOf := func(k []byte) []byte { return k[:4] }
	m := NewWithFilter(64<<10, rowOf)
	for i := range 2000 {
		m.Add(uint64(i+1), kv.KindSet, fmt.Appendf(nil, "r%03d-c%d", i/10*2, i%10), []byte("v"))
	}
	falsePos := 0
	for i := range 2000 {
		if _, _, found := m.Get(fmt.Appendf(nil, "r%03d-c%d", i/10*2, i%10), kv.MaxSeq); !found {
			t.Fatalf("present key %d not found", i)
		}
		if _, _, found := m.Get(fmt.Appendf(nil, "r%03d-x%d", i/10*2, i%10), kv.MaxSeq); found {
			t.Fatalf("absent key %d found", i)
		}
		if !m.MayContainPrefix(fmt.Appendf(nil, "r%03d", i/10*2)) {
			t.Fatalf("row of key %d denied", i)
		}
		if m.MayContainPrefix(fmt.Appendf(nil, "s%03d", i)) {
			falsePos++
		}
	}
	if falsePos > 40 {
		t.Fatalf("%d of 2000 absent prefixes passed a 64 KiB filter", falsePos)
	}
	// A memtable without a filter answers "maybe" to every prefix.
	if !New().MayContainPrefix([]byte("x")) {
		t.Fatal("no filter, yet a prefix was denied")
	}
	// Concurrent readers and a writer.
	m = NewWithFilter(16<<10, nil)
	var added atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			m.Add(uint64(i+1), kv.KindSet, fmt.Appendf(nil, "k%05d", i), nil)
			added.Store(int64(i + 1))
		}
	}()
	for {
		n := added.Load()
		for i := int64(0); i < n; i += 97 {
			if _, _, found := m.Get(fmt.Appendf(nil, "k%05d", i), kv.MaxSeq); !found {
				t.Fatalf("key %d added, then not found", i)
			}
		}
		select {
		case <-done:
			return
		default:
		}
	}
}

// TestCodecCompareMatchesCompareInternal is
// TestCompareEntriesMatchesCompareInternal for trees with a common prefix
// (keyCodec): entries and pivots made with one codec compare as their
// internal keys do, whether or not their keys start with the prefix, are
// shorter than it or extend it by zero bytes.
func TestCodecCompareMatchesCompareInternal(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	alphabet := []byte{0, 1, 0x7f, 0x80, 0xff}
	randBytes := func(n int) []byte {
		k := make([]byte, n)
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	for range 2000 {
		c := &keyCodec{common: randBytes(1 + rng.IntN(6))}
		randKey := func() []byte {
			switch rng.IntN(4) {
			case 0:
				return randBytes(rng.IntN(13))
			case 1:
				return bytes.Clone(c.common[:rng.IntN(len(c.common)+1)])
			default:
				return append(bytes.Clone(c.common), randBytes(rng.IntN(12))...)
			}
		}
		for range 100 {
			ka, kb := randKey(), randKey()
			sa, sb := uint64(rng.IntN(3)), uint64(rng.IntN(3))
			ia, ib := kv.MakeInternalKey(ka, sa, kv.KindSet), kv.MakeInternalKey(kb, sb, kv.KindSet)
			ea := newEntry(sa, kv.KindSet, ka, nil)
			ea.prefix = c.prefix(ka)
			eb := c.pivot(kb, kv.Trailer(ib))
			want := kv.CompareInternal(ia, ib)
			if got := compareEntries(ea, eb); got != want {
				t.Fatalf("common %q: compareEntries(%s, %s) = %d, want %d", c.common, kv.FormatInternalKey(ia), kv.FormatInternalKey(ib), got, want)
			}
			if got := lessEntries(ea, eb); got != (want < 0) {
				t.Fatalf("common %q: lessEntries(%s, %s) = %v, want %v", c.common, kv.FormatInternalKey(ia), kv.FormatInternalKey(ib), got, want < 0)
			}
		}
	}
}

// TestTunedCodec: a memtable of keys that share a long prefix, with a few
// bookkeeping keys before and after them (as the server's state database
// holds), chooses that prefix once it reaches tuneAt entries and still
// finds every version, iterates in order and seeks to keys inside and
// outside the prefix as the sorted reference does; an iterator opened
// before the codec changed keeps working on its own view.
func TestTunedCodec(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var ref refTable
	m := New()
	var early kv.Iterator
	for i := range 3 * tuneAt {
		var ukey []byte
		switch {
		case i%20 == 0:
			ukey = []byte("\x00a")
		case i%50 == 1:
			ukey = []byte("\x02z")
		default:
			ukey = fmt.Appendf(nil, "\x01key:%012d", rng.IntN(5000))
		}
		value := fmt.Appendf(nil, "v%d", i)
		m.Add(uint64(i+1), kv.KindSet, ukey, value)
		ref = append(ref, refEntry{ikey: kv.MakeInternalKey(ukey, uint64(i+1), kv.KindSet), value: value})
		if i == tuneAt-2 {
			early = m.NewIter()
		}
	}
	if m.mu.codec == nil || string(m.mu.codec.common) != "\x01key:00000000" {
		t.Fatalf("codec %+v, want common prefix %q (numbers below 5000)", m.mu.codec, "\x01key:00000000")
	}
	defer early.Close()
	n := 0
	for ok := early.First(); ok; ok = early.Next() {
		n++
	}
	if n != tuneAt-1 {
		t.Fatalf("iterator opened before tuning saw %d entries, want %d", n, tuneAt-1)
	}
	want := ref.sorted()
	it := m.NewIter()
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), want[i].ikey) {
			t.Fatalf("entry %d: %s, want %s", i, kv.FormatInternalKey(it.Key()), kv.FormatInternalKey(want[i].ikey))
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("iterated %d entries, want %d", i, len(want))
	}
	probes := [][]byte{nil, []byte("\x00"), []byte("\x00a"), []byte("\x00b"), []byte("\x01"), []byte("\x01key:"),
		[]byte("\x01key:0000000"), []byte("\x01key:00000000"), []byte("\x01key:0000000\x00"), []byte("\x01key:1"),
		[]byte("\x02"), []byte("\x02z"), []byte("\x03")}
	for range 300 {
		probes = append(probes, fmt.Appendf(nil, "\x01key:%012d", rng.IntN(5001)))
	}
	for _, p := range probes {
		for _, seq := range []uint64{1, uint64(tuneAt), kv.MaxSeq} {
			gv, gk, gf := m.Get(p, seq)
			rv, rk, rf := want.get(p, seq)
			if gf != rf || gk != rk || !bytes.Equal(gv, rv) {
				t.Fatalf("Get(%q, %d) = %q %v %v, want %q %v %v", p, seq, gv, gk, gf, rv, rk, rf)
			}
			ikey := kv.MakeInternalKey(p, seq, kv.KindSeek)
			if j := want.seekGE(ikey); it.SeekGE(ikey) != (j < len(want)) || (j < len(want) && !bytes.Equal(it.Key(), want[j].ikey)) {
				t.Fatalf("SeekGE(%s) at %s, want index %d", kv.FormatInternalKey(ikey), kv.FormatInternalKey(it.Key()), j)
			}
			if j := want.seekLT(ikey); it.SeekLT(ikey) != (j >= 0) || (j >= 0 && !bytes.Equal(it.Key(), want[j].ikey)) {
				t.Fatalf("SeekLT(%s) at %s, want index %d", kv.FormatInternalKey(ikey), kv.FormatInternalKey(it.Key()), j)
			}
		}
	}
}
