// Package fsm is the replicated state machine of the bloomkv server: a
// raft.BatchingFSM that applies commands (Put, Delete, Batch, DeleteRange,
// and the bloom and cuckoo filter commands) in log order to a bloomkv
// database, takes snapshots from a bloomkv Snapshot, and restores them by
// replacing the database.
//
// # Determinism
//
// Every replica applies the same entries in the same order and must reach
// the same state and the same results. A command's outcome depends only on
// the state and the command: defaults (a filter's capacity when BF.ADD
// creates it) are filled in by the server before the command enters the
// log, never by the state machine. A failure of the database itself (an
// I/O error, a value that does not decode) is not a result: the state
// machine panics, and the node restarts from its log.
//
// # Idempotence
//
// ApplyBatch writes a batch's effects and the index of its last entry in
// one atomic bloomkv batch. After a crash the database holds the effects
// of exactly the entries up to the recorded index (bloomkv recovers a
// prefix of its writes), so the entries raft replays at or below it are
// skipped, and those above it applied. The state database needs no fsync:
// the raft log is the durable record.
//
// # Key space of the state database
//
//	0x00 'a'                 applied index, uint64 little-endian
//	0x00 'n' | node id       the client (RESP) address of a node (OpSetNode)
//	0x01 | user key          a user value: kind byte, then its body
//
// A user value's first byte is its Kind:
//
//	's' string   the bytes
//	'B' bloom    uvarint expansion (0 = NONSCALING), then the encoding of
//	             a filter.Scalable (filter/encoding.go: "BKVF", kind 4)
//	'C' cuckoo   uvarint capacity, expansion, deletes, n, then n
//	             filter.Cuckoo encodings ("BKVF", kind 3), each after its
//	             uvarint length: a chain that grows when full (cuckoo.go)
//
// The command encoding is in command.go, the snapshot stream in snapshot.go,
// both specified in docs/server.md at the repository root.
package fsm
