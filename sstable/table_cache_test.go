package sstable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// countingFS counts files opened and not yet closed.
type countingFS struct {
	vfs.FS
	open, opens atomic.Int64
}

type countingFile struct {
	vfs.File
	fs     *countingFS
	closed atomic.Bool
}

func (c *countingFS) Open(name string) (vfs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	c.open.Add(1)
	c.opens.Add(1)
	return &countingFile{File: f, fs: c}, nil
}

func (f *countingFile) Close() error {
	if f.closed.Swap(true) {
		return errors.New("closed twice")
	}
	f.fs.open.Add(-1)
	return f.File.Close()
}

// writeTables writes n small tables numbered 1..n; table i holds keys
// "t<i>-<j>".
func writeTables(t *testing.T, dir string, n int) (sizes []int64, tables [][]kv) {
	t.Helper()
	for i := 1; i <= n; i++ {
		var es []kv
		for j := range 50 {
			es = append(es, kv{base.MakeInternalKey([]byte(label("t%02d-%03d", i, j)), uint64(j+1), base.KindSet), []byte(label("v%d.%d", i, j))})
		}
		m := writeTableFile(t, dir, uint64(i), es, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10})
		sizes = append(sizes, int64(m.Size))
		tables = append(tables, es)
	}
	return sizes, tables
}

func TestTableCacheBoundsAndRefs(t *testing.T) {
	dir := t.TempDir()
	sizes, tables := writeTables(t, dir, 12)
	fs := &countingFS{FS: vfs.Default}
	tc := NewTableCache(fs, dir, 4, ReaderOptions{Cache: NewBlockCache(1 << 20)})

	// Hold table 1 while the cache cycles through all others.
	r1, release1, err := tc.Find(1, sizes[0])
	if err != nil {
		t.Fatal(err)
	}
	readers := map[int]*Reader{}
	for i := 2; i <= 12; i++ {
		r, release, err := tc.Find(uint64(i), sizes[i-1])
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = r
		release()
		if tc.Len() > 4 {
			t.Fatalf("cache holds %d tables", tc.Len())
		}
	}
	// Tables 2..8 were evicted and released, hence closed; 9..12 are cached.
	for i, r := range readers {
		if r.closed.Load() != (i <= 8) {
			t.Fatalf("table %d: closed = %v", i, r.closed.Load())
		}
	}
	// Table 1 was evicted but is still held: it must work.
	e := tables[0][7]
	if v, _, found, err := r1.Get(base.UserKey(e.key), base.MaxSeq, true, nil); !found || err != nil || !bytes.Equal(v, e.value) {
		t.Fatalf("evicted-but-held reader: %q %v %v", v, found, err)
	}
	if got := fs.open.Load(); got != 5 {
		t.Fatalf("%d files open, want 4 cached + 1 held", got)
	}
	release1()
	if !r1.closed.Load() || fs.open.Load() != 4 {
		t.Fatalf("released evicted reader: closed %v, %d files open", r1.closed.Load(), fs.open.Load())
	}
	// A cached table is found without reopening.
	opens := fs.opens.Load()
	_, release, err := tc.Find(12, sizes[11])
	if err != nil || fs.opens.Load() != opens {
		t.Fatalf("cached Find reopened the file: %v", err)
	}
	release()
	// Evict closes an unheld table at once.
	tc.Evict(12)
	if fs.open.Load() != 3 || tc.Len() != 3 {
		t.Fatalf("after Evict: %d files open, %d cached", fs.open.Load(), tc.Len())
	}
	if err := tc.Close(); err != nil || fs.open.Load() != 0 {
		t.Fatalf("Close: %v, %d files open", err, fs.open.Load())
	}
	if _, _, err := tc.Find(2, sizes[1]); !errors.Is(err, ErrTableCacheClosed) {
		t.Fatalf("Find after Close: %v", err)
	}
}

func TestTableCacheOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tc := NewTableCache(vfs.Default, dir, 4, ReaderOptions{})
	defer tc.Close()
	if _, _, err := tc.Find(1, 100); err == nil {
		t.Fatal("Find of a missing table succeeded")
	}
	if tc.Len() != 0 {
		t.Fatal("failed open stayed cached")
	}
	sizes, _ := writeTables(t, dir, 1)
	// A wrong size makes the footer unreadable: corruption, not cached.
	if _, _, err := tc.Find(1, sizes[0]-1); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("wrong size: %v", err)
	}
	_, release, err := tc.Find(1, sizes[0])
	if err != nil {
		t.Fatalf("retry after failure: %v", err)
	}
	release()
}

// TestTableCacheConcurrent runs Finds, Gets, releases and Evicts from many
// goroutines (run with -race) and checks that every file is closed at the
// end and the cache never grew past its bound for long.
func TestTableCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	const nTables = 10
	sizes, tables := writeTables(t, dir, nTables)
	fs := &countingFS{FS: vfs.Default}
	cache := NewBlockCache(1 << 20)
	tc := NewTableCache(fs, dir, 3, ReaderOptions{Cache: cache})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for range 400 {
				i := rng.IntN(nTables)
				if rng.IntN(10) == 0 {
					tc.Evict(uint64(i + 1))
					continue
				}
				r, release, err := tc.Find(uint64(i+1), sizes[i])
				if err != nil {
					t.Error(err)
					return
				}
				e := tables[i][rng.IntN(len(tables[i]))]
				v, _, found, err := r.Get(base.UserKey(e.key), base.MaxSeq, true, nil)
				if err != nil || !found || !bytes.Equal(v, e.value) {
					t.Errorf("table %d Get(%s) = %q %v %v", i+1, base.FormatInternalKey(e.key), v, found, err)
				}
				release()
				if n := tc.Len(); n > 3 {
					t.Errorf("cache holds %d tables", n)
				}
			}
		}()
	}
	wg.Wait()
	if err := tc.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fs.open.Load(); n != 0 {
		t.Fatalf("%d files left open", n)
	}
}

func TestTableCacheHitAllocatesNothing(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumentation allocates")
	}
	dir := t.TempDir()
	sizes, _ := writeTables(t, dir, 1)
	tc := NewTableCache(vfs.Default, dir, 2, ReaderOptions{})
	defer tc.Close()
	find := func() {
		_, release, err := tc.Find(1, sizes[0])
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	find()
	if n := testing.AllocsPerRun(1000, find); n != 0 {
		t.Fatalf("cached Find allocates %.1f times", n)
	}
}

func TestReaderClose(t *testing.T) {
	es := seqEntries(100)
	data, _ := buildTable(t, es, WriterOptions{})
	r := mustOpenBytes(t, data, ReaderOptions{})
	it := r.NewIter(true)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	if _, _, _, err := r.Get(base.UserKey(es[0].key), base.MaxSeq, false, nil); err == nil {
		t.Fatal("Get after Close succeeded")
	}
	if it.First() || it.Error() == nil {
		t.Fatal("iterator works after its reader closed")
	}
}
