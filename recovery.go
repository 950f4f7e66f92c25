package bloomkv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// WALRecoveryMode says what Open does with damage in the write-ahead logs
// it replays. RocksDB's WALRecoveryMode is the model.
type WALRecoveryMode int

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
	WALRecoverTolerateTornTail WALRecoveryMode = iota
	// WALRecoverAbsoluteConsistency accepts no damage at all, a torn tail
	// included: Open fails unless every log reads cleanly to its end. A
	// database closed with Close always satisfies it; one whose process
	// was killed mid-write may not.
	WALRecoverAbsoluteConsistency
	// WALRecoverPointInTime stops at the first damage of any kind (in any
	// log, or a gap in the sequence numbers) and keeps every write before
	// it: the database is consistent as of that point, and writes after it
	// -- possibly acknowledged, possibly synced -- are dropped. An explicit
	// opt-in for getting a damaged database running: the dropped bytes are
	// counted in Metrics.WALRecoveryDroppedBytes, reported to
	// Options.Logger, and every log with dropped bytes is moved to the
	// lost/ subdirectory rather than deleted.
	WALRecoverPointInTime
)

func (m WALRecoveryMode) String() string {
	switch m {
	case WALRecoverTolerateTornTail:
		return "tolerate-torn-tail"
	case WALRecoverAbsoluteConsistency:
		return "absolute-consistency"
	case WALRecoverPointInTime:
		return "point-in-time"
	}
	return fmt.Sprintf("WALRecoveryMode(%d)", int(m))
}

// lostDir is the subdirectory damaged files are moved to (never deleted).
const lostDir = "lost"

// logPlan is what recovery keeps of one log.
type logPlan struct {
	num     uint64
	name    string // path
	size    int64
	strict  bool  // read with wal.Reader.SetStrict
	records int   // records to replay, from the start
	keepEnd int64 // bytes from here on are dropped (size when none)
}

func (lp *logPlan) dropped() int64 { return lp.size - lp.keepEnd }

// recoveryPlan is the outcome of checking every live log.
type recoveryPlan struct {
	logs    []logPlan
	lastSeq uint64 // the last sequence the kept records reach
}

// checkLogs reads every live log (numbers in ascending order) without
// changing anything and decides, per the recovery mode, what to keep. See
// WALRecoveryMode for the rules.
func (db *DB) checkLogs(state *manifest.ManifestState, logs []uint64) (*recoveryPlan, error) {
	mode := db.opts.WALRecovery
	plan := &recoveryPlan{}
	// next is the sequence the next record must start with; 0 when the
	// manifest predates FlushedSeq and the first record sets it.
	var next uint64
	lastKept := state.FlushedSeq
	if state.HasFlushedSeq {
		next = state.FlushedSeq + 1
	}
	sizes := make([]int64, len(logs))
	// The newest log is the newest that is not empty: an empty log after it
	// holds nothing, and is what a recovery that failed after starting its
	// new log leaves (the older log was synced before a newer one ever took
	// a write, so an empty newer log says nothing about the older's end).
	newest := len(logs) - 1
	for i, num := range logs {
		name := db.path(base.FileTypeLog, num)
		fi, err := db.fs.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("bloomkv: stat log %s: %w", name, err)
		}
		sizes[i] = fi.Size()
	}
	for newest > 0 && sizes[newest] == 0 {
		newest--
	}
	stopped := false // point-in-time: damage found, the rest is dropped
	for i, num := range logs {
		lp := logPlan{num: num, name: db.path(base.FileTypeLog, num)}
		lp.strict = mode != WALRecoverTolerateTornTail || i < newest
		lp.size, lp.keepEnd = sizes[i], sizes[i]
		if stopped {
			lp.keepEnd = 0
			plan.logs = append(plan.logs, lp)
			continue
		}
		stop := func(at int64, err error) error {
			if mode != WALRecoverPointInTime || !errors.Is(err, ErrCorruption) {
				return err
			}
			lp.keepEnd, stopped = at, true
			db.opts.Logger.Warn("bloomkv: point-in-time recovery stops at damage; later writes are dropped",
				"log", lp.name, "offset", at, "error", err)
			return nil
		}
		err := db.readLog(&lp, -1, func(r *wal.Reader, rec []byte) (bool, error) {
			seq, count, err := checkBatchRecord(rec)
			if err == nil && next != 0 && seq != next {
				err = fmt.Errorf("sequence gap: the record starts at sequence %d, expected %d", seq, next)
				if seq > next {
					err = fmt.Errorf("%w (writes %d-%d are missing: a log was lost)", err, next, seq-1)
				}
			}
			if err != nil {
				return false, stop(r.RecordOffset(), base.CorruptionErrorf("bloomkv: log %s at offset %d: %v", lp.name, r.RecordOffset(), err))
			}
			next = seq + uint64(count)
			lastKept = next - 1
			lp.records++
			return true, nil
		}, func(r *wal.Reader, err error) error {
			return stop(r.EndOfLastRecord(), err)
		})
		if err != nil {
			return nil, err
		}
		plan.logs = append(plan.logs, lp)
	}
	plan.lastSeq = lastKept

	if state.SyncedSeq > lastKept {
		where := "no log"
		if n := len(plan.logs); n > 0 {
			lp := plan.logs[n-1]
			where = fmt.Sprintf("%s at offset %d", lp.name, lp.keepEnd)
		}
		err := base.CorruptionErrorf("bloomkv: %s: the manifest records every write up to sequence %d as durable, "+
			"but the logs end at sequence %d (%s): a log was deleted, cut short or damaged at its end",
			db.dirname, state.SyncedSeq, lastKept, where)
		if mode != WALRecoverPointInTime {
			return nil, err
		}
		db.opts.Logger.Warn("bloomkv: point-in-time recovery drops synced writes", "error", err)
	}
	for _, lp := range plan.logs {
		if n := lp.dropped(); n > 0 {
			db.counters.walRecoveryDroppedBytes.Add(uint64(n))
			if mode != WALRecoverPointInTime {
				db.opts.Logger.Info("bloomkv: dropped the torn tail of the newest log",
					"log", lp.name, "offset", lp.keepEnd, "bytes", n)
			}
		}
	}
	return plan, nil
}

