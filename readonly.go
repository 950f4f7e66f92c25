package bloomkv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

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

// finishReadOnlyRecovery completes recover for a read-only open: the state
// the manifest describes, plus the writes of the logs replayed into one
// memtable in memory. Nothing is written: no manifest, table or log, no
// file removed or moved. plan is what checkLogs kept (in point-in-time
// mode, the damaged logs stay where they are).
func (db *DB) finishReadOnlyRecovery(state *manifest.State, plan *wal.Result) error {
	db.foreignNums = map[uint64]struct{}{}
	db.dbID = state.DBID // nil for an old manifest: tables' identity is then not checked
	db.tableCache = db.newTableCache()
	db.mu.nextFileNum = state.NextFileNum
	db.mu.fileNumLimit = state.NextFileNum
	db.mu.lastSeq = max(state.LastSeq, plan.LastSeq)
	db.mu.syncedSeq = db.mu.lastSeq
	db.mu.compactPointers = state.CompactPointers
	db.vs = manifest.NewVersionSet(db.fs, db.dirname, db.opts.MaxManifestFileSize, state)
	db.mu.current = db.versions.newVersion(state.Version)
	db.initTreeFilter(db.mu.current) // treefilter_db.go
	// The memtable grows past MemtableSize if the logs hold more: it is
	// never flushed, and the logs hold at most what a writer kept in its
	// memtables.
	mem := db.newMemTableLocked(0)
	for i := range plan.Logs {
		err := wal.Replay(db.fs, &plan.Logs[i], func(rec []byte) error {
			// wal.Check decoded this record already.
			_ = decodeBatch(rec, func(op batchrep.Op) {
				addToMemtable(mem.Memtable, op)
			})
			return nil
		})
		if err != nil {
			return err
		}
	}
	db.mu.mem = mem
	db.updateReadStateLocked()
	db.visibleSeq.Store(db.mu.lastSeq)
	return nil
}
