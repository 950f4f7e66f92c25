package bloomkv

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// seqWorkload is a single writer's stream of writes: write i puts key
// i%keys to the value i, and every 7th write deletes it instead. A prefix
// of n writes leaves a known state, and the state tells n back.
const seqKeys = 300

func seqKey(i int) []byte { return fmt.Appendf(nil, "key%04d", i%seqKeys) }

func seqWrite(db *DB, i int) error {
	if i%7 == 6 {
		return db.Delete(seqKey(i))
	}
	return db.Put(seqKey(i), []byte(strconv.Itoa(i)))
}

// seqModel is the state after the first n writes.
func seqModel(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		if i%7 == 6 {
			delete(m, string(seqKey(i)))
		} else {
			m[string(seqKey(i))] = strconv.Itoa(i)
		}
	}
	return m
}

// prefixLength returns the n for which contents is exactly seqModel(n),
// searching [lo, hi]; -1 if none is.
func prefixLength(contents model, lo, hi int) int {
	for n := lo; n <= hi; n++ {
		if maps.Equal(contents, seqModel(n)) {
			return n
		}
	}
	return -1
}

// TestCheckpointWhileWriting takes checkpoints while a writer keeps
// writing (flushes and compactions run all along) and opens each: it must
// hold exactly a prefix of the writes, containing every write acknowledged
// before Checkpoint was called and none begun after it returned; it must
// survive a power loss right after Checkpoint returned, and be a database
// that takes writes of its own.
func TestCheckpointWhileWriting(t *testing.T) {
	mem := vfs.NewMem()
	o := tinyOptions(mem)
	db := mustOpen(t, "/db", o)
	var acked atomic.Int64 // writes 0..acked-1 returned nil
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var writeErr error
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := seqWrite(db, i); err != nil {
				writeErr = err
				return
			}
			acked.Store(int64(i + 1))
		}
	}()
	for round := range 6 {
		waitFor(t, "writes", func() bool { return acked.Load() > int64(500*(round+1)) })
		before := int(acked.Load())
		dir := fmt.Sprintf("/cp%d", round)
		if err := db.Checkpoint(dir); err != nil {
			t.Fatal(err)
		}
		after := int(acked.Load()) + 1 // at most one write in flight
		img := mem.CrashClone()        // power lost right after Checkpoint returned

		cdb := mustOpen(t, dir, &Options{FS: img})
		checkInvariants(t, cdb)
		n := prefixLength(dbContents(t, cdb), before, after)
		if n < 0 {
			t.Fatalf("round %d: the checkpoint is no prefix of the writes between %d (acknowledged before the call) and %d", round, before, after)
		}
		// The copy is a database of its own.
		if err := cdb.Put([]byte("own"), []byte("write")); err != nil {
			t.Fatal(err)
		}
		if err := cdb.Close(); err != nil {
			t.Fatal(err)
		}
		if v, err := reopenGetDir(img, dir, "own"); err != nil || v != "write" {
			t.Fatalf("the checkpoint's own write: %q, %v", v, err)
		}
		t.Logf("round %d: checkpoint holds the first %d writes (%d acknowledged at the call, %d at the return)", round, n, before, after-1)
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if got, want := dbContents(t, db), seqModel(int(acked.Load())); !maps.Equal(got, want) {
		t.Fatal("the source lost writes")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func reopenGetDir(fsys vfs.FS, dir, key string) (string, error) {
	db, err := Open(dir, &Options{FS: fsys})
	if err != nil {
		return "", err
	}
	defer db.Close()
	v, err := db.Get([]byte(key))
	return string(v), err
}

// TestCheckpointHardLinks: on the OS the checkpoint's tables are the
// source's files, and the checkpoint outlives the source deleting them.
func TestCheckpointHardLinks(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "db"), filepath.Join(root, "cp")
	o := tinyOptions(nil)
	o.FS = nil
	// No table may go away before the links are compared.
	o.DisableAutomaticCompactions = true
	db := mustOpen(t, src, o)
	for i := range 3000 {
		if err := seqWrite(db, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(dst); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dst, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("the checkpoint holds no table")
	}
	for _, p := range tables {
		a, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Stat(filepath.Join(src, filepath.Base(p)))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(a, b) {
			t.Fatalf("%s is not a hard link of the source's table", p)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dst, "*.log")); len(names) > 0 {
		t.Fatalf("the checkpoint holds logs %v: it should need none", names)
	}
	// The source compacts everything away; the checkpoint keeps its data.
	for i := 3000; i < 4000; i++ {
		if err := seqWrite(db, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cdb := mustOpen(t, dst, &Options{ReadOnly: true})
	if got := dbContents(t, cdb); !maps.Equal(got, seqModel(3000)) {
		t.Fatal("the checkpoint does not hold the first 3000 writes")
	}
	if err := cdb.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointCopiesWhenLinkFails: where links fail (another file
// system) the tables are copied.
func TestCheckpointCopiesWhenLinkFails(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db := mustOpen(t, "/db", tinyOptions(efs))
	for i := range 2000 {
		if err := seqWrite(db, i); err != nil {
			t.Fatal(err)
		}
	}
	efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpLink}, Sticky: true})
	if err := db.Checkpoint("/other/cp"); err != nil {
		t.Fatal(err)
	}
	if efs.Injected() == 0 {
		t.Fatal("no link was tried")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cdb := mustOpen(t, "/other/cp", &Options{FS: mem.CrashClone()})
	if got := dbContents(t, cdb); !maps.Equal(got, seqModel(2000)) {
		t.Fatal("the copied checkpoint does not hold every write")
	}
	cdb.Close()
}

// TestCheckpointRefusesExistingDir: a directory holding anything, the
// database's own included, is refused and left alone.
func TestCheckpointRefusesExistingDir(t *testing.T) {
	mem := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: mem})
	defer db.Close()
	if err := mem.MkdirAll("/full", 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := mem.Create("/full/x")
	f.Close()
	for _, dir := range []string{"/full", "/db"} {
		if err := db.Checkpoint(dir); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("Checkpoint(%s): %v, want fs.ErrExist", dir, err)
		}
	}
	if names, _ := mem.List("/full"); len(names) != 1 {
		t.Fatalf("a refused checkpoint changed the directory: %v", names)
	}
	if err := db.Checkpoint(""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Checkpoint(\"\"): %v", err)
	}
}

// TestCheckpointFailureCleansUp: a checkpoint that fails removes what it
// created, and nothing else.
func TestCheckpointFailureCleansUp(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	db := mustOpen(t, "/db", tinyOptions(efs))
	defer db.Close()
	for i := range 1000 {
		if err := seqWrite(db, i); err != nil {
			t.Fatal(err)
		}
	}
	efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpRename}, Match: func(p string) bool { return filepath.Dir(p) == "/cp" }})
	if err := db.Checkpoint("/cp"); err == nil {
		t.Fatal("Checkpoint succeeded with CURRENT's rename failing")
	}
	if _, err := mem.Stat("/cp"); !errors.Is(err, os.ErrNotExist) {
		names, _ := mem.List("/cp")
		t.Fatalf("a failed checkpoint left /cp: %v", names)
	}
	if err := db.Checkpoint("/cp"); err != nil {
		t.Fatalf("a second try: %v", err)
	}
}

// TestCheckpointReadOnly: a read-only database checkpoints what its logs
// hold into a table of the copy, and writes nothing to its own directory.
func TestCheckpointReadOnly(t *testing.T) {
	mem := vfs.NewMem()
	db := mustOpen(t, "/db", tinyOptions(mem))
	for i := range 1500 {
		if err := seqWrite(db, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil { // the last writes stay in the log
		t.Fatal(err)
	}
	if len(filesOfType(t, mem, base.FileTypeLog)) == 0 {
		t.Fatal("no log")
	}
	before := dirImage(t, mem, "/db")
	o := tinyOptions(mem)
	o.ReadOnly = true
	rdb := mustOpen(t, "/db", o)
	if err := rdb.Checkpoint("/cp"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirImage(t, mem, "/db"); !maps.Equal(before, after) {
		t.Fatal("checkpointing a read-only database changed its directory")
	}
	cdb := mustOpen(t, "/cp", &Options{FS: mem.CrashClone()})
	checkInvariants(t, cdb)
	if got := dbContents(t, cdb); !maps.Equal(got, seqModel(1500)) {
		t.Fatal("the checkpoint of a read-only database lacks writes")
	}
	cdb.Close()
}
