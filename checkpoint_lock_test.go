package bloomkv

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestCheckpointReadOnlyOpenLocksOutWriter is the scenario: a
// checkpoint is opened read-only, then a writer opens the same directory.
// The writer must fail with ErrLocked (it would write, compact and delete
// the tables the reader reads), and the reader must go on reading; once the
// reader is closed the writer gets in. On the operating system's file
// system and in memory.
func TestCheckpointReadOnlyOpenLocksOutWriter(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			var fsys vfs.FS
			root := "/"
			if name == "os" {
				fsys, root = vfs.Default, t.TempDir()
			} else {
				fsys = vfs.NewMem()
			}
			src, cp := filepath.Join(root, "db"), filepath.Join(root, "cp")
			o := tinyOptions(fsys)
			db := mustOpen(t, src, o)
			model := fillModel(t, db, 300)
			if err := db.Checkpoint(cp); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			ro := *o
			ro.ReadOnly = true
			rdb := mustOpen(t, cp, &ro)
			w, err := Open(cp, o)
			if err == nil {
				// What the issue saw: the writer compacts away the
				// reader's tables.
				_ = w.Compact(nil, nil)
				_ = w.Close()
				t.Fatal("a writer opened a checkpoint a read-only open holds")
			}
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("writer Open: %v, want ErrLocked", err)
			}
			// A second reader shares the directory.
			r2 := mustOpen(t, cp, &ro)
			checkModel(t, rdb, model)
			checkModel(t, r2, model)
			for _, r := range []*DB{rdb, r2} {
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
			}
			w = mustOpen(t, cp, o)
			checkModel(t, w, model)
			// And the other way: a writer holds it, a reader is refused.
			if r, err := Open(cp, &ro); err == nil {
				r.Close()
				t.Fatal("a read-only open succeeded while a writer holds the checkpoint")
			} else if !errors.Is(err, ErrLocked) {
				t.Fatalf("read-only Open: %v, want ErrLocked", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReadOnlyOpenCreatesOnlyLock: a read-only open of a database
// directory without a LOCK file (a copy; a checkpoint written before
// checkpoints had one) creates an empty LOCK and nothing else, so that it
// keeps writers out; Close leaves the directory as the open found it apart
// from that LOCK.
func TestReadOnlyOpenCreatesOnlyLock(t *testing.T) {
	mem := vfs.NewMem()
	o := tinyOptions(mem)
	db := mustOpen(t, "/db", o)
	model := fillModel(t, db, 1000)
	if err := db.Close(); err != nil { // the newest writes stay in the log
		t.Fatal(err)
	}
	if err := mem.Remove("/db/LOCK"); err != nil {
		t.Fatal(err)
	}
	before := dirImage(t, mem, "/db")
	ro := *o
	ro.ReadOnly = true
	rdb := mustOpen(t, "/db", &ro)
	if _, err := Open("/db", o); !errors.Is(err, ErrLocked) {
		t.Fatalf("writer Open of a directory a read-only open holds: %v, want ErrLocked", err)
	}
	checkModel(t, rdb, model)
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	after := dirImage(t, mem, "/db")
	lock, ok := after["LOCK"]
	if !ok || lock != "" {
		t.Fatalf("after a read-only open: LOCK %q (present %v), want an empty LOCK", lock, ok)
	}
	delete(after, "LOCK")
	if !maps.Equal(before, after) {
		t.Fatalf("a read-only open changed more than LOCK: %v -> %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// TestReadOnlyWithoutLockOnReadOnlyDirectory: where no LOCK exists and
// none can be created (a directory the process may not write), a read-only
// open still opens, without a lock: no writer of the same permissions can
// open the directory either. Root ignores permissions: skipped.
func TestReadOnlyWithoutLockOnReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := t.TempDir()
	o := tinyOptions(nil)
	o.FS = nil
	db := mustOpen(t, dir, o)
	model := fillModel(t, db, 500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) }) // so TempDir can remove it
	ro := *o
	ro.ReadOnly = true
	rdb := mustOpen(t, dir, &ro)
	checkModel(t, rdb, model)
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LOCK in a read-only directory: %v", fmt.Sprint(err))
	}
}
