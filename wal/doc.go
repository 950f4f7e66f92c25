// Package wal owns bloomkv's write-ahead logs as a whole: how records are
// appended (Writer and its Modes), which logs a recovery reads, what damage
// it accepts in each, and what it keeps (Check), and reading the records
// kept (Replay). Its API uses only public types (vfs for files): a program
// can write and read logs of its own, as the example shows.
//
// What a record means (for the database, a batch) is the caller's, which
// tells Check the sequence numbers a record holds (Sequences): every record
// holds at least one, and records follow each other without a gap.
//
// # Log file format
//
// A log is a sequence of 32 KiB blocks of fragments; a record is one fragment,
// or a first, middle ones and a last, never crossing a block boundary. Each
// fragment has a 7-byte header: a masked CRC32C (Castagnoli) of its type and
// payload (uint32), its payload length (uint16), both little-endian, and its
// type (1 full, 2 first, 3 middle, 4 last; 0 never written, so zeros never
// parse). Fewer than 7 bytes left in a block are zero padding. A crash can
// leave a torn tail -- damage after which no intact fragment starts -- which
// a reader drops; damage anywhere else is corruption. The byte-level grammar,
// a worked example and the exact tail rule are in internal/record/doc.go;
// these wire constants never change.
//
// # The logs of a database
//
// A database writes one log at a time, NNNNNN.log, numbered from the same
// counter as every other file. When the memtable fills, the engine seals the
// log (Writer.Seal: cut back to its records, synced), then starts the
// next: so a log is complete and durable before a newer one takes a write, and only the newest log can ever have a torn tail.
// Every write has a sequence number; the writes of the live logs (those at
// or after the manifest's log number) follow each other without a gap,
// starting right after the manifest's flushed sequence (every write up to it
// is in tables). The manifest's synced sequence says up to where writes are
// known durable: recovery must find every one of them.
//
// # What recovery accepts (RecoveryMode)
//
//   - TolerateTornTail (the default): every log but the newest non-empty one
//     is read strictly, and must end exactly after its last record. The
//     newest may end in a torn tail: damage after which no intact fragment
//     starts anywhere (see the format above). Sequences must continue without
//     a gap, and every write up to the synced sequence must be found.
//     Anything else is an error wrapping kv.ErrCorruption that names the
//     file and offset.
//   - AbsoluteConsistency: every log is read strictly; nothing is dropped.
//   - PointInTime: the first damage of any kind -- in any log, a gap, a
//     malformed record -- ends recovery there: every record before it is
//     kept, everything after it (the rest of that log, every later log) is
//     dropped, and reported in the result.
//
// In every mode the newest non-empty log may end in reserved space: zeros
// after its last record that a memory-mapped writer reserved and never
// used (see mapped.go). They are counted in LogResult.Reserved, not
// dropped. Every older log was sealed -- cut back to its records and
// synced -- before the next was created, so reserved space in one is
// corruption.
//
// A log after the newest non-empty one, empty or holding only reserved
// zeros, holds nothing and says nothing about the end of the log before it:
// a recovery that failed after starting its new log leaves one (the new
// log is created, and a mapped one reserves its space, before the manifest
// names it), and the replayed log before it may still end in its own
// reserved space.
//
// # Tools
//
// A tool (kvtool check) runs Check with Options.KeepGoing to see every
// problem rather than the first: each log's damage in its LogResult.Err,
// each sequence gap or overlap as a *SequenceError in LogResult.SeqErrs
// (reading goes on past those), and writes recorded as synced that are
// missing in Result.MissingSynced. It judges the same logs by the same
// rules as Open, so it finds exactly what makes Open refuse a database.
//
// # Invariants
//
//   - Check reads, never writes: a caller can refuse a database and leave it
//     exactly as found.
//   - The records Check keeps, replayed with Replay, are a prefix of what
//     was written: whole records, in order, with continuous sequences.
//   - Result.Logs[i].Dropped() bytes of log i were not kept; their sum is
//     what recovery lost, and callers report it.
package wal
