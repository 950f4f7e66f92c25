package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// fillModel writes n keys (every 5th deleted again) to db and returns what
// it holds.
func fillModel(t *testing.T, db *DB, n int) map[string]string {
	t.Helper()
	model := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("k%05d", i*37%n), fmt.Sprintf("v%d-%s", i, strings.Repeat("x", 30))
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		model[k] = v
		if i%5 == 0 {
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
		}
	}
	return model
}

// checkModel compares db with model through Get and a full scan.
func checkModel(t *testing.T, db *DB, model map[string]string) {
	t.Helper()
	for k, v := range model {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != v {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	it := db.NewIterator(nil)
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
		if model[string(it.Key())] != string(it.Value()) {
			t.Fatalf("scan: %s = %q, want %q", it.Key(), it.Value(), model[string(it.Key())])
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(maps.Keys(model)); !slices.Equal(keys, want) {
		t.Fatalf("scan found %d keys, the model holds %d", len(keys), len(want))
	}
}

// dirImage returns every file under dir in fs with its contents.
func dirImage(t *testing.T, fsys vfs.FS, dir string) map[string]string {
	t.Helper()
	img := map[string]string{}
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := fsys.PathJoin(dir, n)
		if fi, err := fsys.Stat(p); err == nil && fi.IsDir() {
			for k, v := range dirImage(t, fsys, p) {
				img[n+"/"+k] = v
			}
			continue
		}
		img[n] = string(readMemFile(t, fsys, p))
	}
	return img
}

// checkRefusesWrites checks that every writing call returns ErrReadOnly.
func checkRefusesWrites(t *testing.T, db *DB) {
	t.Helper()
	b := NewBatch()
	b.Put([]byte("a"), []byte("b"))
	for name, err := range map[string]error{
		"Put":     db.Put([]byte("a"), []byte("b")),
		"Delete":  db.Delete([]byte("a")),
		"Write":   db.Write(b),
		"Apply":   db.Apply(b, &WriteOptions{Sync: true}),
		"Flush":   db.Flush(),
		"Compact": db.Compact(nil, nil),
		"SyncWAL": db.SyncWAL(),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only database: %v, want ErrReadOnly", name, err)
		}
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Errorf("WaitForCompactions: %v", err)
	}
}

// TestReadOnlyWritesNothing opens a killed database (tables, unflushed
// logs, a torn tail) read-only through a file system that fails every
// operation that could change anything: it must see every acknowledged
// write, refuse writes, and leave every byte as it was.
func TestReadOnlyWritesNothing(t *testing.T) {
	mem := vfs.NewMem()
	o := tinyOptions(mem)
	db := mustOpen(t, "/db", o)
	model := fillModel(t, db, 3000)
	img := mem.ProcessCrashClone() // killed: the newest log holds unflushed writes
	_ = db.Close()

	for _, mode := range []WALRecoveryMode{WALRecoverTolerateTornTail, WALRecoverPointInTime} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := img.ProcessCrashClone()
			// A torn tail on the newest log: dropped in memory only.
			newest := newestLog(t, fsys)
			appendToFile(t, fsys, newest, []byte{1, 2, 3, 4, 5, 6, 7})
			before := dirImage(t, fsys, "/db")

			efs := vfs.NewErrorFS(fsys)
			efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpCreate, vfs.OpRemove, vfs.OpRename, vfs.OpMkdirAll,
				vfs.OpWrite, vfs.OpSync, vfs.OpOpenDir}, Sticky: true})
			ro := tinyOptions(efs)
			ro.ReadOnly, ro.WALRecovery = true, mode
			ro.Logger = slog.New(slog.DiscardHandler) // point-in-time warns of the drop
			rdb := mustOpen(t, "/db", ro)
			checkModel(t, rdb, model)
			checkRefusesWrites(t, rdb)
			if m := rdb.Metrics(); m.WALRecoveryDroppedBytes != 7 {
				t.Errorf("dropped %d bytes, want the 7 appended", m.WALRecoveryDroppedBytes)
			}
			if err := rdb.Close(); err != nil {
				t.Fatal(err)
			}
			if n := efs.Injected(); n > 0 {
				t.Fatalf("a read-only open tried %d writing operations", n)
			}
			if after := dirImage(t, fsys, "/db"); !maps.Equal(before, after) {
				t.Fatalf("the directory changed: %v -> %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
		})
	}
}

// newestLog returns the path of the newest log in /db.
func newestLog(t *testing.T, fsys vfs.FS) string {
	t.Helper()
	names := filesOfType(t, fsys, base.FileTypeLog)
	if len(names) == 0 {
		t.Fatal("no log")
	}
	slices.Sort(names)
	return "/db/" + names[len(names)-1]
}

