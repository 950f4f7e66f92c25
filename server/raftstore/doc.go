// Package raftstore keeps a hashicorp/raft log and stable store in a bloomkv
// database: Store implements raft.LogStore and raft.StableStore.
//
// # Durability
//
// Every StoreLog, StoreLogs, DeleteRange, Set and SetUint64 is one atomic
// bloomkv batch applied with WriteOptions{Sync: true}: when it returns, the
// write-ahead log holding it has been fsynced, so it survives losing the
// operating system, as a raft-boltdb commit does. Options.NoSync drops the
// fsync (for tests; a node that loses acknowledged log entries can break
// raft's safety).
//
// # Keys
//
// The store owns the database's whole key space:
//
//	'L' (0x4c) | index: uint64 big-endian      -> one log entry
//	'S' (0x53) | stable key (the caller's bytes) -> the caller's value
//
// The index is big-endian so that bytewise key order is index order: the
// first and last entries are the first and last keys after 'L', found with
// one iterator seek each when the store opens, and kept in memory after.
//
// # Log entry value
//
//	offset  size  field
//	0       1     format version, 1
//	1       1     raft.LogType
//	2       8     Term, uint64 little-endian
//	10      8     AppendedAt, Unix nanoseconds as int64 little-endian;
//	              math.MinInt64 encodes the zero time.Time
//	18      n     uvarint length of Extensions, then Extensions
//	18+n    rest  Data (to the end of the value)
//
// The index is not repeated in the value: the key holds it. A value that is
// shorter than its fields say, or has another version, fails GetLog with an
// error wrapping bloomkv.ErrCorruption that names the index. These constants
// never change; a new layout gets a new version number.
//
// # Stable values
//
// SetUint64 stores 8 bytes, big-endian. Get and GetUint64 of a key never set
// return ErrKeyNotFound, whose message is exactly "not found": raft accepts
// that error as "absent" (it compares the message), as it does for
// raft-boltdb.
//
// # DeleteRange
//
// DeleteRange is one bloomkv range deletion of the entries' keys in
// [min, max], synced: it is atomic, so a crash leaves the log either as it
// was or without the whole range, never with a hole inside it. Its cost
// does not grow with the number of entries deleted (a point delete per
// entry did); the deleted entries' bytes are reclaimed when compaction
// reaches them.
package raftstore
