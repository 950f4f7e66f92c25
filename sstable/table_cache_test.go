package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// countingFS counts files opened and not yet closed, and opens of a file
// that was already open. With gate set, every Open first waits on it.
type countingFS struct {
	vfs.FS
	gate        chan struct{}
	open, opens atomic.Int64
	// doubleCloses counts Closes of a file already closed.
	doubleCloses atomic.Int64

	mu     sync.Mutex
	byName map[string]int // open files per name, guarded by mu
	dups   int            // opens of a file already open, guarded by mu
}

type countingFile struct {
	vfs.File
	fs     *countingFS
	name   string
	closed atomic.Bool
}

func (c *countingFS) Open(name string) (vfs.File, error) {
	if c.gate != nil {
		<-c.gate
	}
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	c.open.Add(1)
	c.opens.Add(1)
	c.mu.Lock()
	if c.byName == nil {
		c.byName = map[string]int{}
	}
	if c.byName[name] > 0 {
		c.dups++
	}
	c.byName[name]++
	c.mu.Unlock()
	return &countingFile{File: f, fs: c, name: name}, nil
}

func (f *countingFile) Close() error {
	if f.closed.Swap(true) {
		f.fs.doubleCloses.Add(1)
		return errors.New("closed twice")
	}
	err := f.File.Close()
	// Count the file closed only now, so that an open racing this close
	// counts as a duplicate.
	f.fs.mu.Lock()
	f.fs.byName[f.name]--
	f.fs.mu.Unlock()
	f.fs.open.Add(-1)
	return err
}

// duplicates returns the number of opens of an already open file.
func (c *countingFS) duplicates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dups
}

