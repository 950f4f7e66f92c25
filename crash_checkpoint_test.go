package bloomkv

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestCrashCheckpointEveryOperation cuts a Checkpoint at each of its file
// operations, by kill -9 and by power loss, of a writable database and of
// a read-only one (whose checkpoint writes the logs' writes to a table of
// its own). At every point the source must still open with every batch,
// and the checkpoint directory must either be no database at all (Open
// says so with fs.ErrNotExist) or hold exactly every batch: never a
// database that opens with less.
func TestCrashCheckpointEveryOperation(t *testing.T) {
	w := crashOpenWAL{"sync", WALSync, false}
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("readonly=%v", readOnly), func(t *testing.T) {
			var first *vfs.MemFS
			mem := vfs.NewMem()
			writeKilledImage(t, mem, "/db", w, func() { first = mem.ProcessCrashClone() })
			ops, complete := 0, 0
			for n := 1; ; n++ {
				base := first.ProcessCrashClone()
				if readOnly {
					// A read-only open replays the logs and changes nothing:
					// leave them unflushed for the checkpoint to write.
				} else {
					db := mustOpen(t, "/db", crashOpenOptions(base, w))
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
				}
				efs := vfs.NewErrorFS(base)
				o := crashOpenOptions(efs, w)
				o.ReadOnly = readOnly
				db := mustOpen(t, "/db", o)
				var kill, power *vfs.MemFS
				var mu sync.Mutex
				seen, active := 0, true
				addHook(efs, writeOps, func(vfs.Op, string) {
					mu.Lock()
					defer mu.Unlock()
					if active {
						if seen++; seen == n {
							kill, power = base.ProcessCrashClone(), base.CrashClone()
						}
					}
				})
				if err := db.Checkpoint("/ckpt"); err != nil {
					t.Fatalf("Checkpoint: %v", err)
				}
				mu.Lock()
				active = false
				mu.Unlock()
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if kill == nil {
					ops = n - 1
					break
				}
				for _, img := range []struct {
					what string
					fs   *vfs.MemFS
				}{{"kill -9", kill}, {"power loss", power}} {
					what := fmt.Sprintf("%s at operation %d of Checkpoint", img.what, n)
					checkMemImage(t, what+": source", img.fs, w, crashOpenBatches, crashOpenBatches)
					co := crashOpenOptions(img.fs, w)
					co.ReadOnly = true
					cdb, err := Open("/ckpt", co)
					if err != nil {
						if !errors.Is(err, os.ErrNotExist) {
							t.Fatalf("%s: the checkpoint neither opens nor is absent: %v", what, err)
						}
						continue
					}
					verifyPrefix(t, cdb, crashOpenBatches, crashOpenBatches)
					if err := cdb.Close(); err != nil {
						t.Fatal(err)
					}
					complete++
				}
			}
			if ops < 3 || complete == 0 {
				t.Fatalf("Checkpoint made %d file operations, %d images held a complete checkpoint: the sweep tested nothing", ops, complete)
			}
			t.Logf("cut Checkpoint at each of its %d operations; %d of %d images held a complete checkpoint, the rest none", ops, complete, 2*ops)
		})
	}
}