// readLog reads log lp and calls rec for each whole record until it
// returns false or limit records were read (limit < 0: no limit). damage is
// called with a read error; its result is readLog's.
func (db *DB) readLog(lp *logPlan, limit int, rec func(*wal.Reader, []byte) (bool, error), damage func(*wal.Reader, error) error) error {
	f, err := db.fs.Open(lp.name)
	if err != nil {
		return fmt.Errorf("bloomkv: open log %s: %w", lp.name, err)
	}
	defer f.Close()
	r := wal.NewReader(f, lp.name)
	if lp.strict {
		r.SetStrict()
	}
	for n := 0; limit < 0 || n < limit; n++ {
		b, err := r.Next()
		if err == io.EOF {
			if torn, off := r.TornTail(); torn {
				lp.keepEnd = off
			}
			return nil
		}
		if err != nil {
			return damage(r, err)
		}
		more, err := rec(r, b)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// checkBatchRecord checks that rec is a whole, well-formed batch with at
// least one operation and returns its sequence and count.
func checkBatchRecord(rec []byte) (seq uint64, count uint32, err error) {
	if err := decodeBatch(rec, func(uint64, batchOp) {}); err != nil {
		return 0, 0, err
	}
	seq = binary.LittleEndian.Uint64(rec)
	count = binary.LittleEndian.Uint32(rec[8:])
	if count == 0 {
		return 0, 0, fmt.Errorf("batch with no operations")
	}
	return seq, count, nil
}

// replayLogs applies the records plan keeps to memtables and writes them
// to level-0 tables recorded in edit.
func (db *DB) replayLogs(plan *recoveryPlan, edit *manifest.VersionEdit) error {
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
		meta, err := db.writeTable(num, it, causeRecovery)
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
	for i := range plan.logs {
		lp := plan.logs[i] // a copy: readLog may note the torn tail again
		if lp.records == 0 {
			continue
		}
		err := db.readLog(&lp, lp.records, func(r *wal.Reader, rec []byte) (bool, error) {
			// checkLogs decoded this record already.
			_ = decodeBatch(rec, func(seq uint64, op batchOp) {
				mem.Add(seq, op.kind, op.key, op.value)
			})
			if mem.ApproximateSize() >= int64(db.opts.MemtableSize) {
				return true, flush()
			}
			return true, nil
		}, func(r *wal.Reader, err error) error {
			return fmt.Errorf("bloomkv: log %s changed during recovery: %w", lp.name, err)
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
func (db *DB) moveDroppedLogs(plan *recoveryPlan) {
	if db.opts.WALRecovery != WALRecoverPointInTime {
		return
	}
	for _, lp := range plan.logs {
		if lp.dropped() == 0 {
			continue
		}
		if err := db.moveToLost(lp.name); err != nil {
			db.opts.Logger.Warn("bloomkv: could not move a damaged log to lost/", "log", lp.name, "error", err)
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
