package bloomkv

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// wantInvalid fails unless err wraps ErrInvalidArgument, says
// "bloomkv:" exactly once (no stutter), and contains want.
func wantInvalid(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%s: %v, want ErrInvalidArgument", what, err)
	}
	msg := err.Error()
	if n := strings.Count(msg, "bloomkv"); n != 1 {
		t.Errorf("%s: %q names the package %d times", what, msg, n)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("%s: %q does not say %q", what, msg, want)
	}
}

func TestInvalidArgumentMessages(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	wantInvalid(t, "Put empty key", db.Put(nil, []byte("v")), "bloomkv: invalid argument: empty key")
	wantInvalid(t, "Put long key", db.Put(make([]byte, MaxKeySize+1), nil), "key of 65537 bytes exceeds the 65536-byte limit")
	_, err := db.Get(nil)
	wantInvalid(t, "Get empty key", err, "empty key")
	wantInvalid(t, "Delete empty key", db.Delete(nil), "empty key")
	wantInvalid(t, "Write nil", db.Write(nil), "nil batch")
	wantInvalid(t, "Compact inverted", db.Compact([]byte("b"), []byte("a")), `Compact start "b" > end "a"`)
	wantInvalid(t, "Checkpoint empty dir", db.Checkpoint(""), "Checkpoint: empty directory name")
	_, err = Open("/db2", &Options{FS: vfs.NewMem(), BlockSize: 1})
	wantInvalid(t, "Open bad option", err, "option BlockSize 1")
	_, err = Open("", &Options{FS: vfs.NewMem()})
	wantInvalid(t, "Open empty dir", err, "empty directory name")
}

// TestBatchErrorNamesOperation: the first bad operation is named by its
// index among the batch's calls (valid or not) and its kind, and the whole
// batch is rejected.
func TestBatchErrorNamesOperation(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	for _, tc := range []struct {
		name  string
		build func(b *Batch)
		want  string
	}{
		{"first op", func(b *Batch) { b.Delete(nil) }, "batch operation 0 (Delete): empty key"},
		{"third op", func(b *Batch) {
			b.Put([]byte("a"), nil)
			b.Delete([]byte("b"))
			b.Put([]byte("c"), make([]byte, MaxValueSize+1))
			b.Put(nil, nil) // a later bad op does not replace the first
		}, "batch operation 2 (Put): value of 67108865 bytes exceeds"},
		{"after a bad op", func(b *Batch) {
			b.Put([]byte("a"), nil)
			b.Put(nil, nil)
		}, "batch operation 1 (Put): empty key"},
	} {
		b := NewBatch()
		tc.build(b)
		wantInvalid(t, tc.name, db.Write(b), tc.want)
		if _, err := db.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: a rejected batch was applied in part: %v", tc.name, err)
		}
		// Reset clears the error and the count.
		b.Reset()
		b.Delete(nil)
		wantInvalid(t, tc.name+" after Reset", db.Write(b), "batch operation 0 (Delete)")
	}
}

