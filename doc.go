// Package bloomkv is an embedded LSM-tree key-value store whose SSTables each
// carry a bloom filter, so point lookups skip tables that cannot hold a key.
//
// # Architecture
//
// Writes go batch -> write-ahead log (wal/) -> memtable (memtable/). A full
// memtable becomes immutable, a new log starts, and a background goroutine
// flushes it to a level-0 SSTable (sstable/) whose filter block (filter/)
// indexes its user keys. The MANIFEST (internal/manifest) records which tables
// form the tree; background leveled compaction (compaction/) merges tables
// down the levels, writing fresh filters with the current settings.
//
// Reads look in the memtable, the immutable memtables, then the tables newest
// first; for each table whose key range covers the key the filter is probed
// and the table skipped on a negative.
//
// # Durability
//
// A write that returned nil survives a crash of the process (kill -9) at any
// instant; with Options.Sync it also survives losing the operating system.
// After a crash the database holds exactly a prefix of the acknowledged
// writes (plus possibly some in flight), and every Batch is all or nothing.
// A torn record at the very end of the newest write-ahead log is a crash
// artefact and is dropped (Options.WALRecovery chooses stricter or more
// forgiving rules; see WALRecoveryMode); damage anywhere else in a log, table
// or manifest is reported as an error wrapping ErrCorruption that names the
// file and offset, never skipped silently and never returned as wrong data.
// A table put in another's place is corruption too: each records its own
// identity. The engine never deletes or changes a file it did not write.
//
// # Invariants
//
//   - Every write gets a unique sequence number; a read at sequence s sees
//     exactly the writes with sequence <= s (the visible sequence, owned by
//     the version set, is advanced only after a whole write group is in the
//     memtable, so batches are atomic to readers).
//   - For any user key, entries in newer memtables/levels have higher
//     sequence numbers than entries in older ones; level-0 tables are ordered
//     newest first; levels >= 1 are sorted and non-overlapping.
//   - A table, log or manifest file is deleted only when no live version,
//     iterator, snapshot or in-progress flush/compaction needs it, and only
//     if its number was handed out by the engine (below the manifest's
//     NextFileNum, and not a recorded foreign file).
//   - Only the newest log can be torn: a log is synced before the next one
//     takes a write.
//   - No I/O is done while holding DB.mu, except brief metadata reads.
//
// # Locks
//
//   - DB.manifestMu serializes version edits: it guards the version set
//     (internal/manifest.VersionSet, the one manifest writer) from reading
//     the base version to installing the new one. It is held across the
//     manifest's I/O.
//   - DB.mu guards the write queue, the memtables, the sequence counters,
//     file-number allocation, the current version pointer and background
//     work's state (see the fields under DB.mu). No I/O under it.
//   - The published read state (DB.readState) is an atomic pointer: a read
//     pins the memtables and version it uses with a reference counted in
//     its P's slot of the state (internal/pslot; see readState), and takes
//     no lock. A Get writes no cache line that a Get on another core
//     writes: its counters, its read-state and table references and its
//     block-cache hits all go to per-P slots.
//   - Leaf locks: the live-versions set, the table and block caches' own
//     mutexes (package sstable), the event queue's mutex (events.go).
//   - EventListener callbacks never run under an engine lock, nor on a
//     goroutine the engine waits for: the engine queues each event (with
//     any lock held) and one goroutine per DB delivers them in order. Log
//     records written while DB.mu is held go through the same queue.
//
// Lock order: manifestMu -> mu -> leaf locks. Nothing takes
// manifestMu while holding mu: code that needs a manifest edit (a file-number
// reservation, a flush or compaction installing its result) releases mu
// first. Functions named ...Locked expect mu held.
package bloomkv
