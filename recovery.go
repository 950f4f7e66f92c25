package bloomkv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// Recovery: checking the logs (per the recovery mode) and replaying them
// into tables at Open, or into memory for a read-only open; directory
// locks.

// WALRecoveryMode says what Open does with damage in the write-ahead logs
// it replays. RocksDB's WALRecoveryMode is the model; package wal holds the
// rules.
type WALRecoveryMode = wal.RecoveryMode

const (
	// WALRecoverTolerateTornTail (the default) accepts one kind of damage:
	// a torn tail at the end of the newest log -- a partial last record, or
	// garbage after it, with no intact record anywhere after the damage --
	// that holds no write the manifest records as synced. It is dropped
	// and counted (Metrics.WALRecoveryDroppedBytes). Every log but the
	// newest must read cleanly to its end; the logs' sequence numbers must
	// continue, without a gap, from the last one flushed to tables; and
	// every write recorded as synced must be found. Anything else is an
	// error wrapping ErrCorruption that names the file and offset.
	WALRecoverTolerateTornTail = wal.TolerateTornTail
	// WALRecoverAbsoluteConsistency accepts no damage at all, a torn tail
	// included: Open fails unless every log reads cleanly to its end. A
	// database closed with Close always satisfies it; one whose process
	// was killed mid-write may not. The space a memory-mapped log reserves
	// ahead of its records (zeros after the newest log's last record) is
	// not damage, in this mode or any other.
	WALRecoverAbsoluteConsistency = wal.AbsoluteConsistency
	// WALRecoverPointInTime stops at the first damage of any kind (in any
	// log, or a gap in the sequence numbers) and keeps every write before
	// it: the database is consistent as of that point, and writes after it
	// -- possibly acknowledged, possibly synced -- are dropped. An explicit
	// opt-in for getting a damaged database running: the dropped bytes are
	// counted in Metrics.WALRecoveryDroppedBytes, reported to
	// Options.Logger, and every log with dropped bytes is moved to the
	// lost/ subdirectory rather than deleted.
	WALRecoverPointInTime = wal.PointInTime
)

// lostDir is the subdirectory damaged files are moved to (never deleted).
const lostDir = "lost"

// checkLogs reads every live log (numbers in ascending order) without
// changing anything, decides per the recovery mode what to keep, and
// reports what it drops.
func (db *DB) checkLogs(state *manifest.State, nums []uint64) (*wal.Result, error) {
	logs := make([]wal.Log, len(nums))
	for i, num := range nums {
		path := db.path(base.FileTypeLog, num)
		fi, err := db.fs.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("bloomkv: stat log %s: %w", path, err)
		}
		logs[i] = wal.Log{Num: num, Path: path, Size: fi.Size()}
	}
	res, err := wal.Check(wal.Options{
		FS:              db.fs,
		Mode:            db.opts.WALRecovery,
		FlushedSeq:      state.FlushedSeq,
		FlushedSeqKnown: state.HasFlushedSeq,
		SyncedSeq:       state.SyncedSeq,
		Sequences:       batchSequences,
	}, logs)
	if err != nil {
		return nil, err
	}
	log := db.opts.Logger
	for i := range res.Logs {
		lr := &res.Logs[i]
		if lr.Err != nil {
			log.Warn("bloomkv: point-in-time recovery stops at damage; later writes are dropped",
				"log", lr.Path, "offset", lr.KeepEnd, "error", lr.Err)
		}
		if n := lr.Dropped(); n > 0 {
			db.counters.walRecoveryDroppedBytes.Add(uint64(n))
			db.events.walRecoveryDropped(WALRecoveryDropInfo{Path: lr.Path, Offset: lr.KeepEnd, Bytes: n, TornTail: lr.TornTail, Err: lr.Err})
			if lr.TornTail && db.opts.WALRecovery == WALRecoverTolerateTornTail {
				log.Info("bloomkv: dropped the torn tail of the newest log", "log", lr.Path, "offset", lr.KeepEnd, "bytes", n)
			}
		}
	}
	if res.MissingSynced != nil {
		log.Warn("bloomkv: point-in-time recovery drops synced writes", "error", res.MissingSynced)
	}
	return res, nil
}

