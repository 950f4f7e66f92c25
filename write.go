package bloomkv

import (
	"fmt"
	"sync"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// Writes: the write queue and group commit (with the brief wait that gathers
// synced writers into fewer fsyncs), and the log and its WAL modes. Making
// room in the memtable (switches and write stalls) is flush.go's.

// writer is one caller waiting in the write queue. The writer at the head
// of the queue is the leader: it gathers the batches queued behind it into
// one log record (group commit), writes and applies them, and wakes the
// others with the result.
type writer struct {
	batch *Batch // nil: a request to switch the memtable (Flush), or syncWAL
	// sync: fsync the log before this write returns (WriteOptions.Sync).
	sync bool
	// syncWAL: no batch; fsync the log so that every write acknowledged so
	// far is durable (SyncWAL).
	syncWAL bool
	done    bool
	err     error
	cond    sync.Cond
	// epoch: the groups completed when it entered the queue (write.go: "Gathering synced writers").
	epoch uint64
}

// maxGroupBytes bounds one group commit; a small leading batch only takes
// company up to smallGroupExtra more so that its own latency stays low.
const (
	maxGroupBytes   = 1 << 20
	smallGroupBytes = 128 << 10
	smallGroupExtra = 128 << 10
)

// singleOpBatches recycles the batches of Put and Delete: the write path
// is done with a batch's bytes once Write returns (the memtable copies).
var singleOpBatches = sync.Pool{New: func() any { return new(Batch) }}

// Put sets key to value.
func (db *DB) Put(key, value []byte) error {
	// Checked here too, so that the error is about the Put, not about
	// operation 0 of a batch the caller never made.
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return err
	}
	b := singleOpBatches.Get().(*Batch)
	b.Put(key, value)
	err := db.Write(b)
	releaseSingleOpBatch(b)
	return err
}

// Delete removes key. Deleting an absent key is not an error.
func (db *DB) Delete(key []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	b := singleOpBatches.Get().(*Batch)
	b.Delete(key)
	err := db.Write(b)
	releaseSingleOpBatch(b)
	return err
}

// DeleteRange deletes every key in [start, end): start inclusive, end
// exclusive, as IterOptions bounds are. Keys written later are not
// affected; snapshots taken before it still see the deleted keys. Nothing
// is read: it costs one small write whatever the range holds, and the
// space the deleted keys take is reclaimed by compaction. start == end is
// a no-op; start > end is an error wrapping ErrInvalidArgument.
func (db *DB) DeleteRange(start, end []byte) error {
	b := singleOpBatches.Get().(*Batch)
	b.DeleteRange(start, end)
	err := db.Write(b)
	releaseSingleOpBatch(b)
	return err
}

func releaseSingleOpBatch(b *Batch) {
	if cap(b.rep) > 64<<10 {
		return // do not pin large buffers in the pool
	}
	b.Reset()
	singleOpBatches.Put(b)
}

// WriteOptions choose, per write, more durability than Options.WALMode
// gives every write.
type WriteOptions struct {
	// Sync fsyncs the write-ahead log before the write returns, so the
	// write survives losing the operating system, whatever the WALMode
	// (except WALDisabled, where there is no log: a synced write is then an
	// error).
	Sync bool
}

// Write applies b atomically: all of it or none, also across a crash. An
// invalid batch (an empty or oversize key, an oversize value) is rejected
// whole. An empty batch is a no-op. It is Apply(b, nil).
func (db *DB) Write(b *Batch) error { return db.Apply(b, nil) }

// Apply applies b atomically, as Write does, with the durability o asks for
// (nil: what Options.WALMode gives every write).
func (db *DB) Apply(b *Batch, o *WriteOptions) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if b == nil {
		return invalidf("nil batch")
	}
	if b.err != nil {
		return b.err
	}
	sync := o != nil && o.Sync
	if sync && db.opts.WALMode == WALDisabled {
		return invalidf("a synced write needs a write-ahead log, and WALMode is disabled (use Flush)")
	}
	if b.Len() == 0 {
		return nil
	}
	w := writerPool.Get().(*writer)
	w.batch, w.sync = b, sync
	err := db.run(w)
	*w = writer{} // drop the batch; a zero cond has no waiters
	writerPool.Put(w)
	return err
}

