package bloomkv

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestGetAllocations pins the read path's allocation promise: a Get of a
// present key whose block is cached allocates only the returned copy of
// the value, and a Get of an absent key allocates nothing, from the
// memtable and from tables on two levels alike.
func TestGetAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage and race instrumentation allocate")
	}
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), BlockCacheSize: 8 << 20})
	defer db.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }
	const n = 4000
	for i := 0; i < n; i += 2 {
		if err := db.Put(key(i), []byte("value")); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(nil, nil); err != nil { // the first half moves down a level
				t.Fatal(err)
			}
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, memtable := range []bool{false, true} {
		if memtable {
			for i := 1; i < 200; i += 2 { // odd keys, in the memtable only
				if err := db.Put(key(n+i), []byte("value")); err != nil {
					t.Fatal(err)
				}
			}
		}
		get := func(k []byte, want error) {
			if _, err := db.Get(k); err != want {
				t.Fatalf("Get(%s) = %v, want %v", k, err, want)
			}
		}
		keys := make([][]byte, n)
		for j := range keys {
			keys[j] = key(j)
		}
		for j := 0; j < n; j += 2 { // warm the block cache
			get(keys[j], nil)
		}
		j := 0
		if a := testing.AllocsPerRun(500, func() { get(keys[j%n], nil); j += 2 }); a > 1 {
			t.Errorf("memtable=%v: a Get of a cached present key allocates %.2f times, want 1 (the value's copy)", memtable, a)
		}
		j = 1
		if a := testing.AllocsPerRun(500, func() { get(keys[j%n], ErrNotFound); j += 2 }); a > 0 {
			t.Errorf("memtable=%v: a Get of an absent key allocates %.2f times, want 0", memtable, a)
		}
	}
}
