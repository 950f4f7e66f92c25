package bloomkv

import (
	"bytes"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

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
