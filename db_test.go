package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

func TestRecoveryAfterCrash(t *testing.T) {
	fs := vfs.NewMem()
	opts := tinyOptions(fs)
	db := mustOpen(t, "/db", opts)
	m := model{}
	for i := 0; i < 2000; i++ {
		k, v := fmt.Sprintf("k%05d", i%700), fmt.Sprintf("v%d", i)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		m[k] = v
		if i%300 == 0 {
			db.Delete([]byte(fmt.Sprintf("k%05d", i/2)))
			delete(m, fmt.Sprintf("k%05d", i/2))
		}
	}
	// A kill -9: everything written to files survives, nothing else runs.
	crashed := fs.ProcessCrashClone()
	db.Close()
	db2 := mustOpen(t, "/db", tinyOptions(crashed))
	defer db2.Close()
	for k := range m {
		checkGet(t, db2.Get, m, k, "after crash")
	}
	n := 0
	it := db2.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	if n != len(m) {
		t.Fatalf("after crash: %d keys, want %d", n, len(m))
	}
}

func TestRecoveryAfterCloseAndReopenKeepsSequence(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	for i := 0; i < 100; i++ {
		db.Put([]byte(fmt.Sprintf("a%03d", i)), []byte("1"))
	}
	db.Close()
	db = mustOpen(t, dir, nil)
	// A write after reopen must shadow the older one, across a flush.
	db.Put([]byte("a005"), []byte("2"))
	db.Flush()
	db.Compact(nil, nil)
	db.Close()
	db = mustOpen(t, dir, nil)
	defer db.Close()
	if v, err := db.Get([]byte("a005")); err != nil || string(v) != "2" {
		t.Fatalf("Get = %q, %v; want 2", v, err)
	}
}

func TestFlippedByteInTableIsCorruption(t *testing.T) {
	dir := t.TempDir()
	o := &Options{Compression: NoCompression, BlockCacheSize: -1}
	db := mustOpen(t, dir, o)
	for i := 0; i < 500; i++ {
		db.Put([]byte(fmt.Sprintf("key%04d", i)), bytes.Repeat([]byte{'v'}, 50))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) != 1 {
		t.Fatalf("tables: %v", tables)
	}
	data, _ := os.ReadFile(tables[0])
	data[100] ^= 0x40 // inside the first data block
	os.WriteFile(tables[0], data, 0o644)
	db = mustOpen(t, dir, o)
	defer db.Close()
	sawCorruption := false
	for i := 0; i < 500; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("key%04d", i)))
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("key%04d: error %v does not wrap ErrCorruption", i, err)
			}
			sawCorruption = true
			continue
		}
		if !bytes.Equal(v, bytes.Repeat([]byte{'v'}, 50)) {
			t.Fatalf("key%04d: wrong data %q", i, v)
		}
	}
	if !sawCorruption {
		t.Fatal("no Get reported the damaged block")
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

func TestCallerSlicesNotRetained(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	k, v := []byte("key"), []byte("value")
	db.Put(k, v)
	k[0], v[0] = 'X', 'X'
	got, err := db.Get([]byte("key"))
	if err != nil || string(got) != "value" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	got[0] = 'Y'
	if again, _ := db.Get([]byte("key")); string(again) != "value" {
		t.Fatalf("returned value aliases the engine: %q", again)
	}
}

func TestClosedDB(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	db.Put([]byte("a"), []byte("1"))
	db.Put([]byte("b"), []byte("2"))
	snap := db.NewSnapshot()
	open := db.NewIterator(nil)
	if !open.First() {
		t.Fatal("iterator before Close is empty")
	}
	// Close closes, and reports what was left open.
	if err := db.Close(); !errors.Is(err, ErrLeaked) || !strings.Contains(err.Error(), "1 iterator and 1 snapshot left open") {
		t.Fatalf("Close with an iterator and a snapshot open: %v", err)
	}
	if open.Next() || !errors.Is(open.Error(), ErrClosed) {
		t.Errorf("iterator opened before Close: Next after Close gave error %v, want ErrClosed", open.Error())
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := db.Put([]byte("a"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Put: %v", err)
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get: %v", err)
	}
	if err := db.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush: %v", err)
	}
	if err := db.Compact(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact: %v", err)
	}
	if err := db.WaitForCompactions(); !errors.Is(err, ErrClosed) {
		t.Errorf("WaitForCompactions: %v", err)
	}
	if it := db.NewIterator(nil); it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Errorf("iterator after close: %v", it.Error())
	}
	if _, err := db.NewSnapshot().Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("new snapshot Get: %v", err)
	}
	if _, err := snap.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("old snapshot Get: %v", err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	if _, err := Open(dir, nil); err == nil {
		t.Fatal("second Open of the same directory succeeded")
	}
	db.Close()
	db = mustOpen(t, dir, nil)
	db.Close()
}

func TestBatchLaterOperationWins(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	b := NewBatch()
	b.Put([]byte("k"), []byte("1"))
	b.Delete([]byte("k"))
	b.Put([]byte("k"), []byte("2"))
	b.Put([]byte("j"), []byte("1"))
	b.Delete([]byte("j"))
	if b.Len() != 5 {
		t.Fatalf("Len=%d", b.Len())
	}
	if err := db.Write(b); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Get([]byte("k")); string(v) != "2" {
		t.Fatalf("k=%q", v)
	}
	if _, err := db.Get([]byte("j")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("j: %v", err)
	}
	b.Reset()
	if b.Len() != 0 {
		t.Fatal("Reset kept operations")
	}
}
