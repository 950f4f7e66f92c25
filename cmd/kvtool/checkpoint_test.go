package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestCheckCheckpointsUnderLoad takes checkpoints of a database while
// writers keep writing (flushes and compactions run meanwhile), of a
// read-only open of it, and of a read-only open of a checkpoint, and checks
// each: a checkpoint is a healthy database, so check must find no error
// and no warning -- in particular it must read the checkpoint's log number
// as Open does (a checkpoint has no log). Each checkpoint must then open.
func TestCheckCheckpointsUnderLoad(t *testing.T) {
	root := t.TempDir()
	opts := bloomkv.Options{MemtableSize: 16 << 10, BlockSize: 512, L0CompactionThreshold: 2}
	db, err := bloomkv.Open(filepath.Join(root, "db"), &opts)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := fmt.Appendf(nil, "w%d-key%05d", w, i%2000)
				var err error
				switch i % 11 {
				case 5:
					err = db.Delete(k)
				case 10:
					err = db.DeleteRange(k, fmt.Appendf(nil, "w%d-key%05d", w, i%2000+7))
				default:
					err = db.Put(k, fmt.Appendf(nil, "value-%d-%d", w, i))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var dirs []string
	for i := range 5 {
		time.Sleep(30 * time.Millisecond) // the writers get ahead: every checkpoint differs
		cp := filepath.Join(root, fmt.Sprintf("cp%d", i))
		if err := db.Checkpoint(cp); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, cp)
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Read-only sources: the database (its newest writes only in its log)
	// and a checkpoint.
	ro := opts
	ro.ReadOnly = true
	for i, src := range []string{filepath.Join(root, "db"), dirs[0]} {
		rdb, err := bloomkv.Open(src, &ro)
		if err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(root, fmt.Sprintf("ro-cp%d", i))
		if err := rdb.Checkpoint(cp); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Close(); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, cp)
	}

	for _, cp := range dirs {
		rep := check(vfs.Default, cp)
		if rep.Errors > 0 || rep.Warnings > 0 {
			t.Errorf("check %s: %d errors, %d warnings: %v", filepath.Base(cp), rep.Errors, rep.Warnings, rep.Findings)
		}
		cdb, err := bloomkv.Open(cp, &bloomkv.Options{ErrorIfNotExists: true})
		if err != nil {
			t.Fatalf("open %s: %v", filepath.Base(cp), err)
		}
		if err := cdb.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