// appendToFile appends p to a MemFS file (rewriting it).
func appendToFile(t *testing.T, fsys vfs.FS, name string, p []byte) {
	t.Helper()
	data := readMemFile(t, fsys, name)
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(data, p...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestReadOnlyLocking: read-only opens share a directory, and exclude a
// writer both ways.
func TestReadOnlyLocking(t *testing.T) {
	mem := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: mem})
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("/db", &Options{FS: mem, ReadOnly: true}); err == nil {
		t.Fatal("a read-only open succeeded while a writer holds the directory")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r1 := mustOpen(t, "/db", &Options{FS: mem, ReadOnly: true})
	r2 := mustOpen(t, "/db", &Options{FS: mem, ReadOnly: true})
	if _, err := Open("/db", &Options{FS: mem}); err == nil {
		t.Fatal("a writer opened a directory read-only opens hold")
	}
	for _, r := range []*DB{r1, r2} {
		if v, err := r.Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("Get = %q, %v", v, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db = mustOpen(t, "/db", &Options{FS: mem})
	db.Close()
}

// TestReadOnlyOnReadOnlyDirectory opens a database in a directory nobody
// may write (chmod -w, the files too). Root ignores permissions: skipped.
func TestReadOnlyOnReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := t.TempDir()
	o := tinyOptions(nil)
	o.FS = nil
	db := mustOpen(t, dir, o)
	model := fillModel(t, db, 2000)
	// Close leaves the memtable's writes in the newest log: the read-only
	// open must replay them.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	setWritable := func(on bool) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o444)
		if on {
			mode = 0o644
		}
		for _, e := range entries {
			if err := os.Chmod(filepath.Join(dir, e.Name()), mode); err != nil {
				t.Fatal(err)
			}
		}
		if on {
			err = os.Chmod(dir, 0o755)
		} else {
			err = os.Chmod(dir, 0o555)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	setWritable(false)
	defer setWritable(true)
	if _, err := Open(dir, o); err == nil {
		t.Fatal("a writing open succeeded in a read-only directory")
	}
	ro := *o
	ro.ReadOnly = true
	rdb := mustOpen(t, dir, &ro)
	checkModel(t, rdb, model)
	checkRefusesWrites(t, rdb)
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestErrorIfExistsAndNotExists: each option refuses its case and creates
// nothing when it does.
func TestErrorIfExistsAndNotExists(t *testing.T) {
	mem := vfs.NewMem()
	for _, o := range []*Options{{FS: mem, ErrorIfNotExists: true}, {FS: mem, ReadOnly: true}} {
		_, err := Open("/missing", o)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open of a missing directory: %v, want fs.ErrNotExist", err)
		}
		if _, err := mem.Stat("/missing"); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a refused Open created the directory")
		}
	}
	if err := mem.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Open("/empty", &Options{FS: mem, ErrorIfNotExists: true})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "ErrorIfNotExists") {
		t.Fatalf("Open of an empty directory: %v", err)
	}
	if names, _ := mem.List("/empty"); len(names) > 0 {
		t.Fatalf("a refused Open left %v", names)
	}

	db := mustOpen(t, "/db", &Options{FS: mem, ErrorIfExists: true}) // creates it
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirImage(t, mem, "/db")
	_, err = Open("/db", &Options{FS: mem, ErrorIfExists: true})
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "ErrorIfExists") {
		t.Fatalf("Open of an existing database with ErrorIfExists: %v", err)
	}
	if after := dirImage(t, mem, "/db"); !maps.Equal(before, after) {
		t.Fatal("a refused Open changed the directory")
	}
	db = mustOpen(t, "/db", &Options{FS: mem, ErrorIfNotExists: true})
	db.Close()

	_, err = Open("/db", &Options{FS: mem, ErrorIfExists: true, ErrorIfNotExists: true})
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("both options: %v, want ErrInvalidArgument", err)
	}
}

// TestReadOnlySnapshotsAndIterators: reads of every kind work read-only,
// including the newest writes that only the logs hold.
func TestReadOnlySnapshotsAndIterators(t *testing.T) {
	mem := vfs.NewMem()
	db := mustOpen(t, "/db", tinyOptions(mem))
	model := fillModel(t, db, 500)
	if err := db.Put([]byte("zz-last"), []byte("only in the log")); err != nil {
		t.Fatal(err)
	}
	model["zz-last"] = "only in the log"
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	o := tinyOptions(mem)
	o.ReadOnly = true
	rdb := mustOpen(t, "/db", o)
	defer rdb.Close()
	s := rdb.NewSnapshot()
	defer s.Close()
	if v, err := s.Get([]byte("zz-last")); err != nil || !bytes.Equal(v, []byte("only in the log")) {
		t.Fatalf("snapshot Get = %q, %v", v, err)
	}
	it := s.NewIterator(&IterOptions{LowerBound: []byte("zz")})
	if !it.First() || string(it.Key()) != "zz-last" {
		t.Fatalf("iterator: %q", it.Key())
	}
	it.Close()
	checkModel(t, rdb, model)
}

// TestReadOnlyReplaysRangeDeletions: a read-only Open replays a log
// holding a range deletion into its in-memory memtable, and honours it.
func TestReadOnlyReplaysRangeDeletions(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs})
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteRange([]byte("b"), []byte("d")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // the writes stay in the log
		t.Fatal(err)
	}
	ro := mustOpen(t, "/db", &Options{FS: fs, ReadOnly: true})
	defer ro.Close()
	for k, want := range map[string]error{"a": nil, "b": ErrNotFound, "c": ErrNotFound, "d": nil} {
		if _, err := ro.Get([]byte(k)); err != want {
			t.Errorf("read-only Get(%q) = %v, want %v", k, err, want)
		}
	}
}
