package sstable

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// memFile is a vfs.File over a byte slice: tests use it to build tables in
// memory and to damage them cheaply.
type memFile struct {
	data   []byte
	closed bool
}

func (f *memFile) Read(p []byte) (int, error) { return 0, io.EOF }
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (f *memFile) Write(p []byte) (int, error) { f.data = append(f.data, p...); return len(p), nil }
func (f *memFile) Close() error                { f.closed = true; return nil }
func (f *memFile) Sync() error                 { return nil }
func (f *memFile) Stat() (os.FileInfo, error)  { return memInfo(len(f.data)), nil }

type memInfo int64

func (m memInfo) Name() string       { return "mem" }
func (m memInfo) Size() int64        { return int64(m) }
func (m memInfo) Mode() fs.FileMode  { return 0o644 }
func (m memInfo) ModTime() time.Time { return time.Time{} }
func (m memInfo) IsDir() bool        { return false }
func (m memInfo) Sys() any           { return nil }

var _ vfs.File = (*memFile)(nil)

// refEntry is one reference entry: an internal key and its value.
type refEntry struct {
	key, value []byte
}

// randomEntries returns n sorted entries over about n/versions user keys,
// each with 1..versions versions of decreasing sequence numbers and a mix
// of sets and deletes. Keys share prefixes so prefix compression matters.
func randomEntries(rng *rand.Rand, n, versions int) []refEntry {
	var out []refEntry
	seq := uint64(1)
	seen := map[string]bool{}
	for len(out) < n {
		uk := make([]byte, 1+rng.IntN(12))
		for i := range uk {
			uk[i] = "abcde\x00\xff"[rng.IntN(7)]
		}
		if seen[string(uk)] {
			continue
		}
		seen[string(uk)] = true
		nv := 1 + rng.IntN(versions)
		for v := 0; v < nv && len(out) < n; v++ {
			kind := kv.KindSet
			if rng.IntN(5) == 0 {
				kind = kv.KindDelete
			}
			val := []byte(nil)
			if kind == kv.KindSet {
				val = make([]byte, rng.IntN(40))
				for i := range val {
					val[i] = byte('A' + rng.IntN(4)) // compressible
				}
			}
			seq += 1 + uint64(rng.IntN(3))
			out = append(out, refEntry{kv.MakeInternalKey(uk, seq, kind), val})
		}
	}
	sortEntries(out)
	return out
}

func sortEntries(es []refEntry) {
	sort.Slice(es, func(i, j int) bool { return kv.CompareInternal(es[i].key, es[j].key) < 0 })
}

// buildTable writes entries to an in-memory table.
func buildTable(t testing.TB, es []refEntry, o WriterOptions) ([]byte, WriterMeta) {
	t.Helper()
	f := &memFile{}
	w := NewWriter(f, o)
	for _, e := range es {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !f.closed {
		t.Fatal("Finish did not close the file")
	}
	if m.Size != uint64(len(f.data)) {
		t.Fatalf("meta size %d, file %d bytes", m.Size, len(f.data))
	}
	return f.data, m
}

// openBytes opens an in-memory table.
func openBytes(data []byte, o ReaderOptions) (*Reader, error) {
	return Open(&memFile{data: data}, "000007.sst", 7, int64(len(data)), o)
}

func mustOpenBytes(t testing.TB, data []byte, o ReaderOptions) *Reader {
	t.Helper()
	r, err := openBytes(data, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeTableFile writes entries to dir/NNNNNN.sst through vfs.Default.
func writeTableFile(t testing.TB, dir string, fileNum uint64, es []refEntry, o WriterOptions) WriterMeta {
	t.Helper()
	f, err := vfs.Default.Create(filepath.Join(dir, base.MakeFilename(base.FileTypeTable, fileNum)))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, o)
	for _, e := range es {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refGet is the reference answer for Get(ukey, seq).
func refGet(es []refEntry, ukey []byte, seq uint64) (value []byte, kind kv.Kind, found bool) {
	search := kv.MakeSearchKey(ukey, seq)
	i := sort.Search(len(es), func(i int) bool { return kv.CompareInternal(es[i].key, search) >= 0 })
	if i == len(es) {
		return nil, 0, false
	}
	uk, _, k, _ := kv.ParseInternalKey(es[i].key)
	if !bytes.Equal(uk, ukey) {
		return nil, 0, false
	}
	return es[i].value, k, true
}

// refSeekGE returns the index of the first entry >= k (len(es) if none).
func refSeekGE(es []refEntry, k []byte) int {
	return sort.Search(len(es), func(i int) bool { return kv.CompareInternal(es[i].key, k) >= 0 })
}

// checkIterAt compares an iterator's position with es[i] (i out of range
// means the iterator must be exhausted).
func checkIterAt(t testing.TB, what string, it kv.Iterator, valid bool, es []refEntry, i int) {
	t.Helper()
	want := i >= 0 && i < len(es)
	if valid != want || it.Valid() != want {
		t.Fatalf("%s: valid=%v/%v, want %v (ref index %d of %d), err=%v", what, valid, it.Valid(), want, i, len(es), it.Error())
	}
	if !want {
		return
	}
	if !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value) {
		t.Fatalf("%s: at %s=%q, want %s=%q", what, kv.FormatInternalKey(it.Key()), it.Value(),
			kv.FormatInternalKey(es[i].key), es[i].value)
	}
}

// randomSearchKey returns a key near the entries: an existing key, a
// variant of one at another sequence, or random bytes.
func randomSearchKey(rng *rand.Rand, es []refEntry) []byte {
	switch rng.IntN(4) {
	case 0:
		if len(es) > 0 {
			return es[rng.IntN(len(es))].key
		}
	case 1:
		if len(es) > 0 {
			uk := kv.UserKey(es[rng.IntN(len(es))].key)
			return kv.MakeInternalKey(uk, rng.Uint64N(1000), kv.KindSet)
		}
	case 2:
		if len(es) > 0 {
			uk := append([]byte(nil), kv.UserKey(es[rng.IntN(len(es))].key)...)
			uk = append(uk, byte(rng.IntN(3)))
			return kv.MakeSearchKey(uk, kv.MaxSeq)
		}
	}
	uk := make([]byte, rng.IntN(6))
	for i := range uk {
		uk[i] = "abcdef\x00\xff"[rng.IntN(8)]
	}
	return kv.MakeInternalKey(uk, rng.Uint64N(1000), kv.Kind(rng.IntN(2)))
}

func label(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// testScale shrinks a workload under the race detector (about 10x slower)
// and -short, keeping the package's tests quick everywhere.
func testScale(n int) int {
	if raceEnabled || testing.Short() {
		return max(1, n/4)
	}
	return n
}
