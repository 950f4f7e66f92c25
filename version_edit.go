package bloomkv

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// logAndApply records edit in the manifest and installs the version it
// makes. The edit's LastSeq, NextFileNum and SyncedSeq are filled in here.
// REQUIRES: manifestMu held; db.mu not held.
func (db *DB) logAndApply(edit *manifest.VersionEdit, cause writeCause) error {
	db.mu.Lock()
	edit.HasLastSeq, edit.LastSeq = true, db.mu.lastSeq
	edit.HasNextFileNum, edit.NextFileNum = true, db.nextFileNumToRecordLocked()
	if synced := db.mu.syncedSeq; synced > db.vs.State().SyncedSeq {
		edit.HasSyncedSeq, edit.SyncedSeq = true, synced
	}
	db.mu.Unlock()

	db.hookBeforeEdit(cause)
	nv, err := db.vs.LogAndApply(edit, db.allocManifestNum)
	if manifest.IsClosed(err) {
		return ErrClosed // Close has released the manifest
	}
	if err != nil {
		return fmt.Errorf("bloomkv: %w", err)
	}
	state := db.vs.State()
	tf := db.nextTreeFilter(nv) // treefilter_db.go: before the install, outside db.mu

	db.mu.Lock()
	db.mu.fileNumLimit = max(db.mu.fileNumLimit, state.NextFileNum)
	old := db.mu.current
	db.mu.current = db.versions.newVersion(nv)
	db.mu.current.treeFilter.Store(tf)
	db.mu.compactPointers = state.CompactPointers
	db.updateReadStateLocked()
	db.mu.Unlock()
	old.unref()
	db.maybeCheckInvariants(edit)
	return nil
}

// minLogNumLocked returns the number of the oldest log still needed.
// REQUIRES: db.mu held.
func (db *DB) minLogNumLocked() uint64 {
	if len(db.mu.imm) > 0 {
		return db.mu.imm[0].logNum
	}
	return db.mu.mem.logNum
}
