package bloomkv

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestDeleteRangeFilterNegativeStillChecksTombstones: a table's filter
// speaks only for its point entries. Here the newer level-0 table holds
// the tombstone [a, m) and the point "z"; its filter says "absent" for
// "c", which the older table holds. Get("c") must still apply the newer
// table's tombstone: skipping the table on the filter's word would bring
// "c" back.
func TestDeleteRangeFilterNegativeStillChecksTombstones(t *testing.T) {
	for _, wholeKey := range []bool{true, false} {
		t.Run(fmt.Sprintf("wholeKey=%v", wholeKey), func(t *testing.T) {
			opts := tinyOptions(vfs.NewMem())
			opts.DisableAutomaticCompactions = true
			opts.BloomBitsPerKey = 20
			if !wholeKey {
				opts.FilterKey = func(k []byte) []byte { return k[:1] }
				opts.FilterKeyName = "first-byte"
			}
			db := mustOpen(t, "/db", opts)
			defer db.Close()
			for _, k := range []string{"b", "c", "d"} {
				if err := db.Put([]byte(k), []byte("old")); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.DeleteRange([]byte("a"), []byte("m")); err != nil {
				t.Fatal(err)
			}
			if err := db.Put([]byte("z"), []byte("new")); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := db.Metrics().RangeDeletions; n != 1 {
				t.Fatalf("Metrics.RangeDeletions = %d, want 1", n)
			}
			if n := db.Metrics().Levels[0].Files; n != 2 {
				t.Fatalf("%d level-0 tables, want 2", n)
			}
			before := db.Metrics()
			for _, k := range []string{"b", "c", "d"} {
				if v, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Get(%q) = %q, %v; want ErrNotFound (deleted by the range)", k, v, err)
				}
			}
			if v, err := db.Get([]byte("z")); err != nil || string(v) != "new" {
				t.Fatalf("Get(z) = %q, %v", v, err)
			}
			// The newer table's filter did say "absent" for b, c and d: the
			// test exercises the case it means to.
			if d := db.Metrics().Sub(before); d.FilterNegatives < 3 {
				t.Fatalf("%d filter negatives, want at least 3 (the newer table's filter must say absent)", d.FilterNegatives)
			}
			it := db.NewIterator(nil)
			var keys []string
			for ok := it.First(); ok; ok = it.Next() {
				keys = append(keys, string(it.Key()))
			}
			if err := it.Close(); err != nil || fmt.Sprint(keys) != "[z]" {
				t.Fatalf("iteration %v, %v; want [z]", keys, err)
			}
		})
	}
}

// TestDeleteRangeCompactionReclaims: compaction drops the keys a range
// tombstone covers and, at the bottom with no snapshot, the tombstone too;
// a snapshot older than the tombstone keeps the keys.
func TestDeleteRangeCompactionReclaims(t *testing.T) {
	for _, withSnap := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", withSnap), func(t *testing.T) {
			db := mustOpen(t, "/db", tinyOptions(vfs.NewMem()))
			defer db.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			for i := 0; i < 500; i++ {
				v := make([]byte, 100)
				for j := range v {
					v[j] = byte(rng.IntN(256)) // incompressible
				}
				if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), v); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			before := totalBytes(db)
			if withSnap {
				snap := db.NewSnapshot()
				defer snap.Close()
				defer func() {
					if v, err := snap.Get([]byte("k0010")); err != nil || len(v) != 100 {
						t.Fatalf("snapshot Get = %d bytes, %v: compaction dropped a key a snapshot needs", len(v), err)
					}
				}()
			}
			if err := db.DeleteRange([]byte("k0000"), []byte("k0400")); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, db)
			after := totalBytes(db)
			if _, err := db.Get([]byte("k0010")); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(k0010) = %v", err)
			}
			if v, err := db.Get([]byte("k0450")); err != nil || len(v) != 100 {
				t.Fatalf("Get(k0450) = %d bytes, %v", len(v), err)
			}
			t.Logf("%d bytes before the DeleteRange, %d after compaction", before, after)
			if withSnap {
				if after*10 < before*9 {
					t.Fatalf("%d bytes, %d before: keys a snapshot needs were dropped", after, before)
				}
				return
			}
			if after*3 > before {
				t.Fatalf("%d bytes after, %d before: the deleted keys were not dropped", after, before)
			}
			// No table keeps a range tombstone: the bottom dropped it.
			s, slot := db.loadReadState()
			defer s.unref(slot)
			for _, files := range s.v.Levels {
				for _, f := range files {
					r, release, err := findTable(db.tableCache, f)
					if err != nil {
						t.Fatal(err)
					}
					n := r.Properties().NumRangeDels
					release()
					if n != 0 {
						t.Fatalf("table %d keeps %d range tombstones at the bottom with no snapshot", f.FileNum, n)
					}
				}
			}
		})
	}
}

func totalBytes(db *DB) int64 {
	var n int64
	for _, l := range db.Metrics().Levels {
		n += l.Bytes
	}
	return n
}