// writerPool recycles the queue entries of Apply: once run returns, no
// other goroutine refers to the writer (the leader that completed it did so
// under db.mu, and the queue no longer holds it).
var writerPool = sync.Pool{New: func() any { return new(writer) }}

// SyncWAL makes every write acknowledged so far durable: it hands buffered
// log records to the operating system and fsyncs the log. With WALDisabled
// there is no log and it does nothing (Flush makes writes durable there).
func (db *DB) SyncWAL() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return db.run(&writer{syncWAL: true})
}

// enqueue runs b through the write queue and returns its result. A nil b
// asks for a switch to a new memtable and log (Flush): going through the
// queue keeps the switch ordered with writes.
func (db *DB) enqueue(b *Batch) error { return db.run(&writer{batch: b}) }

// run puts w in the write queue and returns its result.
func (db *DB) run(w *writer) error {
	if err := db.checkWritable(); err != nil {
		return err
	}
	w.cond.L = &db.mu.Mutex
	db.mu.Lock()
	db.mu.writers = append(db.mu.writers, w)
	db.noteEnqueuedLocked(w)
	for !w.done && db.mu.writers[0] != w {
		w.cond.Wait()
	}
	if w.done {
		db.mu.Unlock()
		return w.err
	}
	err := db.lead(w)
	db.mu.Unlock()
	return err
}

// lead performs the write of leader w and of the writers it groups with.
// REQUIRES: db.mu held, w at the head of the queue. It releases db.mu for
// the log write and the memtable insert (the queue keeps other writers
// out) and returns with db.mu held again.
func (db *DB) lead(w *writer) error {
	var err error
	switch {
	case db.closing.Load():
		err = ErrClosed
	case w.syncWAL:
		err = db.syncWALLocked()
	default:
		err = db.makeRoomForWriteLocked(w.batch == nil)
	}
	group := 1
	if err == nil && w.batch != nil {
		if w.sync || db.opts.WALMode == WALSync {
			db.waitForReturningWritersLocked()
		}
		var rep []byte
		var sync bool
		rep, group, sync = db.buildGroupLocked()
		synced := sync || db.opts.WALMode == WALSync
		count := batchrep.Count(rep)
		seq, last := db.versions.AssignSeqs(uint64(count))
		batchrep.SetSeq(rep, seq)
		log, mem := db.mu.log, db.mu.mem
		db.mu.Unlock()
		var start time.Time
		if synced {
			start = time.Now()
		}
		err = db.writeToLog(log, rep, sync)
		var took time.Duration
		if synced {
			took = time.Since(start)
		}
		if err == nil {
			// rep was encoded by us and decodes without error.
			var rangeDels uint64
			applyBatch(rep, func(op batchrep.Op) {
				if op.Kind == base.KindRangeDelete {
					rangeDels++
				}
				addToMemtable(mem.Memtable, op)
			})
			if rangeDels > 0 {
				db.counters.rangeDeletions.Add(rangeDels)
			}
		}
		db.mu.Lock()
		if err != nil {
			// The log may now hold a partial record; nothing more may be
			// appended to it. Refuse writes until a reopen recovers.
			db.setBgErrLocked(fmt.Errorf("bloomkv: write-ahead log write failed: %w", err))
		} else {
			db.versions.PublishSeq(last)
			if synced {
				db.versions.MarkSynced(last)
			}
			db.noteGroupDoneLocked(group, synced, took)
			db.counters.userBytes.Add(uint64(len(rep) - batchHeaderLen))
		}
	}
	for i := 0; i < group; i++ {
		g := db.mu.writers[i]
		g.done, g.err = true, err
		if g != w {
			g.cond.Signal()
		}
	}
	// Shift the queue down rather than reslicing past the group: a slice
	// that only ever advances runs out of capacity and made append
	// allocate a new array for nearly every write.
	n := copy(db.mu.writers, db.mu.writers[group:])
	clear(db.mu.writers[n:])
	db.mu.writers = db.mu.writers[:n]
	if len(db.mu.writers) > 0 {
		db.mu.writers[0].cond.Signal()
	} else if db.closing.Load() {
		// Close waits for an empty queue. Only then: bgCond also wakes the
		// flush and compaction loops, and broadcasting after every write
		// woke both (each re-checking the compaction scores under db.mu)
		// twice per Put. Close sets closing before it takes db.mu to look
		// at the queue, so it cannot miss this.
		db.mu.bgCond.Broadcast()
	}
	return err
}

