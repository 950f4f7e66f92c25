package bloomkv

import (
	"errors"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestFaultEveryOperationOfOpen fails each file operation of a recovery in
// turn: the 1st, 2nd, 3rd, ... until Open runs clean. The image to recover
// has tables, two live logs (one sealed, one newest) and a torn tail. Each
// Open either fails with the injected error or yields exactly the
// acknowledged writes; then a power-loss image of what the failed Open left
// and the healed directory both open without faults and yield them all.
func TestFaultEveryOperationOfOpen(t *testing.T) {
	src := vfs.NewMem()
	opts := &Options{FS: src, Sync: true, MemtableSize: 64 << 10}
	db := mustOpen(t, "/db", opts)
	for id := 1; id <= 30; id++ {
		if err := db.Write(genBatch(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil { // some writes in a table
		t.Fatal(err)
	}
	db.mu.Lock()
	db.mu.flushPaused = true
	db.mu.Unlock()
	for id := 31; id <= 60; id++ {
		if id == 46 {
			if err := db.enqueue(nil); err != nil { // a second live log
				t.Fatal(err)
			}
		}
		if err := db.Write(genBatch(id)); err != nil {
			t.Fatal(err)
		}
	}
	img := src.ProcessCrashClone()
	db.Close()
	// Tear the last write, as a kill -9 in the middle of it would.
	newest := filesOfType(t, img, base.FileTypeLog)
	slices.Sort(newest)
	img = withDamage(t, img, newest[len(newest)-1], func(b []byte) []byte { return b[:len(b)-3] })
	if err := vfs.SyncDir(img, "/db"); err != nil { // the damage survives a power loss too
		t.Fatal(err)
	}
	const acked = 59
	all := func(int) bool { return true }

	const limit = 2000
	n := 1
	for ; n <= limit; n++ {
		mem := img.ProcessCrashClone()
		efs := vfs.NewErrorFS(mem)
		efs.FailAfter(n)
		db, err := Open("/db", &Options{FS: efs, Sync: true, MemtableSize: 64 << 10})
		injected := efs.Injected() > 0
		efs.Heal() // faults in Open only, not in the reads that check it
		if err != nil {
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("n=%d: Open failed with %v, not the injected error", n, err)
			}
		} else {
			verifyBatches(t, db, acked, all)
			if err := db.Close(); err != nil {
				t.Fatalf("n=%d: Close: %v", n, err)
			}
		}
		for name, fs := range map[string]*vfs.MemFS{"power loss": mem.CrashClone(), "healed": mem} {
			db, err := Open("/db", &Options{FS: fs})
			if err != nil {
				t.Fatalf("n=%d (%s): reopen: %v", n, name, err)
			}
			verifyBatches(t, db, acked, all)
			checkInvariants(t, db)
			if err := db.Close(); err != nil {
				t.Fatalf("n=%d (%s): close: %v", n, name, err)
			}
		}
		if !injected {
			break
		}
	}
	if n > limit {
		t.Fatalf("Open still failed after %d operations", limit)
	}
	t.Logf("failed each of recovery's %d operations in turn", n-1)
}