// TestDeleteRangeSurvivesReopen: the log replays range tombstones (a batch
// of kind 2), and a reopen after a flush reads them from the table.
func TestDeleteRangeSurvivesReopen(t *testing.T) {
	for _, flush := range []bool{false, true} {
		fs := vfs.NewMem()
		db := mustOpen(t, "/db", tinyOptions(fs))
		for _, k := range []string{"a", "b", "c", "d"} {
			db.Put([]byte(k), []byte("v"))
		}
		db.Flush()
		b := NewBatch()
		b.DeleteRange([]byte("b"), []byte("d"))
		b.Put([]byte("c"), []byte("again")) // later in the batch: wins
		if err := db.Write(b); err != nil {
			t.Fatal(err)
		}
		if flush {
			db.Flush()
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = mustOpen(t, "/db", tinyOptions(fs))
		it := db.NewIterator(nil)
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		it.Close()
		if fmt.Sprint(got) != "[a=v c=again d=v]" {
			t.Fatalf("flush=%v: after reopen %v", flush, got)
		}
		db.Close()
	}
}

func TestDeleteRangeArguments(t *testing.T) {
	db := mustOpen(t, "/db", tinyOptions(vfs.NewMem()))
	defer db.Close()
	if err := db.DeleteRange([]byte("b"), []byte("a")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("start > end: %v", err)
	}
	if err := db.DeleteRange(nil, []byte("a")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty start: %v", err)
	}
	db.Put([]byte("a"), []byte("v"))
	if err := db.DeleteRange([]byte("a"), []byte("a")); err != nil {
		t.Fatalf("empty range: %v", err)
	}
	if _, err := db.Get([]byte("a")); err != nil {
		t.Fatalf("an empty range deleted its start: %v", err)
	}
	b := NewBatch()
	b.Put([]byte("x"), []byte("1"))
	b.DeleteRange([]byte("z"), []byte("y"))
	if err := db.Write(b); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("batch with a bad range: %v", err)
	}
	if _, err := db.Get([]byte("x")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a rejected batch applied part of itself: %v", err)
	}
}

// BenchmarkGetRangeDels measures Get of present keys with n range
// tombstones in the tree (each over one absent key, so every Get still
// hits): in the tables after a compaction, or still in the memtable.
func BenchmarkGetRangeDels(b *testing.B) {
	const keys = 50_000
	for _, where := range []string{"tables", "memtable"} {
		for _, n := range []int{0, 100, 10_000} {
			b.Run(fmt.Sprintf("%s/n=%d", where, n), func(b *testing.B) {
				db := loadBenchDB(b, keys, &Options{MemtableSize: 64 << 20})
				defer db.Close()
				rng := rand.New(rand.NewPCG(3, 4))
				k := make([]byte, 16)
				for i := 0; i < n; i++ {
					start := benchKey(k, 2*rng.Uint64N(keys)+1) // never written
					end := append(append([]byte(nil), start...), 0)
					if err := db.DeleteRange(start, end); err != nil {
						b.Fatal(err)
					}
				}
				if where == "tables" {
					if err := db.Compact(nil, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := db.Get(benchKey(k, 2*rng.Uint64N(keys))); err != nil {
						b.Fatalf("Get: %v", err)
					}
				}
			})
		}
	}
}

// TestCorruptionRangeDelBlock flips bytes across a table's range-deletion
// block: every Get and iterator that reaches the table fails with
// ErrCorruption naming it (never a panic, never a deleted key back).
func TestCorruptionRangeDelBlock(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs})
	for i := 0; i < 100; i++ {
		db.Put([]byte(corruptKey(i)), []byte(corruptValue(i)))
	}
	for i := 0; i < 30; i++ {
		db.DeleteRange([]byte(corruptKey(2*i)), []byte(corruptKey(2*i)+"5"))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables := filesOfType(t, fs, base.FileTypeTable)
	if len(tables) != 1 {
		t.Fatalf("tables: %v", tables)
	}
	table := tables[0]
	data := readMemFile(t, fs, "/db/"+table)
	r, err := sstable.Open(&memReadFile{data}, table, 0, int64(len(data)), sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := *r.Properties()
	r.Close()
	start, end := int(p.RangeDelOffset), int(p.RangeDelOffset+p.RangeDelSize)+sstable.BlockTrailerLen
	if p.NumRangeDels != 30 || end <= start {
		t.Fatalf("%d range deletions, block [%d, %d)", p.NumRangeDels, start, end)
	}
	for off := start; off < end; off += max(1, (end-start)/17) {
		what := fmt.Sprintf("flip@%d", off)
		img := withDamage(t, fs, table, flipAt(off))
		db, err := Open("/db", &Options{FS: img})
		if err != nil {
			expectCorruption(t, err, table, what+": Open")
			continue
		}
		for i := 0; i < 100; i += 7 {
			v, err := db.Get([]byte(corruptKey(i)))
			if err == nil {
				db.Close()
				t.Fatalf("%s: Get(%s) = %q from a table whose range deletions are damaged", what, corruptKey(i), v)
			}
			expectCorruption(t, err, table, what+": Get")
		}
		it := db.NewIterator(nil)
		for ok := it.First(); ok; ok = it.Next() {
		}
		expectCorruption(t, it.Close(), table, what+": iterator")
		db.Close()
	}
}

// memReadFile serves a table's bytes to sstable.Open.
type memReadFile struct{ b []byte }

func (f *memReadFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(f.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (f *memReadFile) Read([]byte) (int, error)   { return 0, io.EOF }
func (f *memReadFile) Write([]byte) (int, error)  { return 0, errors.ErrUnsupported }
func (f *memReadFile) Close() error               { return nil }
func (f *memReadFile) Sync() error                { return nil }
func (f *memReadFile) Stat() (os.FileInfo, error) { return nil, errors.ErrUnsupported }
