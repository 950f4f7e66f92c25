package bloomkv

import (
	"fmt"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/sstable"
)

// Version edits, file numbers, the read state readers load, and deleting
// the files no live version needs. The state itself -- the current version
// and its references, sequence numbers, file numbers, compact pointers --
// is owned by db.versions (manifest.VersionSet); this file is how the engine
// drives it.

// logAndApply records edit in the manifest and installs the version it
// makes, with its tree filter attached, publishing a read state for it in
// the same critical section. The version set fills in the edit's counters
// (LastSeq, NextFileNum, SyncedSeq).
// REQUIRES: manifestMu held; db.mu not held.
func (db *DB) logAndApply(edit *manifest.VersionEdit, cause writeCause) error {
	db.hookBeforeEdit(cause)
	_, err := db.versions.LogAndApply(edit, manifest.Install{
		// treefilter_update.go: before the install, outside db.mu.
		Prepare: func(nv *manifest.Version) { setTreeFilter(nv, db.nextTreeFilter(nv)) },
		Publish: db.updateReadStateLocked,
	})
	if manifest.IsClosed(err) {
		return ErrClosed // Close has released the manifest
	}
	if err != nil {
		return fmt.Errorf("bloomkv: %w", err)
	}
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

// fileNumReserve is how many file numbers each manifest edit reserves
// ahead of use when the reservation runs low (manifest.Options).
const fileNumReserve = 64

// allocFileNum hands out a file number that the durable manifest has
// reserved (it is below the manifest's NextFileNum), writing a manifest
// edit to reserve more when the reservation is used up. So every file the
// engine writes has a number below what the manifest records, and a file
// at or above it is one the engine never wrote. With pending, the number is
// registered in pendingOutputs in the same critical section, so that file
// collection never sees the new file unregistered.
// REQUIRES: db.mu and manifestMu not held.
func (db *DB) allocFileNum(pending bool, cause writeCause) (uint64, error) {
	for {
		db.mu.Lock()
		if n, ok := db.versions.TakeFileNum(); ok {
			if pending {
				db.mu.pendingOutputs[n] = struct{}{}
			}
			db.mu.Unlock()
			return n, nil
		}
		db.mu.Unlock()
		db.manifestMu.Lock()
		err := db.logAndApply(&manifest.VersionEdit{}, cause) // reserves more
		db.manifestMu.Unlock()
		if err != nil {
			return 0, err
		}
	}
}

// readState is what a read needs: the memtables and the current version,
// captured together so that they form a consistent view. While anyone
// holds a reference, the state holds one on its version (so the version's
// tables are not deleted).
//
// # References without a shared write
//
// Every Get takes and drops a reference, so the count is split over per-P
// slots (internal/pslot): readers on two cores write two cache lines of
// their own, not one line that bounces between them. A holder drops its
// reference in the slot it took it in, so every slot stays >= 0. The state
// is released (its version reference dropped) once it has been replaced
// (retired) and no holder is left; the two sides meet Dekker-style on the
// slot and the retired flag, both sequentially consistent atomics:
//
//   - ref adds 1 to its slot, then reads retired. Seeing it set, it gives
//     the reference back (as unref does) and the caller loads the newer
//     state; seeing it clear, its add came before retire's store, so every
//     later sum over the slots counts it until its unref.
//   - retire sets retired, then sums the slots; so does an unref that sees
//     retired set. A zero sum means no holder is left and none can come
//     (later refs see retired): that caller releases. Several may see zero;
//     the released flag lets exactly one of them drop the version.
type readState struct {
	refs     pslot.Counter // holders, per P
	retired  atomic.Bool   // replaced: no new references
	released atomic.Bool   // the version reference was dropped
	mem      *memTable
	imm      []*memTable // newest first
	v        *manifest.Version
}

// ref takes a reference in slot i unless the state is retired.
func (s *readState) ref(i int) bool {
	s.refs.Add(i, 1)
	if s.retired.Load() {
		s.unref(i)
		return false
	}
	return true
}

// unref drops a reference taken in slot i.
func (s *readState) unref(i int) {
	s.refs.Add(i, -1)
	if s.retired.Load() {
		s.maybeRelease()
	}
}

// retire marks a replaced state: it is released once its last holder is
// gone, now if there is none.
func (s *readState) retire() {
	s.retired.Store(true)
	s.maybeRelease()
}

// maybeRelease drops the version reference, once, if no holder is left.
// REQUIRES: retired is set.
func (s *readState) maybeRelease() {
	if s.refs.Sum() == 0 && s.released.CompareAndSwap(false, true) {
		s.v.Unref()
	}
}

// loadReadState returns the current read state with a reference the caller
// must drop with unref(slot). It takes no lock and writes only the calling
// P's slot: a state replaced between the load and the reference is simply
// loaded again.
func (db *DB) loadReadState() (s *readState, slot int) {
	slot = pslot.Index()
	for {
		if s := db.readState.Load(); s.ref(slot) {
			return s, slot
		}
	}
}

// updateReadStateLocked publishes a read state for the current memtables and
// version, and retires the one it replaces. REQUIRES: db.mu held.
func (db *DB) updateReadStateLocked() {
	s := &readState{mem: db.mu.mem, v: db.versions.Current()}
	s.refs.Init()
	for i := len(db.mu.imm) - 1; i >= 0; i-- {
		s.imm = append(s.imm, db.mu.imm[i])
	}
	s.v.Ref()
	if old := db.readState.Swap(s); old != nil {
		old.retire()
	}
}

// tableIdentity is what the manifest says table f is; the table cache
// checks every table it opens against it (and the database identity), so a
// table put in another's place is corruption, not stale data.
func tableIdentity(f *manifest.FileMetadata) sstable.Identity {
	return sstable.Identity{
		FileNum:     f.FileNum,
		Size:        int64(f.Size),
		Smallest:    f.Smallest,
		Largest:     f.Largest,
		SmallestSeq: f.SmallestSeq,
		LargestSeq:  f.LargestSeq,
	}
}

// findTable returns the open reader of table f from the table cache.
func findTable(tc *sstable.TableCache, f *manifest.FileMetadata) (*sstable.Reader, func(), error) {
	return tc.Find(tableIdentity(f))
}

// findTableAt is findTable for a Get: it takes its reference in slot (the
// slot of the Get's read-state reference, see sstable.TableCache.FindAt)
// and counts a table open it causes in stats, with its bytes.
func findTableAt(tc *sstable.TableCache, slot int, f *manifest.FileMetadata, stats *sstable.ReadStats) (*sstable.Reader, func(), error) {
	return tc.FindAt(slot, tableIdentity(f), stats)
}

// findTableStats is findTable for a read that counts its work in stats:
// a table open it causes is counted there, with its bytes.
func findTableStats(tc *sstable.TableCache, f *manifest.FileMetadata, stats *sstable.ReadStats) (*sstable.Reader, func(), error) {
	return tc.FindWithStats(tableIdentity(f), stats)
}

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
// engine handed out (below the next file number, not foreign).
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
	nextFileNum := db.versions.NextFileNum()
	db.mu.Unlock()
	db.versions.AddLiveFiles(live)
	db.manifestMu.Lock()
	manifestNum := db.versions.ManifestNum()
	uncertain := db.versions.Uncertain()
	// Keep every log the durable manifest may still ask a recovery for,
	// even when memory has moved past it.
	minLog = min(minLog, db.versions.State().LogNum)
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
		if db.versions.IsForeign(num) && t != base.FileTypeCurrent && t != base.FileTypeLock {
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

// treeFilterOf returns the tree-wide filter attached to v (treefilter.go),
// nil without Options.TreeFilter or while one is being rebuilt. Any filter
// attached to a version describes that version.
func treeFilterOf(v *manifest.Version) *treeFilter {
	t, _ := v.Attached().(*treeFilter)
	return t
}

// setTreeFilter attaches t (nil to clear) to v: before v is installed, or
// later by a rebuild.
func setTreeFilter(v *manifest.Version, t *treeFilter) {
	if t == nil && v.Attached() == nil {
		return // nothing to clear (the usual case without Options.TreeFilter)
	}
	v.Attach(t)
}
