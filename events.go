package bloomkv

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Events: delivery to an EventListener and to the Logger (debug summaries
// of opens, flushes and compactions), off the engine's locks.

// EventListener is a set of optional callbacks the engine calls when
// something noteworthy happens: background work starting and ending, files
// appearing and disappearing, recovery dropping data, background errors and
// write stalls. A nil field is simply not called. Set it in
// Options.EventListener.
//
// # Delivery
//
// Callbacks run one at a time, in the order the events happened, on a
// goroutine of their own that holds no lock of the engine. The engine never
// waits for a callback: it queues the event and goes on. So a callback may
// take its time and may call any method of the DB -- Get, Put, Metrics,
// even Flush or Compact -- without deadlocking it; only Close must not be
// called from a callback (Close delivers the queued events and waits for
// the last callback to return). Events emitted by Open (recovery's) are
// delivered before Open returns or fails; Close returns only after every
// event has been delivered, so a test can count them right after Close.
// A slow callback delays only later callbacks: the queue grows with the
// events waiting, which come from background work and are few.
//
// The Info values handed to callbacks are the callback's own: they share no
// memory with the engine.
type EventListener struct {
	// FlushBegin and FlushEnd bracket the flush of one memtable to a
	// level-0 table. FlushEnd carries the table written (none when every
	// entry was dropped), the duration and the error; a failed flush is
	// retried as a new job. Recovery's flushes in Open are not reported
	// here (their tables are: TableCreated with Reason "recovery").
	FlushBegin func(FlushInfo)
	FlushEnd   func(FlushInfo)
	// CompactionBegin and CompactionEnd bracket one compaction: automatic
	// or a step of Compact, a merge or a trivial move.
	CompactionBegin func(CompactionInfo)
	CompactionEnd   func(CompactionInfo)
	// TableCreated: a table file was written completely (by a flush, a
	// compaction or recovery). It is not yet part of the tree: the
	// manifest edit that installs it comes next, and may fail.
	TableCreated func(TableCreateInfo)
	// TableDeleted: a table file was removed (obsolete, or the output of a
	// compaction that failed to install).
	TableDeleted func(TableDeleteInfo)
	// WALCreated and WALDeleted: a write-ahead log file was created (at
	// Open and at every memtable switch) or removed (obsolete).
	WALCreated func(WALCreateInfo)
	WALDeleted func(WALDeleteInfo)
	// WALRecoveryDropped: Open dropped bytes of a write-ahead log -- a torn
	// tail, or (WALRecoverPointInTime) everything after the first damage.
	WALRecoveryDropped func(WALRecoveryDropInfo)
	// BackgroundError: a flush, a compaction or a write-ahead log
	// operation failed. With WritesStopped false it is retried; with it
	// true the database refuses writes from now on (reads go on; a reopen
	// recovers).
	BackgroundError func(BackgroundErrorInfo)
	// WriteStallBegin and WriteStallEnd bracket a stall: writes wait for
	// flushes or compactions to catch up.
	WriteStallBegin func(WriteStallBeginInfo)
	WriteStallEnd   func(WriteStallEndInfo)
}

// TableInfo describes a table in an event.
type TableInfo struct {
	FileNum uint64
	Level   int
	Size    uint64
	// Smallest and Largest are the table's smallest and largest user keys.
	Smallest, Largest []byte
}

// FlushInfo describes a memtable flush (FlushBegin, FlushEnd).
type FlushInfo struct {
	JobID int
	// MemtableBytes is the approximate size of the memtable flushed.
	MemtableBytes int64
	// Output is the table written: empty at FlushBegin, and at FlushEnd
	// when the flush failed or the memtable wrote no entry.
	Output []TableInfo
	// Bytes is the size of the output (FlushEnd).
	Bytes    uint64
	Duration time.Duration // FlushEnd
	Err      error         // FlushEnd
}

// CompactionInfo describes a compaction (CompactionBegin, CompactionEnd).
type CompactionInfo struct {
	JobID int
	// Manual is set for the compactions of DB.Compact.
	Manual bool
	// TrivialMove is set when a table moves down a level unchanged.
	TrivialMove bool
	// Idle is set for a compaction of level 0 started because no write
	// arrived for Options.IdleCompactionDelay.
	Idle bool
	// ReadTriggered is set for a compaction of one table into the level
	// below, started because reads kept passing through it on their way
	// to a deeper level's table for the same keys
	// (Options.DisableReadCompactions).
	ReadTriggered bool
	// FromLevel is the level compacted into ToLevel (equal when Compact
	// rewrites tables of the bottom level in place).
	FromLevel, ToLevel int
	// Inputs are the tables compacted, each with its level.
	Inputs []TableInfo
	// Outputs are the tables written (CompactionEnd; the moved table for
	// a trivial move).
	Outputs           []TableInfo
	BytesIn, BytesOut uint64        // CompactionEnd
	Duration          time.Duration // CompactionEnd
	Err               error         // CompactionEnd
}

// TableCreateInfo describes a table file written (TableCreated).
type TableCreateInfo struct {
	// Reason is "flush", "compaction" or "recovery".
	Reason  string
	Path    string
	FileNum uint64
	Size    uint64
}

// TableDeleteInfo describes a table file removed (TableDeleted). Err is
// set when the removal failed (the file is then tried again later).
type TableDeleteInfo struct {
	Path    string
	FileNum uint64
	Err     error
}

// WALCreateInfo describes a write-ahead log created (WALCreated).
type WALCreateInfo struct {
	Path    string
	FileNum uint64
}

// WALDeleteInfo describes a write-ahead log removed (WALDeleted). Err is
// set when the removal failed.
type WALDeleteInfo struct {
	Path    string
	FileNum uint64
	Err     error
}

// WALRecoveryDropInfo describes bytes of a log dropped by recovery
// (WALRecoveryDropped): Bytes bytes from Offset to the end of the log.
type WALRecoveryDropInfo struct {
	Path   string
	Offset int64
	Bytes  int64
	// TornTail is set when the damage is a torn tail (a crash artefact).
	TornTail bool
	// Err is the damage found at Offset, nil for a plain torn tail.
	Err error
}

// BackgroundErrorInfo describes a failure of background work
// (BackgroundError).
type BackgroundErrorInfo struct {
	Err error
	// WritesStopped says the database now refuses writes with Err; when
	// false the work is retried.
	WritesStopped bool
}

// WriteStallBeginInfo says why writes stall (WriteStallBegin).
type WriteStallBeginInfo struct {
	// Reason is WriteStallMemtables or WriteStallL0.
	Reason string
}

// The reasons of a write stall.
const (
	// WriteStallMemtables: MaxImmutableMemtables full memtables wait for a
	// flush.
	WriteStallMemtables = "too many memtables waiting for a flush"
	// WriteStallL0: level 0 holds L0StopWritesThreshold tables or more.
	WriteStallL0 = "too many level-0 tables"
)

// WriteStallEndInfo describes a stall that ended (WriteStallEnd).
type WriteStallEndInfo struct {
	Duration time.Duration
}

// events queues the engine's events and delivers them, in order, to the
// EventListener on a goroutine of its own, so that no callback ever runs
// while the engine holds a lock or waits (see EventListener). emit may be
// called with any engine lock held: events.mu is a leaf lock.
type events struct {
	l      *EventListener // constant, never nil (no listener: all fields nil)
	logger *slog.Logger   // constant
	jobID  atomic.Int64

	mu struct {
		sync.Mutex
		cond    sync.Cond
		queue   []func()
		stopped bool // no more events are accepted
	}
	done chan struct{} // closed when the delivery goroutine has exited
}

// newEvents starts delivering to l (nil: no listener) and to logger. The
// goroutine also runs without a listener: log records the engine writes
// while holding a lock go through it, so that no logging I/O happens under
// DB.mu.
func newEvents(l *EventListener, logger *slog.Logger) *events {
	if l == nil {
		l = &EventListener{}
	}
	e := &events{l: l, logger: logger, done: make(chan struct{})}
	e.mu.cond.L = &e.mu.Mutex
	go e.deliver()
	return e
}

// nextJobID numbers a flush or compaction for its Begin and End events.
func (e *events) nextJobID() int { return int(e.jobID.Add(1)) }

// emit queues fn (a call of one callback with its own data, or a log
// record). Events emitted after stop are dropped.
func (e *events) emit(fn func()) {
	e.mu.Lock()
	if !e.mu.stopped {
		e.mu.queue = append(e.mu.queue, fn)
		e.mu.cond.Signal()
	}
	e.mu.Unlock()
}

func (e *events) deliver() {
	defer close(e.done)
	e.mu.Lock()
	for {
		for len(e.mu.queue) == 0 && !e.mu.stopped {
			e.mu.cond.Wait()
		}
		if len(e.mu.queue) == 0 {
			e.mu.Unlock()
			return
		}
		batch := e.mu.queue
		e.mu.queue = nil
		e.mu.Unlock()
		for _, fn := range batch {
			fn()
		}
		e.mu.Lock()
	}
}

// stop delivers what is queued, refuses later events and waits for the
// last callback to return.
func (e *events) stop() {
	e.mu.Lock()
	e.mu.stopped = true
	e.mu.cond.Signal()
	e.mu.Unlock()
	<-e.done
}

// The emitters below copy what they are given (callbacks get their own
// memory) and check the callback before queueing anything.

func (e *events) flushBegin(info FlushInfo) {
	if e.l.FlushBegin != nil {
		e.emit(func() { e.l.FlushBegin(info) })
	}
}

func (e *events) flushEnd(info FlushInfo) {
	e.logFlush(info)
	if e.l.FlushEnd != nil {
		e.emit(func() { e.l.FlushEnd(info) })
	}
}

func (e *events) compactionBegin(info CompactionInfo) {
	if e.l.CompactionBegin != nil {
		e.emit(func() { e.l.CompactionBegin(info) })
	}
}

func (e *events) compactionEnd(info CompactionInfo) {
	e.logCompaction(info)
	if e.l.CompactionEnd != nil {
		e.emit(func() { e.l.CompactionEnd(info) })
	}
}

func (e *events) tableCreated(info TableCreateInfo) {
	if e.l.TableCreated != nil {
		e.emit(func() { e.l.TableCreated(info) })
	}
}

func (e *events) tableDeleted(info TableDeleteInfo) {
	if e.l.TableDeleted != nil {
		e.emit(func() { e.l.TableDeleted(info) })
	}
}

func (e *events) walCreated(info WALCreateInfo) {
	if e.l.WALCreated != nil {
		e.emit(func() { e.l.WALCreated(info) })
	}
}

func (e *events) walDeleted(info WALDeleteInfo) {
	if e.l.WALDeleted != nil {
		e.emit(func() { e.l.WALDeleted(info) })
	}
}

func (e *events) walRecoveryDropped(info WALRecoveryDropInfo) {
	if e.l.WALRecoveryDropped != nil {
		e.emit(func() { e.l.WALRecoveryDropped(info) })
	}
}

func (e *events) backgroundError(info BackgroundErrorInfo) {
	if e.l.BackgroundError != nil {
		e.emit(func() { e.l.BackgroundError(info) })
	}
}

func (e *events) writeStallBegin(info WriteStallBeginInfo) {
	if e.l.WriteStallBegin != nil {
		e.emit(func() { e.l.WriteStallBegin(info) })
	}
}

func (e *events) writeStallEnd(info WriteStallEndInfo) {
	if e.l.WriteStallEnd != nil {
		e.emit(func() { e.l.WriteStallEnd(info) })
	}
}

// warn and error log through the queue: they may be called with DB.mu
// held.
func (e *events) warn(msg string, args ...any) {
	e.emit(func() { e.logger.Warn(msg, args...) })
}

func (e *events) error(msg string, args ...any) {
	e.emit(func() { e.logger.Error(msg, args...) })
}

// tableInfo describes f at level for an event (a copy).
func tableInfo(f *manifest.FileMetadata, level int) TableInfo {
	return TableInfo{
		FileNum:  f.FileNum,
		Level:    level,
		Size:     f.Size,
		Smallest: append([]byte(nil), base.UserKey(f.Smallest)...),
		Largest:  append([]byte(nil), base.UserKey(f.Largest)...),
	}
}

// Debug-level summaries of the engine's jobs for Options.Logger: what
// Pebble's logging event listener reports, without a listener to install.
// Nothing is built unless the logger is enabled for slog.LevelDebug, and
// records go out through the events goroutine like every other log record,
// never under DB.mu. At the default level (Info) nothing changes.

// debugEnabled reports whether the logger takes debug records.
func (e *events) debugEnabled() bool {
	return e.logger.Enabled(context.Background(), slog.LevelDebug)
}

// debug queues a debug record.
func (e *events) debug(msg string, args ...any) {
	e.emit(func() { e.logger.Debug(msg, args...) })
}

// logFlush summarizes a finished flush.
func (e *events) logFlush(info FlushInfo) {
	if !e.debugEnabled() {
		return
	}
	e.debug("bloomkv: flush", "job", info.JobID, "memtable_bytes", info.MemtableBytes,
		"tables", len(info.Output), "bytes", info.Bytes, "duration", info.Duration, "error", info.Err)
}

// logCompaction summarizes a finished compaction.
func (e *events) logCompaction(info CompactionInfo) {
	if !e.debugEnabled() {
		return
	}
	e.debug("bloomkv: compaction", "job", info.JobID, "reason", compactionReason(info),
		"from_level", info.FromLevel, "to_level", info.ToLevel,
		"inputs", len(info.Inputs), "outputs", len(info.Outputs),
		"bytes_in", info.BytesIn, "bytes_out", info.BytesOut, "duration", info.Duration, "error", info.Err)
}

// compactionReason names why a compaction ran, as the logs print it.
func compactionReason(info CompactionInfo) string {
	switch {
	case info.Manual:
		return "manual"
	case info.Idle:
		return "idle"
	case info.ReadTriggered:
		return "read"
	case info.TrivialMove:
		return "move"
	}
	return "size"
}

// logOpen summarizes a finished Open: the tree found, the writes
// recovered from logs, and how long it took.
func (db *DB) logOpen(began time.Time) {
	if !db.events.debugEnabled() {
		return
	}
	// Not Metrics: it opens every table to describe its filter.
	db.mu.Lock()
	v := db.versions.Current()
	tables := make([]int, len(v.Levels))
	var bytes int64
	for l, files := range v.Levels {
		tables[l] = len(files)
		bytes += v.LevelBytes(l)
	}
	db.mu.Unlock()
	db.events.debug("bloomkv: open", "dir", db.dirname, "read_only", db.opts.ReadOnly,
		"tables_per_level", tables, "table_bytes", bytes, "last_seq", db.versions.VisibleSeq(),
		"wal_dropped_bytes", db.counters.walRecoveryDroppedBytes.Load(), "duration", time.Since(began))
}