// batchSequences tells wal.Check the sequences a log record (a batch) holds,
// after checking that it decodes.
func batchSequences(rec []byte) (first, count uint64, err error) {
	seq, n, err := batchrep.Validate(rec, batchLimits)
	return seq, uint64(n), err
}

// replayLogs applies the records plan keeps to memtables and writes them
// to level-0 tables recorded in edit.
func (db *DB) replayLogs(res *wal.Result, edit *manifest.VersionEdit) error {
	flush := func(mem *memtable.Memtable) error {
		if mem.Empty() {
			return nil
		}
		num, err := db.allocFileNum(false, causeRecovery)
		if err != nil {
			return err
		}
		it := mem.NewIter()
		meta, keys, err := db.writeTable(num, it, mem.Len(), mem.RangeDels(), causeRecovery)
		_ = it.Close()
		if err != nil {
			return err
		}
		if keys != nil {
			// Open's edit installs it next (or Open fails).
			db.stageTreeFilterKeys(map[uint64]*tfKeys{num: keys}, nil) // treefilter_update.go
		}
		if meta != nil {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: meta})
			db.counters.flushBytes.Add(meta.Size)
		}
		return nil
	}
	mem, err := db.replay(res, memtable.New(), flush)
	if err != nil {
		return err
	}
	return flush(mem)
}

// replay applies the records res keeps, log by log, to mem, the one replay
// loop of both recoveries. With flush set (a writable open), a memtable
// that reaches MemtableSize is handed to flush and replay goes on in a
// fresh one; without it (a read-only open, which writes nothing) mem takes
// everything. It returns the memtable holding the last records.
func (db *DB) replay(res *wal.Result, mem *memtable.Memtable, flush func(*memtable.Memtable) error) (*memtable.Memtable, error) {
	for i := range res.Logs {
		err := wal.Replay(db.fs, &res.Logs[i], func(rec []byte) error {
			// wal.Check decoded this record already.
			applyBatch(rec, func(op batchrep.Op) {
				addToMemtable(mem, op)
			})
			if flush != nil && mem.ApproximateSize() >= int64(db.opts.MemtableSize) {
				if err := flush(mem); err != nil {
					return err
				}
				mem = memtable.New()
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return mem, nil
}

// moveDroppedLogs moves, in point-in-time mode, each log with dropped bytes
// to lost/: the manifest no longer needs them, and what they hold past the
// damage is left for an operator rather than deleted.
func (db *DB) moveDroppedLogs(res *wal.Result) {
	if db.opts.WALRecovery != WALRecoverPointInTime {
		return
	}
	for i := range res.Logs {
		lr := &res.Logs[i]
		if lr.Dropped() == 0 {
			continue
		}
		if err := db.moveToLost(lr.Path); err != nil {
			db.opts.Logger.Warn("bloomkv: could not move a damaged log to lost/", "log", lr.Path, "error", err)
		}
	}
}

// moveToLost renames the file at path into the lost/ subdirectory.
func (db *DB) moveToLost(path string) error {
	dir := db.fs.PathJoin(db.dirname, lostDir)
	if err := db.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Never over a file already there (an earlier recovery's): that would
	// delete it.
	target := db.fs.PathJoin(dir, filepath.Base(path))
	for i := 1; ; i++ {
		if _, err := db.fs.Stat(target); errors.Is(err, os.ErrNotExist) {
			break
		}
		target = db.fs.PathJoin(dir, fmt.Sprintf("%s.%d", filepath.Base(path), i))
	}
	if err := db.fs.Rename(path, target); err != nil {
		return err
	}
	if err := vfs.SyncDir(db.fs, dir); err != nil {
		return err
	}
	return db.syncDir()
}

// ErrReadOnly is returned by every call that would write (Put, Delete,
// Write, Apply, Flush, Compact, SyncWAL) on a database opened with
// Options.ReadOnly. It is its own error, not ErrInvalidArgument: the call
// was well formed, the database does not take writes.
var ErrReadOnly = errors.New("bloomkv: database is open read-only")

// Open's answers to ErrorIfExists and ErrorIfNotExists wrap the standard
// library's fs.ErrExist and fs.ErrNotExist.
func errDatabaseExists(dir string) error {
	return fmt.Errorf("bloomkv: open %s: a database exists there (Options.ErrorIfExists): %w", dir, fs.ErrExist)
}

func errNoDatabase(dir string, o *Options) error {
	why := "Options.ErrorIfNotExists"
	if o.ReadOnly {
		why = "Options.ReadOnly cannot create one"
	}
	return fmt.Errorf("bloomkv: open %s: no database there (%s): %w", dir, why, fs.ErrNotExist)
}

// checkExistence answers ErrorIfNotExists (and ReadOnly, which implies it)
// before Open creates or locks anything: a refused Open leaves no
// directory or LOCK file behind. ErrorIfExists, and ErrorIfNotExists once
// more, are decided under the lock by loadManifestState.
func checkExistence(fsys vfs.FS, dir string, o *Options) error {
	if !o.ErrorIfNotExists && !o.ReadOnly {
		return nil
	}
	_, err := fsys.Stat(fsys.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0)))
	if errors.Is(err, os.ErrNotExist) {
		return errNoDatabase(dir, o)
	}
	if err != nil {
		return fmt.Errorf("bloomkv: open %s: %w", dir, err)
	}
	return nil
}

// lockDir takes the directory's LOCK: exclusively, creating it, for a
// writer; shared for a read-only open (see lockShared). Read-only opens
// then share a directory with each other but not with a writer, whatever
// files the directory held before.
func lockDir(fs vfs.FS, dir string, readOnly bool) (io.Closer, error) {
	name := fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0))
	var l io.Closer
	var err error
	if readOnly {
		l, err = lockShared(fs, name)
	} else {
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("bloomkv: create %s: %w", dir, err)
		}
		l, err = fs.Lock(name)
	}
	if err != nil {
		return nil, lockError(fs, dir, err)
	}
	return l, nil
}

