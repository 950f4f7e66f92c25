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
	db.manifest.logNum = state.LogNum
	db.manifest.uncertain = false
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

	if len(edit.NewFiles) > 0 || edit.HasLogNum {
		// New tables (and the log a new log number names) were synced, but
		// their directory entries become durable only with the directory:
		// without this a power loss could leave the manifest naming a file
		// that is gone.
		if err := db.syncDir(); err != nil {
			return fmt.Errorf("bloomkv: sync directory %s: %w", db.dirname, err)
		}
	}
	if err := db.recordEdit(edit, nv, pointers); err != nil {
		return err
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

// recordEdit makes edit (which turns the current version into nv) durable:
// appended to the manifest, or as a fresh manifest holding nv when the
// current one is full or uncertain.
//
// A failed append or sync may still have left the whole edit on disk (a
// sync error says nothing about what reached the file), and the caller
// would then delete the edit's new tables as failed output. So the edit is
// retried at once as a fresh manifest: if that works the edit is committed
// and the failure is over; if not, the manifest stays uncertain, which
// stops file deletion until a later edit installs a fresh manifest.
// REQUIRES: manifestMu held; db.mu not held.
func (db *DB) recordEdit(edit *manifest.VersionEdit, nv *manifest.Version, pointers map[int][]byte) error {
	if db.manifest.writer == nil {
		return ErrClosed // Close has released the manifest
	}
	fresh := func() error {
		// Without a log number of its own the edit keeps the durable one:
		// the in-memory oldest log can still be older than what an earlier
		// flush edit made durable (the flush drops its memtable only after
		// its edit is written), and that log may then be deleted.
		logNum := db.manifest.logNum
		if edit.HasLogNum {
			logNum = edit.LogNum
		}
		state := &manifest.ManifestState{Version: nv, LogNum: logNum, LastSeq: edit.LastSeq, CompactPointers: pointers}
		if err := db.writeNewManifest(state); err != nil {
			// CURRENT may already name the new manifest, which holds nv.
			db.manifest.uncertain = true
			return err
		}
		return nil
	}
	if db.manifest.uncertain || db.manifest.writer.Size() >= db.opts.MaxManifestFileSize {
		return fresh()
	}
	_, err := db.manifest.writer.AddRecord(edit.Encode())
	if err != nil {
		err = fmt.Errorf("bloomkv: write manifest: %w", err)
	} else if err = db.manifest.writer.Sync(); err != nil {
		err = fmt.Errorf("bloomkv: sync manifest: %w", err)
	}
	if err == nil {
		if edit.HasLogNum {
			db.manifest.logNum = edit.LogNum
		}
		return nil
	}
	db.manifest.uncertain = true
	if ferr := fresh(); ferr != nil {
		return fmt.Errorf("%w (and starting a fresh manifest failed: %v)", err, ferr)
	}
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
