package bloomkv

import (
	"context"
	"log/slog"
	"time"
)

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
	v := db.mu.current
	tables := make([]int, len(v.Levels))
	var bytes int64
	for l, files := range v.Levels {
		tables[l] = len(files)
		bytes += v.LevelBytes(l)
	}
	db.mu.Unlock()
	db.events.debug("bloomkv: open", "dir", db.dirname, "read_only", db.opts.ReadOnly,
		"tables_per_level", tables, "table_bytes", bytes, "last_seq", db.visibleSeq.Load(),
		"wal_dropped_bytes", db.counters.walRecoveryDroppedBytes.Load(), "duration", time.Since(began))
}
