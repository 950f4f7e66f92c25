package sstable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// tableOptionMatrix covers compression, filters and block sizes.
func tableOptionMatrix() []WriterOptions {
	var out []WriterOptions
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		for _, bits := range []int{0, 10} {
			for _, bs := range []int{64, 4096} {
				out = append(out, WriterOptions{BlockSize: bs, RestartInterval: 1 + bs%7, Compression: c, BloomBitsPerKey: bits})
			}
		}
	}
	return out
}

// TestTableRoundTrip writes random tables through vfs.Default and checks
// Get at many sequence numbers and every iterator operation against the
// reference entries, with and without a block cache.
func TestTableRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	for oi, o := range tableOptionMatrix() {
		es := randomEntries(rng, testScale(1000), 4)
		fileNum := uint64(oi + 1)
		m := writeTableFile(t, dir, fileNum, es, o)
		checkMeta(t, m, es, o)
		for _, cache := range []*BlockCache{nil, NewBlockCache(1 << 20)} {
			tc := NewTableCache(vfs.Default, dir, 4, ReaderOptions{Cache: cache})
			r, release, err := tc.Find(Identity{FileNum: fileNum, Size: int64(m.Size)})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Check(); err != nil {
				t.Fatalf("options %+v: Check: %v", o, err)
			}
			if _, ok := r.Filter(); ok != (o.BloomBitsPerKey > 0) {
				t.Fatalf("options %+v: has filter = %v", o, ok)
			}
			checkGets(t, rng, r, es)
			checkIterator(t, rng, r.NewIter(true), es)
			checkIterator(t, rng, r.NewIter(false), es)
			release()
			if err := tc.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func checkMeta(t *testing.T, m WriterMeta, es []refEntry, o WriterOptions) {
	t.Helper()
	if m.NumEntries != uint64(len(es)) || !bytes.Equal(m.Smallest, es[0].key) || !bytes.Equal(m.Largest, es[len(es)-1].key) {
		t.Fatalf("meta %d entries [%s, %s]", m.NumEntries, kv.FormatInternalKey(m.Smallest), kv.FormatInternalKey(m.Largest))
	}
	minSeq, maxSeq := kv.MaxSeq, uint64(0)
	for _, e := range es {
		_, s, _, _ := kv.ParseInternalKey(e.key)
		minSeq, maxSeq = min(minSeq, s), max(maxSeq, s)
	}
	if m.SmallestSeq != minSeq || m.LargestSeq != maxSeq {
		t.Fatalf("meta seqs [%d, %d], want [%d, %d]", m.SmallestSeq, m.LargestSeq, minSeq, maxSeq)
	}
	if o.BlockSize == 64 && m.Props.NumDataBlocks < 100 {
		t.Fatalf("64-byte blocks: only %d data blocks", m.Props.NumDataBlocks)
	}
}

// checkGets compares Get with the reference for every user key at
// sequence numbers around each of its versions, and for absent keys.
func checkGets(t *testing.T, rng *rand.Rand, r *Reader, es []refEntry) {
	t.Helper()
	var stats ReadStats
	for _, e := range es {
		uk, seq, _, _ := kv.ParseInternalKey(e.key)
		for _, s := range []uint64{seq - 1, seq, seq + 1, kv.MaxSeq} {
			for _, useFilter := range []bool{true, false} {
				v, k, found, err := r.Get(uk, s, useFilter, &stats)
				if err != nil {
					t.Fatal(err)
				}
				wv, wk, wfound := refGet(es, uk, s)
				if found != wfound || (found && (k != wk || !bytes.Equal(v, wv))) {
					t.Fatalf("Get(%q, %d, filter=%v) = %q,%v,%v; want %q,%v,%v", uk, s, useFilter, v, k, found, wv, wk, wfound)
				}
			}
		}
	}
	for range 2000 {
		k := randomSearchKey(rng, es)
		uk := kv.UserKey(k)
		v, kind, found, err := r.Get(uk, kv.MaxSeq, true, &stats)
		if err != nil {
			t.Fatal(err)
		}
		wv, wk, wfound := refGet(es, uk, kv.MaxSeq)
		if found != wfound || (found && (kind != wk || !bytes.Equal(v, wv))) {
			t.Fatalf("Get(%q) = %q,%v,%v; want %q,%v,%v", uk, v, kind, found, wv, wk, wfound)
		}
	}
}

// checkIterator compares full scans both ways and random seeks followed by
// random steps with the reference.
func checkIterator(t *testing.T, rng *rand.Rand, it kv.Iterator, es []refEntry) {
	t.Helper()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		checkIterAt(t, "forward scan", it, true, es, i)
		i++
	}
	if i != len(es) || it.Error() != nil {
		t.Fatalf("forward scan saw %d of %d (err %v)", i, len(es), it.Error())
	}
	i = len(es) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		checkIterAt(t, "backward scan", it, true, es, i)
		i--
	}
	if i != -1 {
		t.Fatalf("backward scan stopped at %d", i)
	}
	for range 500 {
		k := randomSearchKey(rng, es)
		var i int
		var ok bool
		if rng.IntN(2) == 0 {
			ok, i = it.SeekGE(k), refSeekGE(es, k)
			checkIterAt(t, label("SeekGE(%s)", kv.FormatInternalKey(k)), it, ok, es, i)
		} else {
			ok, i = it.SeekLT(k), refSeekGE(es, k)-1
			checkIterAt(t, label("SeekLT(%s)", kv.FormatInternalKey(k)), it, ok, es, i)
		}
		for s := 0; ok && s < 40; s++ {
			if rng.IntN(2) == 0 {
				ok, i = it.Next(), i+1
			} else {
				ok, i = it.Prev(), i-1
			}
			checkIterAt(t, "step", it, ok, es, i)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if it.First() || it.Error() == nil {
		t.Fatal("iterator usable after Close")
	}
}

// TestVersionsSpanBlocks puts hundreds of versions of one user key across
// many small blocks, between neighbours, and reads every version.
func TestVersionsSpanBlocks(t *testing.T) {
	var es []refEntry
	es = append(es, refEntry{kv.MakeInternalKey([]byte("a"), 1, kv.KindSet), []byte("a1")})
	const versions = 600
	for s := uint64(versions + 10); s > 10; s-- {
		kind := kv.KindSet
		if s%7 == 0 {
			kind = kv.KindDelete
		}
		es = append(es, refEntry{kv.MakeInternalKey([]byte("hot"), s, kind), []byte(label("v%d", s))})
	}
	es = append(es, refEntry{kv.MakeInternalKey([]byte("zz"), 5, kv.KindSet), []byte("z5")})
	for _, bs := range []int{32, 256} {
		data, m := buildTable(t, es, WriterOptions{BlockSize: bs, BloomBitsPerKey: 10})
		if m.Props.NumDataBlocks < 10 {
			t.Fatalf("only %d blocks", m.Props.NumDataBlocks)
		}
		r := mustOpenBytes(t, data, ReaderOptions{Cache: NewBlockCache(1 << 20)})
		for s := uint64(0); s <= versions+20; s++ {
			var stats ReadStats
			v, k, found, err := r.Get([]byte("hot"), s, true, &stats)
			if err != nil {
				t.Fatal(err)
			}
			wv, wk, wfound := refGet(es, []byte("hot"), s)
			if found != wfound || k != wk || !bytes.Equal(v, wv) {
				t.Fatalf("bs=%d Get(hot, %d) = %q,%v,%v; want %q,%v,%v", bs, s, v, k, found, wv, wk, wfound)
			}
			if s <= 10 && stats.FilterFalsePositives.Load() != 0 {
				t.Fatalf("a key with only newer versions counted as a false positive")
			}
		}
		checkIterator(t, rand.New(rand.NewPCG(1, uint64(bs))), r.NewIter(true), es)
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEmptyTable(t *testing.T) {
	for _, bits := range []int{0, 10} {
		data, m := buildTable(t, nil, WriterOptions{BloomBitsPerKey: bits})
		if m.Smallest != nil || m.Largest != nil || m.NumEntries != 0 {
			t.Fatalf("meta of empty table: %+v", m)
		}
		r := mustOpenBytes(t, data, ReaderOptions{})
		if _, _, found, err := r.Get([]byte("x"), kv.MaxSeq, false, nil); found || err != nil {
			t.Fatalf("Get on empty table: %v %v", found, err)
		}
		it := r.NewIter(true)
		if it.First() || it.Last() || it.SeekGE(kv.MakeSearchKey([]byte("a"), 1)) || it.SeekLT(kv.MakeSearchKey([]byte("a"), 1)) {
			t.Fatal("empty table iterator found an entry")
		}
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriterRejects(t *testing.T) {
	w := NewWriter(&memFile{}, WriterOptions{})
	k1 := kv.MakeInternalKey([]byte("b"), 5, kv.KindSet)
	if err := w.Add(k1, nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{
		k1, // duplicate
		kv.MakeInternalKey([]byte("b"), 6, kv.KindSet), // newer version after older
		kv.MakeInternalKey([]byte("a"), 9, kv.KindSet),
		kv.MakeInternalKey([]byte("c"), 1, kv.KindSeek),
		[]byte("short"),
	} {
		if err := w.Add(bad, nil); err == nil || !strings.HasPrefix(err.Error(), "bloomkv/sstable: ") {
			t.Errorf("Add(%s) = %v", kv.FormatInternalKey(bad), err)
		}
	}
	// A rejected Add leaves the writer usable.
	if err := w.Add(kv.MakeInternalKey([]byte("b"), 4, kv.KindDelete), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err == nil {
		t.Fatal("second Finish succeeded")
	}
	if err := w.Add(kv.MakeInternalKey([]byte("z"), 1, kv.KindSet), nil); err == nil {
		t.Fatal("Add after Finish succeeded")
	}
	for _, o := range []WriterOptions{
		{Compression: 7},
		{FilterKey: func(k []byte) []byte { return k }},
	} {
		f := &memFile{}
		w := NewWriter(f, o)
		if err := w.Add(k1, nil); err == nil {
			t.Errorf("options %+v accepted", o)
		}
		if _, err := w.Finish(); err == nil || !f.closed {
			t.Errorf("options %+v: Finish = %v, closed %v", o, err, f.closed)
		}
	}
}

// failingFile fails writes after a budget, to check errors surface.
type failingFile struct {
	memFile
	budget int
}

func (f *failingFile) Write(p []byte) (int, error) {
	if f.budget -= len(p); f.budget < 0 {
		return 0, errors.New("disk full")
	}
	return f.memFile.Write(p)
}

func TestWriterSurfacesWriteErrors(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(1, 1)), 20000, 1)
	for _, budget := range []int{0, 1000, writeBufferSize + 10} {
		f := &failingFile{budget: budget}
		w := NewWriter(f, WriterOptions{})
		var err error
		for _, e := range es {
			if err = w.Add(e.key, e.value); err != nil {
				break
			}
		}
		_, ferr := w.Finish()
		if ferr == nil || !strings.Contains(ferr.Error(), "disk full") || !f.closed {
			t.Fatalf("budget %d: Add err %v, Finish err %v, closed %v", budget, err, ferr, f.closed)
		}
	}
}

// TestEstimatedSizeGrows writes raw blocks: with compression, the estimate
// counts the open block uncompressed and drops when it is cut.
func TestEstimatedSizeGrows(t *testing.T) {
	w := NewWriter(&memFile{}, WriterOptions{Compression: NoCompression})
	prev := w.EstimatedSize()
	for i, e := range randomEntries(rand.New(rand.NewPCG(2, 2)), 5000, 1) {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
		s := w.EstimatedSize()
		if s < prev {
			t.Fatalf("entry %d: estimate shrank from %d to %d", i, prev, s)
		}
		prev = s
	}
	m, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if prev > m.Size || prev < m.Props.DataSize {
		t.Fatalf("final estimate %d outside [data %d, file %d]", prev, m.Props.DataSize, m.Size)
	}
}
