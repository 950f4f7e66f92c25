package bloomkv

import (
	"github.com/bloomkv/bloomkv/internal/base"
)

// noteObsolete is called when a version is released: its tables may now be
// unreferenced. The compaction goroutine collects them.
func (db *DB) noteObsolete() {
	db.mu.Lock()
	db.mu.obsoletePending = true
	db.mu.bgCond.Broadcast()
	db.mu.Unlock()
}

// deleteObsoleteFiles removes tables no live version references, logs older
// than the oldest one still needed, manifests older than the current one
// and, when atOpen, leftover temporary files -- only files whose numbers the
// engine handed out (below nextFileNum, not foreign).
// Collections run one at a time (obsoleteMu): a second caller waits, then
// lists the directory after the first has removed its files, so each file
// is removed, and reported, once. Waiting rather than skipping keeps the
// promise callers rely on: when it returns, every file obsolete when it
// was called is gone (or failed to go, and logged).
// REQUIRES: db.mu and db.manifestMu not held.
func (db *DB) deleteObsoleteFiles(atOpen bool) {
	db.obsoleteMu.Lock()
	defer db.obsoleteMu.Unlock()
	live := map[uint64]struct{}{}
	db.mu.Lock()
	db.mu.obsoletePending = false
	for n := range db.mu.pendingOutputs {
		live[n] = struct{}{}
	}
	minLog := db.minLogNumLocked()
	// Files numbered from here on may be created after the listing below
	// but before being recorded anywhere: never touch them.
	nextFileNum := db.mu.nextFileNum
	db.mu.Unlock()
	db.versions.addLiveFiles(live)
	db.manifestMu.Lock()
	manifestNum := db.vs.ManifestNum()
	uncertain := db.vs.Uncertain()
	// Keep every log the durable manifest may still ask a recovery for,
	// even when memory has moved past it.
	minLog = min(minLog, db.vs.State().LogNum)
	db.manifestMu.Unlock()
	if uncertain {
		// A failed manifest write may have recorded tables that no live
		// version references; wait until a fresh manifest settles it.
		return
	}

	names, err := db.fs.List(db.dirname)
	if err != nil {
		return // retried after the next flush or compaction
	}
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok || num >= nextFileNum && t != base.FileTypeCurrent && t != base.FileTypeLock {
			continue
		}
		if _, foreign := db.foreignNums[num]; foreign && t != base.FileTypeCurrent && t != base.FileTypeLock {
			continue // not the engine's: never touched
		}
		var obsolete bool
		switch t {
		case base.FileTypeTable:
			_, isLive := live[num]
			obsolete = !isLive
		case base.FileTypeLog:
			obsolete = num < minLog
		case base.FileTypeManifest:
			obsolete = num < manifestNum
		case base.FileTypeTemp:
			obsolete = atOpen
		}
		if !obsolete {
			continue
		}
		if t == base.FileTypeTable {
			db.filterStats.Delete(num)
			db.tableCache.Evict(num)
			if db.blockCache != nil {
				db.blockCache.EvictFile(num)
			}
		}
		path := db.fs.PathJoin(db.dirname, name)
		err := db.fs.Remove(path)
		if err != nil {
			// Tried again at the next collection.
			db.opts.Logger.Warn("bloomkv: could not remove an obsolete file", "file", path, "error", err)
		}
		switch t {
		case base.FileTypeTable:
			db.events.tableDeleted(TableDeleteInfo{Path: path, FileNum: num, Err: err})
		case base.FileTypeLog:
			db.events.walDeleted(WALDeleteInfo{Path: path, FileNum: num, Err: err})
		}
	}
}