// TestInvertedBounds: LowerBound > UpperBound is an error from NewIterator
// (DB and Snapshot) and SetBounds, which valid bounds clear; equal bounds
// are an empty range, not an error.
func TestInvertedBounds(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Put([]byte(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	inverted := &IterOptions{LowerBound: []byte("c"), UpperBound: []byte("a")}
	snap := db.NewSnapshot()
	defer snap.Close()
	for name, it := range map[string]*Iterator{"db": db.NewIterator(inverted), "snapshot": snap.NewIterator(inverted)} {
		if it.First() || it.Last() || it.SeekGE([]byte("b")) || it.SeekLT([]byte("b")) || it.Valid() {
			t.Errorf("%s: an iterator with inverted bounds moved", name)
		}
		wantInvalid(t, name, it.Error(), `LowerBound "c" > UpperBound "a"`)
		// Valid bounds make it usable; inverted ones again stop it.
		it.SetBounds([]byte("b"), nil)
		if !it.First() || string(it.Key()) != "b" || it.Error() != nil {
			t.Errorf("%s: after SetBounds(b, nil): key %q, error %v", name, it.Key(), it.Error())
		}
		it.SetBounds([]byte("z"), []byte("y"))
		if it.First() {
			t.Errorf("%s: SetBounds(z, y) left the iterator usable", name)
		}
		wantInvalid(t, name+" SetBounds", it.Error(), `LowerBound "z" > UpperBound "y"`)
		wantInvalid(t, name+" Close", it.Close(), "inverted")
	}
	it := db.NewIterator(&IterOptions{LowerBound: []byte("b"), UpperBound: []byte("b")})
	if it.First() || it.Error() != nil {
		t.Errorf("equal bounds: First %v, error %v; want an empty range", it.Valid(), it.Error())
	}
	it.Close()
}

// TestCloseReportsLeaks: Close counts the iterators and snapshots still
// open, closes all the same, and counts nothing that was closed.
func TestCloseReportsLeaks(t *testing.T) {
	for _, tc := range []struct {
		iters, snaps, closedIters, closedSnaps int
		want                                   string
	}{
		{0, 0, 2, 1, ""},
		{1, 0, 1, 0, "1 iterator and 0 snapshots left open"},
		{2, 3, 1, 1, "2 iterators and 3 snapshots left open"},
	} {
		fs := vfs.NewMem()
		db := mustOpen(t, "/db", &Options{FS: fs})
		if err := db.Put([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		for range tc.iters {
			db.NewIterator(nil).First()
		}
		for range tc.closedIters {
			if err := db.NewIterator(nil).Close(); err != nil {
				t.Fatal(err)
			}
		}
		for range tc.snaps {
			db.NewSnapshot()
		}
		for range tc.closedSnaps {
			if err := db.NewSnapshot().Close(); err != nil {
				t.Fatal(err)
			}
		}
		err := db.Close()
		if tc.want == "" {
			if err != nil {
				t.Fatalf("nothing left open: Close = %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrLeaked) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Close = %v, want ErrLeaked saying %q", err, tc.want)
		}
		// Closed all the same: the directory can be opened again.
		db2, err := Open("/db", &Options{FS: fs})
		if err != nil {
			t.Fatalf("reopen after a Close that reported leaks: %v", err)
		}
		if v, err := db2.Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("after reopen: %q, %v", v, err)
		}
		db2.Close()
	}
}

func TestBadInputRejected(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	big := make([]byte, MaxKeySize+1)
	for name, err := range map[string]error{
		"empty key put":    db.Put(nil, []byte("v")),
		"empty key delete": db.Delete([]byte{}),
		"huge key":         db.Put(big, nil),
		"huge value":       db.Put([]byte("k"), make([]byte, MaxValueSize+1)),
	} {
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: err=%v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := db.Get(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Get(nil): %v", err)
	}
	b := NewBatch()
	b.Put([]byte("good"), []byte("1"))
	b.Put(nil, []byte("bad"))
	if err := db.Write(b); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad batch: %v", err)
	}
	if _, err := db.Get([]byte("good")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a rejected batch changed the database: %v", err)
	}
	for _, o := range []*Options{{MemtableSize: 10}, {BlockSize: -1}, {Compression: 7}, {BloomBitsPerKey: 1000}} {
		o.FS = vfs.NewMem()
		if _, err := Open("/x", o); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Open(%+v): %v, want ErrInvalidArgument", o, err)
		}
	}
}

// TestLargestKeyAndValue writes a key and a value of the maximum sizes the
// API allows, through the log, a flush, a reopen and a compaction.
func TestLargestKeyAndValue(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 128 MiB through log, table and compaction")
	}
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs})
	key := bytes.Repeat([]byte{'k'}, MaxKeySize)
	value := bytes.Repeat([]byte("0123456789abcdef"), MaxValueSize/16)
	if err := db.Put(key, value); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("small"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		got, err := db.Get(key)
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("%s: Get of the largest value: %d bytes, %v", when, len(got), err)
		}
	}
	check("in the memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("in a table")
	db.Close()
	db = mustOpen(t, "/db", &Options{FS: fs})
	defer db.Close()
	check("after reopen")
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
}
