package bloomkv

import (
	"fmt"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// Flushes: making room for a write (switching a full memtable and its log
// for new ones, and the write stalls that wait while flushes and
// compactions lag), the background loop writing immutable memtables to
// level-0 tables, Flush, and the retries and errors of failed background
// work.

// Flush writes the memtable to a level-0 SSTable and returns once it (and
// every older immutable memtable) is durable in the tree.
func (db *DB) Flush() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return db.flush()
}

// flush is Flush without the closed check (Close uses it).
func (db *DB) flush() error {
	// A nil batch asks the write leader to switch the memtable; going
	// through the queue keeps the switch ordered with writes.
	if err := db.enqueue(nil); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	target := db.mu.nextMemID - 1 // every memtable before the current one
	for db.mu.flushedMemID < target && db.mu.bgErr == nil && !db.closing.Load() {
		db.mu.bgCond.Wait()
	}
	if db.mu.bgErr != nil {
		return db.mu.bgErr
	}
	if db.mu.flushedMemID < target {
		return ErrClosed
	}
	return nil
}

// flushLoop flushes immutable memtables, oldest first, until Close.
func (db *DB) flushLoop() {
	defer db.bgWG.Done()
	db.mu.Lock()
	defer db.mu.Unlock()
	failures := 0
	for {
		for !db.closing.Load() && (len(db.mu.imm) == 0 || db.mu.bgErr != nil || db.mu.flushPaused) {
			db.mu.bgCond.Wait()
		}
		if db.closing.Load() {
			return
		}
		db.mu.flushing = true
		err := db.flushOldestLocked()
		db.mu.flushing = false
		if err != nil {
			// Nothing is lost: the memtable's log is kept until a flush
			// succeeds.
			failures++
			db.retryLocked(err, failures, flushRetryPause)
		} else {
			failures = 0
		}
		db.mu.bgCond.Broadcast()
	}
}

// flushOldestLocked writes imm[0] to a level-0 table and installs it.
// REQUIRES: db.mu held; it is released during the I/O.
func (db *DB) flushOldestLocked() error {
	m := db.mu.imm[0]
	// imm[0] stays put while we work (only this goroutine removes from
	// imm), and so does the log of the memtable after it.
	nextLog := db.mu.mem.logNum
	if len(db.mu.imm) > 1 {
		nextLog = db.mu.imm[1].logNum
	}
	db.mu.Unlock()

	info := FlushInfo{JobID: db.events.nextJobID(), MemtableBytes: m.ApproximateSize()}
	db.events.flushBegin(info)
	start := time.Now()
	var num uint64
	err := func() error {
		var err error
		if num, err = db.allocFileNum(true, causeFlush); err != nil {
			return err
		}
		it := m.NewIter()
		meta, keys, err := db.writeTable(num, it, m.Len(), m.RangeDels(), causeFlush)
		_ = it.Close()
		if err != nil {
			return err
		}
		edit := &manifest.VersionEdit{
			HasLogNum: true, LogNum: nextLog,
			HasFlushedSeq: true, FlushedSeq: m.lastSeq,
		}
		if meta != nil {
			edit.NewFiles = []manifest.NewFileEntry{{Level: 0, Meta: meta}}
		}
		db.manifestMu.Lock()
		err = db.logAndApply(edit, causeFlush)
		if err == nil && keys != nil {
			db.stageTreeFilterKeys(map[uint64]*tfKeys{num: keys}, nil) // treefilter_update.go
		}
		db.manifestMu.Unlock()
		if err == nil && meta != nil {
			// Counted once installed: a retried flush writes its table again.
			db.counters.flushBytes.Add(meta.Size)
			db.counters.levelCompOut[0].Add(meta.Size)
			info.Output, info.Bytes = []TableInfo{tableInfo(meta, 0)}, meta.Size
		}
		return err
	}()
	info.Duration, info.Err = time.Since(start), err
	db.events.flushEnd(info)

	db.mu.Lock()
	delete(db.mu.pendingOutputs, num)
	if err != nil {
		return err
	}
	db.mu.imm = db.mu.imm[1:]
	db.mu.flushedMemID = m.id
	db.counters.flushes.Add(1)
	db.updateReadStateLocked()
	db.mu.obsoletePending = true
	return nil
}

