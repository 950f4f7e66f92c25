package bloomkv

import (
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestGetLoadsSequenceAfterReadState: a read for "now" pins the read
// state first and loads the sequence second. Between the two, a newer
// version of the key is written, flushed and compacted (which drops the
// older version, no snapshot protecting it); the read must still see a
// value: the newer version through the pinned memtable, since the sequence
// is loaded after it. (The reverse order returned ErrNotFound here.)
func TestGetLoadsSequenceAfterReadState(t *testing.T) {
	mem := vfs.NewMem()
	opts := tinyOptions(mem)
	opts.DisableAutomaticCompactions = true
	db := mustOpen(t, "/db", opts)
	defer db.Close()
	key := []byte("k")
	if err := db.Put(key, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}

	s, slot := db.loadReadState() // a Get's first load ...
	defer s.unref(slot)
	// ... the Get goroutine is descheduled here ...
	if err := db.Put(key, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil { // flush + merge: v1 is dropped
		t.Fatal(err)
	}
	seq := db.versions.VisibleSeq() // ... and resumes
	got, err := db.getFrom(db.reads.at(slot), slot, s, key, seq)
	if err != nil || string(got) != "v2" {
		t.Fatalf("Get of a key present at every instant = %q, %v; want v2", got, err)
	}
}
