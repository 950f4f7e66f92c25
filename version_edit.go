package bloomkv

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/wal"
)

// writeNewManifest starts a fresh MANIFEST holding a snapshot of state,
// syncs it, points CURRENT at it and closes the previous manifest.
// REQUIRES: manifestMu held, or db not yet shared (Open).
func (db *DB) writeNewManifest(state *manifest.ManifestState) error {
	db.mu.Lock()
	num := db.allocFileNumLocked()
	state.NextFileNum = db.mu.nextFileNum
	db.mu.Unlock()
	name := db.path(base.FileTypeManifest, num)
	f, err := db.fs.Create(name)
	if err != nil {
		return fmt.Errorf("bloomkv: create manifest %s: %w", name, err)
	}
	w := wal.NewWriter(f)
	if _, err := w.AddRecord(manifest.SnapshotEdit(state).Encode()); err != nil {
		_ = w.Close()
		return fmt.Errorf("bloomkv: write manifest %s: %w", name, err)
	}
	if err := w.Sync(); err != nil {
		_ = w.Close()
		return fmt.Errorf("bloomkv: sync manifest %s: %w", name, err)
	}
	if err := manifest.SetCurrent(db.fs, db.dirname, num); err != nil {
		_ = w.Close()
		return err
	}
	if db.manifest.writer != nil {
		_ = db.manifest.writer.Close()
	}
	db.manifest.file, db.manifest.writer, db.manifest.num = f, w, num
	return nil
}

// logAndApply records edit in the manifest and installs the version it
// makes. The edit's LastSeq and NextFileNum are filled in here.
// REQUIRES: manifestMu held; db.mu not held.
func (db *DB) logAndApply(edit *manifest.VersionEdit) error {
	db.mu.Lock()
	base := db.mu.current
	base.ref()
	edit.HasLastSeq, edit.LastSeq = true, db.mu.lastSeq
	edit.HasNextFileNum, edit.NextFileNum = true, db.mu.nextFileNum
	db.mu.Unlock()
	defer base.unref()

	b := manifest.NewBuilder(base.Version)
	if err := b.Apply(edit); err != nil {
		return fmt.Errorf("bloomkv: apply version edit: %w", err)
	}
	nv, err := b.Finish()
	if err != nil {
		return fmt.Errorf("bloomkv: apply version edit: %w", err)
	}
	pointers := map[int][]byte{}
	db.mu.Lock()
	for l, k := range db.mu.compactPointers {
		pointers[l] = k
	}
	db.mu.Unlock()
	for _, cp := range edit.CompactPointers {
		pointers[cp.Level] = cp.Key
	}

	if len(edit.NewFiles) > 0 {
		// New tables were synced, but their directory entries become
		// durable only with the directory: without this a power loss could
		// leave the manifest naming a table that is gone.
		if err := db.syncDir(); err != nil {
			return fmt.Errorf("bloomkv: sync directory %s: %w", db.dirname, err)
		}
	}
	if db.manifest.writer.Size() >= db.opts.MaxManifestFileSize {
		logNum := edit.LogNum
		if !edit.HasLogNum {
			db.mu.Lock()
			logNum = db.minLogNumLocked()
			db.mu.Unlock()
		}
		state := &manifest.ManifestState{Version: nv, LogNum: logNum, LastSeq: edit.LastSeq, CompactPointers: pointers}
		if err := db.writeNewManifest(state); err != nil {
			return err
		}
	} else {
		if _, err := db.manifest.writer.AddRecord(edit.Encode()); err != nil {
			return fmt.Errorf("bloomkv: write manifest: %w", err)
		}
		if err := db.manifest.writer.Sync(); err != nil {
			return fmt.Errorf("bloomkv: sync manifest: %w", err)
		}
	}

	db.mu.Lock()
	old := db.mu.current
	db.mu.current = db.versions.newVersion(nv)
	db.mu.compactPointers = pointers
	db.updateReadStateLocked()
	db.mu.Unlock()
	old.unref()
	db.maybeCheckInvariants()
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
