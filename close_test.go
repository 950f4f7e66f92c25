package bloomkv

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestCloseWaitsForManualCompact: Close returns while a manual
// Compact is still running; the Compact then installs its edit on a closed
// DB (nil manifest writer -> panic), after the LOCK was released.
func TestCloseWaitsForManualCompact(t *testing.T) {
	mem := vfs.NewMem()
	hfs := &syncHookFS{FS: mem}
	opts := tinyOptions(hfs)
	opts.DisableAutomaticCompactions = true
	regions := newRegionTracker()
	opts.testHooks = regions.hooks()
	db := mustOpen(t, "/db", opts)
	for round := 0; round < 2; round++ {
		for i := 0; i < 20; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("v%d", round))); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	reached := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hfs.onSync = func(name string) {
		// Block the first compaction output's sync (table Finish).
		if strings.HasSuffix(name, ".sst") && regions.made(causeCompaction, name) {
			once.Do(func() {
				close(reached)
				<-release
			})
		}
	}

	type result struct {
		err   error
		panic any
	}
	compactDone := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				compactDone <- result{panic: p}
			}
		}()
		compactDone <- result{err: db.Compact(nil, nil)}
	}()
	<-reached

	closeDone := make(chan error, 1)
	go func() { closeDone <- db.Close() }()
	closedEarly := false
	select {
	case err := <-closeDone:
		closedEarly = true
		t.Logf("Close returned (%v) while Compact was still running", err)
	case <-time.After(500 * time.Millisecond):
	}
	if closedEarly {
		// The directory is free again: a second DB can open it while the
		// first one's Compact is still going to write and delete files.
		db2, err := Open("/db", opts)
		if err == nil {
			t.Logf("a second Open succeeded while the first DB's Compact still runs")
			hfs.onSync = nil
			defer db2.Close()
		}
	}
	close(release)
	var r result
	select {
	case r = <-compactDone:
	case <-time.After(5 * time.Second):
		// recordEdit panicked on the nil manifest writer with manifestMu
		// held, and the deferred compactionOutputs.cleanup blocks on
		// manifestMu: the goroutine hangs in its own panic.
		t.Errorf("BUG: Compact racing with Close never returned (panic in recordEdit, then deadlock on manifestMu in cleanup)")
		return
	}
	if !closedEarly {
		<-closeDone
	}
	switch {
	case r.panic != nil:
		t.Errorf("BUG: Compact racing with Close panicked: %v", r.panic)
	case closedEarly:
		t.Errorf("BUG: Close returned before the running Compact finished (Compact returned %v)", r.err)
	}
}

func TestClosedDB(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	db.Put([]byte("a"), []byte("1"))
	db.Put([]byte("b"), []byte("2"))
	snap := db.NewSnapshot()
	open := db.NewIterator(nil)
	if !open.First() {
		t.Fatal("iterator before Close is empty")
	}
	// Close closes, and reports what was left open.
	if err := db.Close(); !errors.Is(err, ErrLeaked) || !strings.Contains(err.Error(), "1 iterator and 1 snapshot left open") {
		t.Fatalf("Close with an iterator and a snapshot open: %v", err)
	}
	if open.Next() || !errors.Is(open.Error(), ErrClosed) {
		t.Errorf("iterator opened before Close: Next after Close gave error %v, want ErrClosed", open.Error())
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := db.Put([]byte("a"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Put: %v", err)
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get: %v", err)
	}
	if err := db.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush: %v", err)
	}
	if err := db.Compact(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact: %v", err)
	}
	if err := db.WaitForCompactions(); !errors.Is(err, ErrClosed) {
		t.Errorf("WaitForCompactions: %v", err)
	}
	if it := db.NewIterator(nil); it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Errorf("iterator after close: %v", it.Error())
	}
	if _, err := db.NewSnapshot().Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("new snapshot Get: %v", err)
	}
	if _, err := snap.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("old snapshot Get: %v", err)
	}
}