// lockShared takes a read-only open's shared lock on the LOCK file name.
// A directory may have none: a copy of a database, a checkpoint, one only
// ever opened read-only. Skipping the lock there let a writer open the
// directory under a reader and compact away the tables it was reading, so
// a read-only open creates the file -- empty, the one file it ever creates
// -- and locks it. It creates it with an exclusive Lock released at once
// (Lock creates without truncating, so a LOCK another holder just made is
// left as it is); if anyone holds the file meanwhile that Lock fails, and
// the shared lock decides as usual. Where no file can be created (a
// directory this process may not write, a read-only file system) the open
// goes on without a lock: a writer with the same rights cannot open the
// directory either.
func lockShared(fsys vfs.FS, name string) (io.Closer, error) {
	l, err := fsys.LockShared(name)
	if !errors.Is(err, os.ErrNotExist) {
		return l, err
	}
	created, err := fsys.Lock(name)
	switch {
	case err == nil:
		if err := created.Close(); err != nil {
			return nil, err
		}
	case errors.Is(err, vfs.ErrLocked):
		// Another open made the file meanwhile and holds it.
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return noLock{}, nil
	default:
		return nil, err
	}
	return fsys.LockShared(name)
}

type noLock struct{}

func (noLock) Close() error { return nil }

// checkWritable refuses writes to a read-only database.
func (db *DB) checkWritable() error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	return nil
}

// finishReadOnlyRecovery completes recover for a read-only open: the
// writes of the logs replayed into one memtable in memory, on top of the
// state the manifest describes (already in db.versions). Nothing is
// written: no manifest, table or log, no file removed or moved. plan is
// what checkLogs kept (in point-in-time mode, the damaged logs stay where
// they are).
func (db *DB) finishReadOnlyRecovery(plan *wal.Result) error {
	// The memtable grows past MemtableSize if the logs hold more: it is
	// never flushed, and the logs hold at most what a writer kept in its
	// memtables.
	db.mu.Lock()
	mem := db.newMemTableLocked(0)
	db.mu.Unlock()
	if _, err := db.replay(plan, mem.Memtable, nil); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	last := db.versions.LastSeq()
	db.versions.MarkSynced(last)
	db.mu.mem = mem
	db.updateReadStateLocked()
	db.versions.PublishSeq(last)
	return nil
}
