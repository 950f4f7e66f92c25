package bloomkv

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// openMode opens a fresh in-memory database in mode.
func openMode(t *testing.T, mode WALMode, delay time.Duration) (*vfs.MemFS, *DB) {
	t.Helper()
	fs := vfs.NewMem()
	return fs, mustOpen(t, "/db", &Options{FS: fs, WALMode: mode, WALBufferedDelay: delay})
}

// recovered opens a crash image and returns how many batches (a prefix) it
// holds; the prefix must cover at least min.
func recovered(t *testing.T, img *vfs.MemFS, min, max int) int {
	t.Helper()
	db, err := Open("/db", &Options{FS: img})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return verifyPrefix(t, db, min, max)
}

func writeBatches(t *testing.T, db *DB, from, to int, o *WriteOptions) {
	t.Helper()
	for id := from; id <= to; id++ {
		if err := db.Apply(genBatch(id), o); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWALModePromises checks what each mode promises after a kill -9
// (ProcessCrashClone) and a power loss (CrashClone) of a running database.
func TestWALModePromises(t *testing.T) {
	const n = 50
	t.Run("write-through", func(t *testing.T) {
		fs, db := openMode(t, WALWriteThrough, 0)
		defer db.Close()
		writeBatches(t, db, 1, n, nil)
		if p := recovered(t, fs.ProcessCrashClone(), n, n); p != n {
			t.Fatalf("kill -9 kept %d of %d acknowledged batches", p, n)
		}
		recovered(t, fs.CrashClone(), 0, n) // a power loss: a prefix
	})
	t.Run("sync", func(t *testing.T) {
		fs, db := openMode(t, WALSync, 0)
		defer db.Close()
		writeBatches(t, db, 1, n, nil)
		if p := recovered(t, fs.CrashClone(), n, n); p != n {
			t.Fatalf("power loss kept %d of %d synced batches", p, n)
		}
	})
	t.Run("buffered", func(t *testing.T) {
		fs, db := openMode(t, WALBuffered, time.Second) // no deadline during the test (it takes milliseconds)
		defer db.Close()
		writeBatches(t, db, 1, n, nil)
		// The batches wait in memory: a kill -9 may lose them, but what it
		// keeps is a prefix.
		if p := recovered(t, fs.ProcessCrashClone(), 0, n); p == n {
			t.Fatalf("kill -9 kept all %d batches with a second's buffering: nothing was buffered", n)
		}
		// SyncWAL makes them durable, even against a power loss.
		if err := db.SyncWAL(); err != nil {
			t.Fatal(err)
		}
		if p := recovered(t, fs.CrashClone(), n, n); p != n {
			t.Fatalf("after SyncWAL a power loss kept %d of %d", p, n)
		}
		// A synced write makes itself and everything before it durable.
		writeBatches(t, db, n+1, n+10, nil)
		writeBatches(t, db, n+11, n+11, &WriteOptions{Sync: true})
		if p := recovered(t, fs.CrashClone(), n+11, n+11); p != n+11 {
			t.Fatalf("after a synced write a power loss kept %d of %d", p, n+11)
		}
	})
	t.Run("buffered deadline", func(t *testing.T) {
		fs, db := openMode(t, WALBuffered, time.Millisecond)
		defer db.Close()
		writeBatches(t, db, 1, n, nil)
		// Within the delay the batches reach the OS: a kill -9 then keeps
		// them all. Polled, not timed: it fails only if they never arrive.
		for i := 0; ; i++ {
			img := fs.ProcessCrashClone()
			db2, err := Open("/db", &Options{FS: img})
			if err != nil {
				t.Fatal(err)
			}
			p := verifyPrefix(t, db2, 0, n)
			db2.Close()
			if p == n {
				break
			}
			if i > 5000 {
				t.Fatalf("buffered writes never reached the log: %d of %d after 5 s", p, n)
			}
			time.Sleep(time.Millisecond)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		fs, db := openMode(t, WALDisabled, 0)
		writeBatches(t, db, 1, n, nil)
		if err := db.Apply(genBatch(n+1), &WriteOptions{Sync: true}); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("a synced write without a log: %v", err)
		}
		if p := recovered(t, fs.ProcessCrashClone(), 0, 0); p != 0 {
			t.Fatalf("kill -9 without a log kept %d unflushed batches", p)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if p := recovered(t, fs.CrashClone(), n, n); p != n {
			t.Fatalf("after Flush a power loss kept %d of %d", p, n)
		}
		writeBatches(t, db, n+1, 2*n, nil)
		// Close flushes: nothing is lost by a clean shutdown.
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if p := recovered(t, fs, 2*n, 2*n); p != 2*n {
			t.Fatalf("after Close %d of %d", p, 2*n)
		}
	})
}

// TestWALModeCloseAndFlushAreDurable: in every mode, Close and Flush leave
// every acknowledged write durable against a power loss.
func TestWALModeCloseAndFlushAreDurable(t *testing.T) {
	for _, mode := range []WALMode{WALWriteThrough, WALBuffered, WALSync, WALDisabled} {
		t.Run(mode.String(), func(t *testing.T) {
			fs, db := openMode(t, mode, time.Second)
			writeBatches(t, db, 1, 30, nil)
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if p := recovered(t, fs.CrashClone(), 30, 30); p != 30 {
				t.Fatalf("after Flush a power loss kept %d of 30", p)
			}
			writeBatches(t, db, 31, 60, nil)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if p := recovered(t, fs.CrashClone(), 60, 60); p != 60 {
				t.Fatalf("after Close a power loss kept %d of 60", p)
			}
		})
	}
}

func TestWALModeOptions(t *testing.T) {
	for _, o := range []*Options{
		{Sync: true, WALMode: WALBuffered},
		{Sync: true, WALMode: WALDisabled},
		{WALMode: 9},
		{WALBufferedDelay: -time.Millisecond},
	} {
		o.FS = vfs.NewMem()
		if _, err := Open("/db", o); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%+v: Open = %v, want ErrInvalidArgument", o, err)
		}
	}
	o, err := (&Options{Sync: true}).withDefaults()
	if err != nil || o.WALMode != WALSync {
		t.Fatalf("Sync: mode %s, %v", o.WALMode, err)
	}
	if got := fmt.Sprint(WALBuffered); got != "buffered" {
		t.Fatalf("WALBuffered prints %q", got)
	}
}