// WaitForCompactions returns once no flush or compaction is running or due:
// the tree has settled. It returns the background error, if any.
func (db *DB) WaitForCompactions() error {
	if db.closed.Load() {
		return ErrClosed
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for db.mu.bgErr == nil && !db.closing.Load() &&
		(len(db.mu.imm) > 0 || db.mu.flushing || db.mu.compacting || db.compactionWantedLocked() || db.readCompactionDueLocked()) {
		db.mu.bgCond.Wait()
	}
	if db.mu.bgErr != nil {
		return db.mu.bgErr
	}
	if db.closing.Load() {
		return ErrClosed
	}
	return nil
}

// Background work (flushes and compactions) retries a failure a few times
// with a growing pause, since an I/O error may be transient; after
// maxBackgroundAttempts failures in a row the error stops writes (reads go
// on, and a reopen recovers: a failed flush or compaction loses nothing).
const maxBackgroundAttempts = 4

// Pauses after the n-th consecutive failure: n times these.
const (
	flushRetryPause      = 10 * time.Millisecond
	compactionRetryPause = 20 * time.Millisecond
)

// retryLocked notes a background failure: it returns true when the work
// should be tried again (after pausing failures*pause with db.mu released),
// and false, having stopped writes with err, when it has failed too often.
// REQUIRES: db.mu held.
func (db *DB) retryLocked(err error, failures int, pause time.Duration) bool {
	if failures >= maxBackgroundAttempts {
		db.setBgErrLocked(err)
		return false
	}
	db.events.warn("bloomkv: background work failed; retrying", "attempt", failures, "error", err)
	db.events.backgroundError(BackgroundErrorInfo{Err: err})
	db.mu.Unlock()
	time.Sleep(time.Duration(failures) * pause)
	db.mu.Lock()
	return true
}

// makeRoomForWriteLocked makes sure the memtable can take a write, switching
// to a new memtable and log when it is full (or when force is set and it is
// not empty), and making writes wait while flushes or compactions lag behind.
// REQUIRES: db.mu held by the write leader. It may release and retake it.
func (db *DB) makeRoomForWriteLocked(force bool) error {
	allowDelay := !force
	var stallStart time.Time // zero: not stalled
	defer func() {
		if !stallStart.IsZero() {
			db.events.writeStallEnd(WriteStallEndInfo{Duration: time.Since(stallStart)})
		}
	}()
	for {
		if db.mu.bgErr != nil {
			return db.mu.bgErr
		}
		if db.closing.Load() {
			return ErrClosed
		}
		l0 := len(db.versions.Current().Levels[0])
		if db.opts.DisableAutomaticCompactions {
			l0 = 0 // nothing would ever reduce level 0: never wait for it
		}
		switch {
		case allowDelay && l0 >= db.opts.L0SlowdownWritesThreshold:
			// Give compaction a moment instead of stalling hard later.
			db.counters.writeSlowdowns.Add(1)
			db.mu.Unlock()
			time.Sleep(time.Millisecond)
			db.mu.Lock()
			allowDelay = false
			continue
		case !force && db.mu.mem.ApproximateSize() < int64(db.opts.MemtableSize):
			return nil
		case force && db.mu.mem.Empty():
			return nil
		case len(db.mu.imm) >= db.opts.MaxImmutableMemtables || l0 >= db.opts.L0StopWritesThreshold:
			db.counters.writeStalls.Add(1)
			start := time.Now()
			if stallStart.IsZero() {
				stallStart = start
				reason := WriteStallMemtables
				if len(db.mu.imm) < db.opts.MaxImmutableMemtables {
					reason = WriteStallL0
				}
				db.events.writeStallBegin(WriteStallBeginInfo{Reason: reason})
			}
			db.mu.bgCond.Broadcast()
			db.mu.bgCond.Wait()
			db.counters.writeStallNanos.Add(uint64(time.Since(start)))
			continue
		}
		if err := db.switchMemtableLocked(); err != nil {
			return err
		}
		force = false
	}
}

// switchMemtableLocked makes the memtable immutable, starts a new log and
// memtable, and wakes the flusher.
//
// The old log is synced before the new one takes a write, so that only the
// newest log can ever have a torn tail: recovery treats damage anywhere in
// an older log as corruption, never as a crash artefact.
// REQUIRES: db.mu held by the write leader.
func (db *DB) switchMemtableLocked() error {
	oldLog := db.mu.log
	sealedSeq := db.versions.LastSeq() // no write is in flight: we are the leader
	db.mu.Unlock()
	var name string
	num, err := db.allocFileNum(false, causeLogSwitch)
	if err == nil {
		name = db.path(base.FileTypeLog, num)
		// Seal: sync it, and cut a mapped log back to its records, so
		// that it ends exactly after its last record as recovery
		// requires of every log but the newest.
		if err = oldLog.Seal(); err != nil {
			err = fmt.Errorf("bloomkv: seal write-ahead log before switching: %w", err)
			db.mu.Lock()
			// After a failed fsync the kernel may have dropped the dirty
			// pages: the log's contents are unknown. Stop writes.
			db.setBgErrLocked(err)
			return err
		}
	}
	var f vfs.File
	var newLog *wal.Writer
	if err == nil {
		f, err = db.fs.Create(name)
		if err == nil {
			// The writer first: a mapped log reserves its space now,
			// so a crash from here on finds the new log reserved.
			newLog = wal.NewWriter(f, db.walWriterOptions())
		}
		if err == nil && db.opts.WALMode != WALDisabled {
			// Make the new log's directory entry durable before a synced
			// write (any write in WALSync, any with WriteOptions.Sync) is
			// acknowledged in it.
			err = db.syncDir()
		}
		if err != nil {
			err = fmt.Errorf("bloomkv: create log %s: %w", name, err)
		}
	}
	if err == nil {
		// The old log's records were all written and synced, so a failed
		// close loses nothing acknowledged.
		_ = oldLog.Close()
	}
	db.mu.Lock()
	if err != nil {
		if newLog != nil {
			_ = newLog.Close()
			_ = db.fs.Remove(name)
		}
		return err
	}
	db.events.walCreated(WALCreateInfo{Path: name, FileNum: num})
	if db.opts.WALMode != WALDisabled {
		db.versions.MarkSynced(sealedSeq)
	}
	db.mu.mem.lastSeq = sealedSeq
	db.mu.imm = append(db.mu.imm, db.mu.mem)
	db.mu.mem = db.newMemTableLocked(num)
	db.mu.log = newLog
	db.updateReadStateLocked()
	db.mu.bgCond.Broadcast()
	return nil
}

// setBgErrLocked records the first background or log error; from then on
// writes fail with it while reads go on. REQUIRES: db.mu held.
func (db *DB) setBgErrLocked(err error) {
	if db.mu.bgErr == nil {
		db.mu.bgErr = err
		db.events.error("bloomkv: background error; writes are refused until the database is reopened", "error", err)
		db.events.backgroundError(BackgroundErrorInfo{Err: err, WritesStopped: true})
	}
	db.mu.bgCond.Broadcast()
}