// writeTables writes n small tables numbered 1..n; table i holds keys
// "t<i>-<j>".
func writeTables(t testing.TB, dir string, n int) (sizes []int64, tables [][]refEntry) {
	t.Helper()
	for i := 1; i <= n; i++ {
		var es []refEntry
		for j := range 50 {
			es = append(es, refEntry{kv.MakeInternalKey([]byte(label("t%02d-%03d", i, j)), uint64(j+1), kv.KindSet), []byte(label("v%d.%d", i, j))})
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

	// Hold table 1 while the cache cycles through all others: the held
	// table stays, so only three idle ones fit beside it.
	r1, release1, err := tc.Find(Identity{FileNum: 1, Size: sizes[0]})
	if err != nil {
		t.Fatal(err)
	}
	readers := map[int]*Reader{}
	for i := 2; i <= 12; i++ {
		r, release, err := tc.Find(Identity{FileNum: uint64(i), Size: sizes[i-1]})
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = r
		release()
		if tc.Len() > 4 || fs.open.Load() > 4 {
			t.Fatalf("cache holds %d tables, %d files open", tc.Len(), fs.open.Load())
		}
	}
	// Tables 2..9 were evicted once idle, hence closed; 10..12 are cached.
	for i, r := range readers {
		if r.closed.Load() != (i <= 9) {
			t.Fatalf("table %d: closed = %v", i, r.closed.Load())
		}
	}
	e := tables[0][7]
	if v, _, found, err := r1.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil); !found || err != nil || !bytes.Equal(v, e.value) {
		t.Fatalf("held reader: %q %v %v", v, found, err)
	}
	// The held table is found again without reopening, as the same Reader.
	opens := fs.opens.Load()
	r, release, err := tc.Find(Identity{FileNum: 1, Size: sizes[0]})
	if err != nil || r != r1 || fs.opens.Load() != opens {
		t.Fatalf("Find of a held table: %v, same reader %v, %d opens", err, r == r1, fs.opens.Load()-opens)
	}
	release()
	release1()
	if r1.closed.Load() || fs.open.Load() != 4 || tc.Len() != 4 {
		t.Fatalf("released table 1 within capacity: closed %v, %d files open, Len %d", r1.closed.Load(), fs.open.Load(), tc.Len())
	}
	// A cached table is found without reopening.
	_, release, err = tc.Find(Identity{FileNum: 12, Size: sizes[11]})
	if err != nil || fs.opens.Load() != opens {
		t.Fatalf("cached Find reopened the file: %v", err)
	}
	release()
	// Evict closes an unheld table at once.
	tc.Evict(12)
	if fs.open.Load() != 3 || tc.Len() != 3 {
		t.Fatalf("after Evict: %d files open, Len %d", fs.open.Load(), tc.Len())
	}
	if err := tc.Close(); err != nil || fs.open.Load() != 0 || tc.Len() != 0 {
		t.Fatalf("Close: %v, %d files open, Len %d", err, fs.open.Load(), tc.Len())
	}
	if _, _, err := tc.Find(Identity{FileNum: 2, Size: sizes[1]}); !errors.Is(err, ErrTableCacheClosed) {
		t.Fatalf("Find after Close: %v", err)
	}
	if fs.duplicates() != 0 {
		t.Fatalf("%d files opened twice", fs.duplicates())
	}
}

// TestTableCacheOneOpenPerTable finds one table from many goroutines at
// once, its open held up until all have asked: one open, one Reader.
func TestTableCacheOneOpenPerTable(t *testing.T) {
	dir := t.TempDir()
	sizes, _ := writeTables(t, dir, 1)
	fs := &countingFS{FS: vfs.Default, gate: make(chan struct{})}
	tc := NewTableCache(fs, dir, 1, ReaderOptions{})
	defer tc.Close()
	const n = 32
	var found, done sync.WaitGroup
	readers := make([]*Reader, n)
	releases := make([]func(), n)
	for g := range n {
		found.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			defer found.Done()
			r, release, err := tc.Find(Identity{FileNum: 1, Size: sizes[0]})
			if err != nil {
				t.Error(err)
				return
			}
			readers[g], releases[g] = r, release
		}()
	}
	// Let the Finds pile up behind the held open; any that come later hit
	// the cache, which must give the same answer.
	time.Sleep(20 * time.Millisecond)
	close(fs.gate)
	found.Wait()
	done.Wait()
	if t.Failed() {
		return
	}
	if fs.opens.Load() != 1 || fs.open.Load() != 1 || tc.Len() != 1 {
		t.Fatalf("%d Finds held: %d opens, %d open, Len %d; want 1", n, fs.opens.Load(), fs.open.Load(), tc.Len())
	}
	for g, r := range readers {
		if r != readers[0] {
			t.Fatalf("Find %d got another Reader", g)
		}
	}
	for _, release := range releases {
		release()
	}
	if readers[0].closed.Load() || fs.open.Load() != 1 {
		t.Fatal("the released table left the cache within capacity")
	}
}

