package bloomkv

// The manifest's log number must never name a log that file collection has
// deleted, whatever order flushes and compactions record their edits in.

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

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
	t0 := db.versions.Current().Levels[0][0]
	db.mu.Unlock()

	// Step 1: the first half of flushOldestLocked, verbatim.
	num, err := db.allocFileNum(true, causeFlush)
	if err != nil {
		t.Fatal(err)
	}
	it := m.NewIter()
	meta, _, err := db.writeTable(num, it, m.Len(), nil, causeFlush)
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
	db.versions.SetMaxSize(1) // "the manifest is full"
	err = db.logAndApply(&manifest.VersionEdit{
		DeletedFiles: []manifest.DeletedFileEntry{{Level: 0, FileNum: t0.FileNum}},
		NewFiles:     []manifest.NewFileEntry{{Level: 1, Meta: t0}},
	}, causeCompaction)
	db.versions.SetMaxSize(4 << 20)
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

// TestManifestRewrittenWhenLarge checks that the manifest is replaced by a
// fresh snapshot past MaxManifestFileSize and that old ones are deleted.
func TestManifestRewrittenWhenLarge(t *testing.T) {
	fs := vfs.NewMem()
	o := tinyOptions(fs)
	o.MaxManifestFileSize = 1 << 10
	db := mustOpen(t, "/db", o)
	first := db.manifestNum()
	for i := 0; i < 30; i++ {
		putRange(t, db, i*50, i*50+50, "v")
		db.Flush()
	}
	db.WaitForCompactions()
	if db.manifestNum() == first {
		t.Fatal("manifest never rewritten")
	}
	db.Close()
	names, _ := fs.List("/db")
	manifests := 0
	for _, n := range names {
		if ty, _, ok := base.ParseFilename(n); ok && ty == base.FileTypeManifest {
			manifests++
		}
	}
	if manifests != 1 {
		t.Fatalf("%d manifests left: %v", manifests, names)
	}
	db = mustOpen(t, "/db", o)
	defer db.Close()
	if v, err := db.Get([]byte("key001400")); err != nil || string(v) != "v" {
		t.Fatalf("after reopen: %q %v", v, err)
	}
}
