package bloomkv

import (
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// Tests of batch.go: what a Batch holds and how DB.Write applies it.

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
