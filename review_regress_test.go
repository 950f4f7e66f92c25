package bloomkv

// Regression tests from the root-package review: each failed on the code
// as reviewed (Close not waiting for a manual Compact, a fresh manifest
// recording a stale log number, the stale-filter compaction merging
// non-adjacent tables, the read sequence loaded before the read state).

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// reviewHookFS wraps an FS and calls onSync(name) before every File.Sync,
// without holding any lock (unlike ErrorFS hooks), so a hook may block.
type reviewHookFS struct {
	vfs.FS
	onSync func(name string)
}

type reviewHookFile struct {
	vfs.File
	name string
	fs   *reviewHookFS
}

func (fs *reviewHookFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &reviewHookFile{File: f, name: name, fs: fs}, nil
}

func (f *reviewHookFile) Sync() error {
	if h := f.fs.onSync; h != nil {
		h(f.name)
	}
	return f.File.Sync()
}

// TestCloseWaitsForManualCompact: Close returns while a manual
// Compact is still running; the Compact then installs its edit on a closed
// DB (nil manifest writer -> panic), after the LOCK was released.
func TestCloseWaitsForManualCompact(t *testing.T) {
	mem := vfs.NewMem()
	hfs := &reviewHookFS{FS: mem}
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

// TestFreshManifestKeepsDurableLogNum replays, step by step, the
// interleaving of a flush and a compaction that writes a fresh manifest:
//
//  1. the flusher installs the edit for imm[0] (LogNum = next log) and
//     releases manifestMu, but has not yet taken db.mu to drop imm[0];
//  2. a compaction edit is recorded as a fresh manifest (the manifest is
//     over MaxManifestFileSize); its LogNum comes from minLogNumLocked(),
//     i.e. imm[0].logNum -- an OLDER log than the durable manifest said;
//  3. the flusher drops imm[0]; deleteObsoleteFiles deletes imm[0]'s log,
//     because it only looks at the in-memory minimum log.
//
// CURRENT now names a manifest whose LogNum is a deleted log, and Open
// refuses the database.
func TestFreshManifestKeepsDurableLogNum(t *testing.T) {
	mem := vfs.NewMem()
	opts := tinyOptions(mem)
	opts.DisableAutomaticCompactions = true
	db := mustOpen(t, "/db", opts)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 20)
	if err := db.Flush(); err != nil { // T0 in L0: the compaction will move it
		t.Fatal(err)
	}
	put(20, 40) // in the memtable that becomes imm[0]

	// Hold the flusher off (it waits while bgErr != nil) and switch the
	// memtable as a write leader would.
	paused := fmt.Errorf("paused by test")
	db.mu.Lock()
	db.mu.bgErr = paused
	if err := db.switchMemtableLocked(); err != nil {
		db.mu.Unlock()
		t.Fatal(err)
	}
	m := db.mu.imm[0]
	nextLog := db.mu.mem.logNum
	t0 := db.mu.current.Levels[0][0]
	db.mu.Unlock()

	// Step 1: the first half of flushOldestLocked, verbatim.
	num, err := db.allocFileNum(true, causeFlush)
	if err != nil {
		t.Fatal(err)
	}
	it := m.NewIter()
	meta, err := db.writeTable(num, it, causeFlush)
	_ = it.Close()
	if err != nil {
		t.Fatal(err)
	}
	db.manifestMu.Lock()
	err = db.logAndApply(&manifest.VersionEdit{HasLogNum: true, LogNum: nextLog,
		HasFlushedSeq: true, FlushedSeq: m.lastSeq,
		NewFiles: []manifest.NewFileEntry{{Level: 0, Meta: meta}}}, causeFlush)
	db.manifestMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}

	// Step 2: a compaction (here the trivial move runCompaction would make)
	// lands while the manifest is full, so it is written as a fresh one.
	db.manifestMu.Lock()
	db.vs.SetMaxSize(1) // "the manifest is full"
	err = db.logAndApply(&manifest.VersionEdit{
		DeletedFiles: []manifest.DeletedFileEntry{{Level: 0, FileNum: t0.FileNum}},
		NewFiles:     []manifest.NewFileEntry{{Level: 1, Meta: t0}},
	}, causeCompaction)
	db.vs.SetMaxSize(4 << 20)
	db.manifestMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}

	// Step 3: the second half of flushOldestLocked, then file collection.
	db.mu.Lock()
	delete(db.mu.pendingOutputs, num)
	db.mu.imm = db.mu.imm[1:]
	db.mu.flushedMemID = m.id
	db.updateReadStateLocked()
	db.mu.bgErr = nil
	db.mu.Unlock()
	db.deleteObsoleteFiles(false)

	name, err := manifest.ReadCurrent(mem, "/db")
	if err != nil {
		t.Fatal(err)
	}
	st, err := manifest.ReadManifest(mem, "/db/"+name)
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := mem.Stat("/db/" + base.MakeFilename(base.FileTypeLog, st.LogNum))
	t.Logf("durable manifest %s: LogNum=%d (imm[0] log %d, next log %d); log present: %v",
		name, st.LogNum, m.logNum, nextLog, statErr == nil)

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open("/db", opts)
	if err != nil {
		t.Fatalf("BUG: reopen after a clean Close fails: %v", err)
	}
	defer db2.Close()
	for i := 0; i < 40; i++ {
		if _, err := db2.Get([]byte(fmt.Sprintf("k%04d", i))); err != nil {
			t.Fatalf("Get k%04d: %v", i, err)
		}
	}
}

