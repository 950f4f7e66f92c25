package bloomkv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

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
	mem := memtable.New()
	flush := func() error {
		if mem.Empty() {
			return nil
		}
		num, err := db.allocFileNum(false, causeRecovery)
		if err != nil {
			return err
		}
		it := mem.NewIter()
		meta, err := db.writeTable(num, it, mem.Len(), mem.RangeDels(), causeRecovery)
		_ = it.Close()
		if err != nil {
			return err
		}
		if meta != nil {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: meta})
			db.counters.flushBytes.Add(meta.Size)
		}
		mem = memtable.New()
		return nil
	}
	for i := range res.Logs {
		err := wal.Replay(db.fs, &res.Logs[i], func(rec []byte) error {
			// wal.Check decoded this record already.
			applyBatch(rec, func(op batchrep.Op) {
				addToMemtable(mem, op)
			})
			if mem.ApproximateSize() >= int64(db.opts.MemtableSize) {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return flush()
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