// TestTableCachePinnedBeyondCapacity holds twice the capacity: held tables
// are neither closed nor reopened, idle ones are closed as they are
// released, and releasing the held ones brings the cache back to capacity,
// closing the excess at each release.
func TestTableCachePinnedBeyondCapacity(t *testing.T) {
	dir := t.TempDir()
	sizes, _ := writeTables(t, dir, 12)
	fs := &countingFS{FS: vfs.Default}
	tc := NewTableCache(fs, dir, 4, ReaderOptions{})
	defer tc.Close()
	find := func(i int) (*Reader, func()) {
		t.Helper()
		r, release, err := tc.Find(Identity{FileNum: uint64(i), Size: sizes[i-1]})
		if err != nil {
			t.Fatal(err)
		}
		return r, release
	}
	wantOpen := func(what string, n int) {
		t.Helper()
		if fs.open.Load() != int64(n) || tc.Len() != n {
			t.Fatalf("%s: %d files open, Len %d; want %d", what, fs.open.Load(), tc.Len(), n)
		}
	}

	held := map[int]*Reader{}
	releases := map[int]func(){}
	for i := 1; i <= 8; i++ {
		held[i], releases[i] = find(i)
	}
	wantOpen("8 held", 8)
	for i := 1; i <= 8; i++ {
		r, release := find(i)
		if r != held[i] {
			t.Fatalf("table %d: a second Reader while held", i)
		}
		release()
	}
	if fs.opens.Load() != 8 {
		t.Fatalf("held tables reopened: %d opens", fs.opens.Load())
	}
	wantOpen("8 held, found again", 8)
	for i := 9; i <= 12; i++ {
		r, release := find(i)
		wantOpen("8 held and one more", 9)
		release()
		if !r.closed.Load() {
			t.Fatalf("table %d idle beyond capacity stayed open", i)
		}
		wantOpen("8 held, one released", 8)
	}

	// Release the held tables oldest first: the first four released are
	// excess and close at once; the last four fit.
	for i := 1; i <= 8; i++ {
		releases[i]()
		if held[i].closed.Load() != (i <= 4) {
			t.Fatalf("released table %d: closed = %v", i, held[i].closed.Load())
		}
		wantOpen("released", max(4, 8-i))
	}
	for i := 5; i <= 8; i++ {
		if r, release := find(i); r != held[i] {
			t.Fatalf("cached table %d reopened", i)
		} else {
			release()
		}
	}
	// Table 5 is now the least recently used: a new table replaces it.
	_, release := find(9)
	release()
	if !held[5].closed.Load() || held[6].closed.Load() {
		t.Fatalf("LRU eviction closed the wrong table: 5 %v, 6 %v", held[5].closed.Load(), held[6].closed.Load())
	}
	wantOpen("at capacity", 4)
	if fs.duplicates() != 0 {
		t.Fatalf("%d files opened twice", fs.duplicates())
	}
}

// TestTableCacheReleaseTakesNoLock: a release that leaves the cache within
// capacity does not wait for the cache's mutex.
func TestTableCacheReleaseTakesNoLock(t *testing.T) {
	dir := t.TempDir()
	sizes, _ := writeTables(t, dir, 2)
	tc := NewTableCache(vfs.Default, dir, 2, ReaderOptions{})
	defer tc.Close()
	var releases []func()
	for i := range 2 {
		for range 2 {
			_, release, err := tc.Find(Identity{FileNum: uint64(i + 1), Size: sizes[i]})
			if err != nil {
				t.Fatal(err)
			}
			releases = append(releases, release)
		}
	}
	tc.mu.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, release := range releases {
			release()
		}
	}()
	select {
	case <-done:
		tc.mu.Unlock()
	case <-time.After(10 * time.Second):
		tc.mu.Unlock()
		<-done
		t.Fatal("release within capacity waited for the cache's mutex")
	}
}

// TestTableCacheEvictHeld: an evicted table keeps working for its holders
// and counts in Len until released, but not toward capacity.
func TestTableCacheEvictHeld(t *testing.T) {
	dir := t.TempDir()
	sizes, tables := writeTables(t, dir, 6)
	fs := &countingFS{FS: vfs.Default}
	tc := NewTableCache(fs, dir, 2, ReaderOptions{})
	defer tc.Close()
	r1, release1, err := tc.Find(Identity{FileNum: 1, Size: sizes[0]})
	if err != nil {
		t.Fatal(err)
	}
	tc.Evict(1)
	for i := 2; i <= 3; i++ {
		_, release, err := tc.Find(Identity{FileNum: uint64(i), Size: sizes[i-1]})
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	// Two cached tables (the capacity) plus the evicted one still held.
	if fs.open.Load() != 3 || tc.Len() != 3 || r1.closed.Load() {
		t.Fatalf("evicted and held: %d files open, Len %d, closed %v", fs.open.Load(), tc.Len(), r1.closed.Load())
	}
	e := tables[0][3]
	if v, _, found, err := r1.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil); !found || err != nil || !bytes.Equal(v, e.value) {
		t.Fatalf("evicted-but-held reader: %q %v %v", v, found, err)
	}
	release1()
	if !r1.closed.Load() || fs.open.Load() != 2 || tc.Len() != 2 {
		t.Fatalf("evicted and released: closed %v, %d files open, Len %d", r1.closed.Load(), fs.open.Load(), tc.Len())
	}
}

func TestTableCacheOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tc := NewTableCache(vfs.Default, dir, 4, ReaderOptions{})
	defer tc.Close()
	if _, _, err := tc.Find(Identity{FileNum: 1, Size: 100}); err == nil {
		t.Fatal("Find of a missing table succeeded")
	}
	if tc.Len() != 0 {
		t.Fatal("failed open stayed cached")
	}
	sizes, _ := writeTables(t, dir, 1)
	// A wrong size makes the footer unreadable: corruption, not cached.
	if _, _, err := tc.Find(Identity{FileNum: 1, Size: sizes[0] - 1}); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("wrong size: %v", err)
	}
	_, release, err := tc.Find(Identity{FileNum: 1, Size: sizes[0]})
	if err != nil {
		t.Fatalf("retry after failure: %v", err)
	}
	release()
}

// TestTableCacheConcurrent runs Finds, Gets, releases and Evicts from many
// goroutines (run with -race), each holding up to three tables at a time,
// and checks that, with evictions off, no file is ever open twice; that
// once all is released the cache is back within capacity; and that Close
// closes everything.
func TestTableCacheConcurrent(t *testing.T) {
	for _, evict := range []bool{false, true} {
		t.Run(fmt.Sprintf("evict=%v", evict), func(t *testing.T) {
			dir := t.TempDir()
			const nTables, capacity, goroutines = 10, 3, 6
			sizes, tables := writeTables(t, dir, nTables)
			fs := &countingFS{FS: vfs.Default}
			cache := NewBlockCache(1 << 20)
			tc := NewTableCache(fs, dir, capacity, ReaderOptions{Cache: cache})
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 3))
					var releases []func()
					for range 400 {
						i := rng.IntN(nTables)
						if evict && rng.IntN(10) == 0 {
							tc.Evict(uint64(i + 1))
							continue
						}
						r, release, err := tc.Find(Identity{FileNum: uint64(i + 1), Size: sizes[i]})
						if err != nil {
							t.Error(err)
							return
						}
						e := tables[i][rng.IntN(len(tables[i]))]
						v, _, found, err := r.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil)
						if err != nil || !found || !bytes.Equal(v, e.value) {
							t.Errorf("table %d Get(%s) = %q %v %v", i+1, kv.FormatInternalKey(e.key), v, found, err)
						}
						releases = append(releases, release)
						for len(releases) > rng.IntN(3) {
							k := rng.IntN(len(releases))
							releases[k]()
							releases = append(releases[:k], releases[k+1:]...)
						}
						// Loosely: each goroutine holds at most 3 tables,
						// and one more may be on its way to closing.
						if n := tc.Len(); n > capacity+4*goroutines {
							t.Errorf("%d tables open", n)
						}
					}
					for _, release := range releases {
						release()
					}
				}()
			}
			wg.Wait()
			if n, open := tc.Len(), fs.open.Load(); n > capacity || int64(n) != open {
				t.Errorf("all released: Len %d, %d files open; want equal and <= %d", n, open, capacity)
			}
			if n := fs.duplicates(); n != 0 && !evict {
				t.Errorf("%d files opened while already open", n)
			}
			if err := tc.Close(); err != nil {
				t.Fatal(err)
			}
			if n := fs.open.Load(); n != 0 {
				t.Fatalf("%d files left open", n)
			}
		})
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
		_, release, err := tc.Find(Identity{FileNum: 1, Size: sizes[0]})
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
	if _, _, _, err := r.Get(kv.UserKey(es[0].key), kv.MaxSeq, false, nil); err == nil {
		t.Fatal("Get after Close succeeded")
	}
	if it.First() || it.Error() == nil {
		t.Fatal("iterator works after its reader closed")
	}
}