// writeToLog appends a group's record to the log, fsynced when sync or the
// mode asks.
func (db *DB) writeToLog(log *wal.Writer, rep []byte, sync bool) error {
	if db.opts.WALMode == WALDisabled {
		return nil
	}
	n, err := log.AppendSize(rep, sync)
	if err != nil {
		return err
	}
	db.counters.walBytes.Add(uint64(n))
	db.counters.walRecords.Add(1)
	if sync || db.opts.WALMode == WALSync {
		db.counters.walSyncs.Add(1)
	}
	return nil
}

// syncWALLocked fsyncs the current log for SyncWAL. Older logs were synced
// when they were switched out, so afterwards every write acknowledged so far
// is durable. REQUIRES: db.mu held by the write leader (no write is in
// flight); it releases db.mu for the I/O.
func (db *DB) syncWALLocked() error {
	if db.mu.bgErr != nil {
		return db.mu.bgErr
	}
	if db.opts.WALMode == WALDisabled {
		return nil
	}
	log, last := db.mu.log, db.versions.LastSeq()
	db.mu.Unlock()
	err := log.Sync()
	db.mu.Lock()
	if err != nil {
		err = fmt.Errorf("bloomkv: sync write-ahead log: %w", err)
		db.setBgErrLocked(err)
		return err
	}
	db.counters.walSyncs.Add(1)
	db.versions.MarkSynced(last)
	return nil
}

// buildGroupLocked returns the log record for the leader's batch and the
// batches queued behind it, how many writers it covers, and whether any of
// them asked for a sync. A lone batch is written as it is, with no copy.
// REQUIRES: db.mu held.
func (db *DB) buildGroupLocked() ([]byte, int, bool) {
	first := db.mu.writers[0].batch.rep
	limit := maxGroupBytes
	if len(first) <= smallGroupBytes {
		limit = len(first) + smallGroupExtra
	}
	n, size := 1, len(first)
	for n < len(db.mu.writers) {
		b := db.mu.writers[n].batch
		if b == nil || size+len(b.rep)-batchHeaderLen > limit {
			break
		}
		size += len(b.rep) - batchHeaderLen
		n++
	}
	sync := false
	for _, g := range db.mu.writers[:n] {
		sync = sync || g.sync
	}
	if n == 1 {
		return first, 1, sync
	}
	rep := make([]byte, batchHeaderLen, size)
	var count uint32
	for _, g := range db.mu.writers[:n] {
		rep = append(rep, g.batch.rep[batchHeaderLen:]...)
		count += g.batch.count()
	}
	batchrep.SetCount(rep, count)
	return rep, n, sync
}

func (db *DB) syncDir() error { return vfs.SyncDir(db.fs, db.dirname) }

// WALMode says how far a write gets before Write returns: the durability
// every write buys, and what it costs. WriteOptions.Sync asks for more, per
// write. Package wal holds the log writer that implements the modes.
type WALMode = wal.Mode

const (
	// WALWriteThrough (the default): each write reaches the operating
	// system (no fsync) before it returns, so it survives a crash of the
	// process (kill -9); with the machine it may be lost. On 64-bit Linux
	// the write is copied into a shared memory map of the log, elsewhere
	// (or with Options.DisableMmap) handed over with one write call.
	WALWriteThrough = wal.ModeWriteThrough
	// WALBuffered: writes wait in memory and reach the operating system
	// within Options.WALBufferedDelay (or once 64 KiB wait). A crash of the
	// process may lose the writes of that window -- the newest ones; what
	// recovery finds is always a prefix of what was acknowledged, never a
	// hole. Flush, Close and SyncWAL write and fsync everything.
	WALBuffered = wal.ModeBuffered
	// WALSync: each write is fsynced before it returns (group commit shares
	// one fsync among concurrent writers), so it survives losing the
	// operating system. Options.Sync = true means this mode.
	WALSync = wal.ModeSync
	// WALDisabled: no log. Writes since the last Flush die with the process
	// (recovery then holds exactly the flushed writes, a prefix); Close
	// flushes them.
	WALDisabled = wal.ModeDisabled
)

