package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/vfs"
)

// repairWriteOps are the operations that change a file system.
var repairWriteOps = []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpRemove, vfs.OpLink, vfs.OpMkdirAll}

// TestRepairCrashEveryOperation cuts a repair at each of its file
// operations, by kill -9 and by power loss (on the in-memory file system).
// Repair changes nothing before its commit, so each image must be either
// the damaged database as found -- which a second repair then repairs -- or
// the repaired one: in both cases a repair run on the image succeeds and
// the database then holds exactly the model, and an image that Open takes
// without a repair holds exactly the model too (never a database that
// opens with less).
func TestRepairCrashEveryOperation(t *testing.T) {
	dir, m := buildModelDB(t, 3, repairShape)
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
	first := memCopyOf(t, dir, "/db")
	ops, openedDirectly := 0, 0
	for n := 1; ; n++ {
		base := first.ProcessCrashClone()
		efs := vfs.NewErrorFS(base)
		var kill, power *vfs.MemFS
		var mu sync.Mutex
		seen := 0
		for _, op := range repairWriteOps {
			efs.Inject(vfs.Rule{Ops: []vfs.Op{op}, Match: func(string) bool {
				mu.Lock()
				defer mu.Unlock()
				if seen++; seen == n {
					kill, power = base.ProcessCrashClone(), base.CrashClone()
				}
				return false
			}})
		}
		if rep := repair(efs, "/db"); !rep.OK {
			t.Fatalf("repair of the damaged database failed: %s", rep.Error)
		}
		if kill == nil {
			ops = n - 1
			break
		}
		for _, img := range []struct {
			what string
			fs   *vfs.MemFS
		}{{"kill -9", kill}, {"power loss", power}} {
			what := fmt.Sprintf("%s at operation %d of repair", img.what, n)
			if db, err := bloomkv.Open("/db", &bloomkv.Options{FS: img.fs.ProcessCrashClone(), ReadOnly: true}); err == nil {
				_ = db.Close()
				verifyModelOpts(t, "/db", &bloomkv.Options{FS: img.fs.ProcessCrashClone()}, m, nil)
				openedDirectly++
			}
			if rep := repair(img.fs, "/db"); !rep.OK {
				t.Fatalf("%s: a second repair failed: %s", what, rep.Error)
			}
			verifyModelOpts(t, "/db", &bloomkv.Options{FS: img.fs}, m, nil)
		}
	}
	if ops < 5 {
		t.Fatalf("repair made only %d file operations: the sweep tested nothing", ops)
	}
	t.Logf("cut repair at each of its %d file operations; %d of %d images opened without a second repair", ops, openedDirectly, 2*ops)
}

// memCopyOf copies the regular files of the directory dir into a new
// in-memory file system at memDir, synced (durable).
func memCopyOf(t *testing.T, dir, memDir string) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	if err := mem.MkdirAll(memDir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := mem.Create(mem.PathJoin(memDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := vfs.SyncDir(mem, memDir); err != nil {
		t.Fatal(err)
	}
	return mem
}