// TestStaleFilterCompactionSkipsFreshTables: the in-place "stale
// filter" compaction of Compact merges the stale tables of the bottom level
// even when they are not adjacent; one output then spans a fresh table of the
// same level in between, the version is rejected, and Compact fails (every
// time: nothing changes between attempts).
func TestStaleFilterCompactionSkipsFreshTables(t *testing.T) {
	mem := vfs.NewMem()
	open := func(bits int) *DB {
		o := tinyOptions(mem)
		o.DisableAutomaticCompactions = true
		o.BloomBitsPerKey = bits
		return mustOpen(t, "/db", o)
	}
	fill := func(db *DB, prefix string) {
		for i := 0; i < 10; i++ {
			if err := db.Put([]byte(fmt.Sprintf("%s%02d", prefix, i)), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Compact([]byte(prefix), []byte(prefix+"\xff")); err != nil {
			t.Fatal(err)
		}
	}
	db := open(5)
	fill(db, "a") // level-1 table [a..], 5 bits/key
	db.Close()
	db = open(10)
	fill(db, "c") // level-1 table [c..], 10 bits/key
	db.Close()
	db = open(5)
	fill(db, "e") // level-1 table [e..], 5 bits/key
	db.Close()

	db = open(10) // [a..] and [e..] are now stale, [c..] is not
	defer db.Close()
	t.Logf("before: L1 has %d files", db.Metrics().Levels[1].Files)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatalf("BUG: Compact(nil, nil): %v", err)
	}
}

// TestGetLoadsSequenceAfterReadState: a read for "now" pins the read
// state first and loads the sequence second. Between the two, a newer
// version of the key is written, flushed and compacted (which drops the
// older version, no snapshot protecting it); the read must still see a
// value: the newer version through the pinned memtable, since the sequence
// is loaded after it. (The reverse order returned ErrNotFound here.)
func TestGetLoadsSequenceAfterReadState(t *testing.T) {
	mem := vfs.NewMem()
	opts := tinyOptions(mem)
	opts.DisableAutomaticCompactions = true
	db := mustOpen(t, "/db", opts)
	defer db.Close()
	key := []byte("k")
	if err := db.Put(key, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}

	s := db.loadReadState() // a Get's first load ...
	defer s.unref()
	// ... the Get goroutine is descheduled here ...
	if err := db.Put(key, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil { // flush + merge: v1 is dropped
		t.Fatal(err)
	}
	seq := db.visibleSeq.Load() // ... and resumes
	got, err := db.getFrom(s, key, seq)
	if err != nil || string(got) != "v2" {
		t.Fatalf("Get of a key present at every instant = %q, %v; want v2", got, err)
	}
}