// walWriterOptions configures each log the database writes.
func (db *DB) walWriterOptions() wal.WriterOptions {
	return wal.WriterOptions{Mode: db.opts.WALMode, BufferedDelay: db.opts.WALBufferedDelay, MapLog: !db.opts.DisableMmap}
}

// Gathering synced writers into fewer fsyncs.
//
// With N writers each issuing synced writes one after another, group commit
// alone settles into two cohorts: while the leader of one group waits for
// its fsync, the others queue up and form the next group, which starts its
// fsync the moment the first one ends, before the writers just
// acknowledged are back. Each fsync then carries about N/2 writes
// (BenchmarkSyncWriters8 measured 4.46 writes per fsync with 8 writers).
//
// So a leader about to fsync first waits, briefly, for the writers of the
// group completed just before it to come back: a writer that entered the
// queue after that group completed is counted as back (its epoch is the
// current one); if fewer are back than that group held, the leader waits
// until they are or until maxGroupWait passes, whichever comes first, then
// forms its group. A lone synced writer finds itself already back and
// never waits; writers that leave for good cost at most maxGroupWait once,
// since the next group is sized by who actually came.

// groupWaitFraction of the last fsync's duration is the longest a leader
// waits for returning writers (at most maxGroupWait): long enough for
// goroutines just woken to be scheduled and queue again, short beside the
// fsync that the wait saves.
const (
	groupWaitFraction = 4 // wait at most 1/4 of the last fsync
	maxGroupWait      = time.Millisecond
)

// groupWait is the state of a leader waiting for returning writers.
// Guarded by db.mu.
type groupWait struct {
	// need: the queue length that ends the wait (0: nobody waits).
	need int
	// ready is signalled (never blocking) when the queue reaches need.
	ready chan struct{}
	timer *time.Timer
	// epoch counts completed groups; a writer queued since the last
	// completion carries the current epoch.
	epoch uint64
	// lastSyncGroup is how many writers the last synced group held, and
	// lastSync how long its fsync took.
	lastSyncGroup int
	lastSync      time.Duration
	// waits counts the leaders that waited (for tests).
	waits int
}

// noteEnqueuedLocked stamps a writer entering the queue and ends a
// leader's wait once enough writers are queued. REQUIRES: db.mu held.
func (db *DB) noteEnqueuedLocked(w *writer) {
	gw := &db.mu.groupWait
	w.epoch = gw.epoch
	if gw.need > 0 && len(db.mu.writers) >= gw.need {
		gw.need = 0
		select {
		case gw.ready <- struct{}{}:
		default:
		}
	}
}

// waitForReturningWritersLocked is called by a leader whose group will be
// fsynced, before it forms the group: see the comment at the top of the
// file. REQUIRES: db.mu held by the leader; it may release and retake it.
func (db *DB) waitForReturningWritersLocked() {
	gw := &db.mu.groupWait
	if gw.lastSyncGroup <= 1 || db.closing.Load() {
		return
	}
	back := 0
	for _, q := range db.mu.writers {
		if q.epoch == gw.epoch {
			back++
		}
	}
	missing := gw.lastSyncGroup - back
	wait := min(gw.lastSync/groupWaitFraction, maxGroupWait)
	if missing <= 0 || wait <= 0 {
		return
	}
	if gw.ready == nil {
		gw.ready = make(chan struct{}, 1)
		gw.timer = time.NewTimer(wait)
	} else {
		gw.timer.Reset(wait)
	}
	select { // a signal left over from an earlier wait that timed out
	case <-gw.ready:
	default:
	}
	gw.need = len(db.mu.writers) + missing
	gw.waits++
	db.mu.Unlock()
	select {
	case <-gw.ready:
	case <-gw.timer.C:
	}
	db.mu.Lock()
	gw.need = 0
	gw.timer.Stop() // Go 1.23+: a stopped timer's channel holds nothing stale
}

// noteGroupDoneLocked records a completed group: its size and fsync time
// when it was synced. REQUIRES: db.mu held.
func (db *DB) noteGroupDoneLocked(size int, synced bool, fsync time.Duration) {
	gw := &db.mu.groupWait
	gw.epoch++
	if synced {
		gw.lastSyncGroup, gw.lastSync = size, fsync
	}
}
