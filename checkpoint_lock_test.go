package bloomkv

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// roFS is a file system mounted read-only: every operation that would
// create, change or remove a file fails with EROFS, as the OS reports it.
type roFS struct{ vfs.FS }

func (roFS) erofs(op, name string) error {
	return &os.PathError{Op: op, Path: name, Err: syscall.EROFS}
}
func (f roFS) Create(name string) (vfs.File, error) { return nil, f.erofs("open", name) }
func (f roFS) Remove(name string) error             { return f.erofs("remove", name) }
func (f roFS) Rename(o, _ string) error             { return f.erofs("rename", o) }
func (f roFS) Link(o, _ string) error               { return f.erofs("link", o) }
func (f roFS) MkdirAll(dir string, _ os.FileMode) error {
	if _, err := f.Stat(dir); err == nil {
		return nil
	}
	return f.erofs("mkdir", dir)
}

func (f roFS) Lock(name string) (io.Closer, error) {
	if _, err := f.Stat(name); err != nil {
		return nil, f.erofs("open", name) // O_CREATE on a read-only mount
	}
	return f.FS.Lock(name)
}

// TestReadOnlyWithoutLockOnReadOnlyFS: where no LOCK exists and none can
// be created (a read-only file system), a read-only open still opens,
// without a lock: no writer can open the directory either.
func TestReadOnlyWithoutLockOnReadOnlyFS(t *testing.T) {
	mem := vfs.NewMem()
	o := tinyOptions(mem)
	db := mustOpen(t, "/db", o)
	model := fillModel(t, db, 500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove("/db/LOCK"); err != nil {
		t.Fatal(err)
	}
	ro := *o
	ro.FS, ro.ReadOnly = roFS{mem}, true
	rdb := mustOpen(t, "/db", &ro)
	checkModel(t, rdb, model)
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("/db", &Options{FS: roFS{mem}}); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("writer Open on a read-only file system: %v, want a failure that is not ErrLocked", err)
	}
}

// TestReadOnlyWithoutLockOnReadOnlyDirectory: the same on a directory the
// process may not write. Root ignores permissions: skipped.
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

// TestCheckpointCrashImagesRefused takes a power-loss image of the file
// system at every file operation of a Checkpoint (the first one right after
// it created the directory, which is then empty) and opens each image's
// checkpoint as the Checkpoint doc says to, with ErrorIfNotExists or
// ReadOnly: each open either holds the whole checkpoint or fails, changing
// nothing; none is an empty or partial database. (A plain Open of the
// empty directory would create a new, empty database: that is what Open
// does with a directory holding no database, and why checkpoints are
// opened this way.)
func TestCheckpointCrashImagesRefused(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db := mustOpen(t, "/db", tinyOptions(efs))
	model := fillModel(t, db, 1500)
	var images []*vfs.MemFS
	efs.Inject(vfs.Rule{Match: func(path string) bool {
		if path == "/cp" || strings.HasPrefix(path, "/cp/") {
			images = append(images, mem.CrashClone()) // ErrorFS serializes rules
		}
		return false // fail nothing
	}})
	if err := db.Checkpoint("/cp"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(images) < 5 {
		t.Fatalf("only %d crash images", len(images))
	}
	complete, emptyDirs := 0, 0
	for i, img := range images {
		if names, err := img.List("/cp"); err == nil && len(names) == 0 {
			emptyDirs++
		}
		for _, mode := range []string{"ErrorIfNotExists", "ReadOnly"} {
			fsys := img.CrashClone()
			before := map[string]string{}
			if _, err := fsys.Stat("/cp"); err == nil {
				before = dirImage(t, fsys, "/cp")
			}
			o := tinyOptions(fsys)
			o.ErrorIfNotExists = mode == "ErrorIfNotExists"
			o.ReadOnly = mode == "ReadOnly"
			cdb, err := Open("/cp", o)
			if err != nil {
				after := map[string]string{}
				if _, err := fsys.Stat("/cp"); err == nil {
					after = dirImage(t, fsys, "/cp")
				}
				if !maps.Equal(before, after) {
					t.Fatalf("image %d, %s: a refused Open changed the directory: %v -> %v", i, mode,
						slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
				}
				continue
			}
			checkModel(t, cdb, model)
			if err := cdb.Close(); err != nil {
				t.Fatal(err)
			}
			complete++
		}
	}
	if emptyDirs == 0 {
		t.Fatal("no image holds the empty directory a crash right after mkdir leaves")
	}
	t.Logf("%d images: %d with an empty directory; %d opens held the whole checkpoint", len(images), emptyDirs, complete)
}
