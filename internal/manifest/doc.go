// Package manifest owns the state of a database's tree: which SSTables are
// live at which level (immutable versions, the version edits that change
// them, the references readers hold on versions), the sequence numbers, the
// file numbers, the compact pointers, the MANIFEST log that records edits,
// and the CURRENT file that names the live manifest. VersionSet is the one
// owner of all of it; the engine keeps no copy. It knows nothing of what is
// inside a table.
//
// # Invariants
//
//   - A Version never changes once built; versions share FileMetadata and
//     untouched level slices with the versions they were built from.
//   - Level 0 is ordered newest first: LargestSeq descending, ties by FileNum
//     descending. Its files may overlap.
//   - Levels 1..6 are sorted by Smallest, and their files' user-key ranges
//     are disjoint: the largest user key of a file is strictly below the
//     smallest user key of the next.
//   - Every file has well-formed internal keys with Smallest <= Largest and
//     SmallestSeq <= LargestSeq <= base.MaxSeq, and a file number appears at
//     most once in a version.
//   - Builder.Finish and ReadManifest only return versions that pass
//     CheckInvariants; Builder.Apply changes nothing when it fails.
//
// # Version edit encoding
//
// An encoded VersionEdit is a sequence of fields, each a tag followed by
// its values. Every integer is an unsigned LEB128 varint
// (encoding/binary.AppendUvarint: 7 bits per byte, least significant group
// first, high bit set on all but the last byte). A byte string is a varint
// length followed by that many bytes. Tags and their meaning are wire
// constants and never change; a new field gets a new tag, and a decoder
// rejects tags it does not know (tag 0 is never used).
//
//	+-----+------------------+------------------------------------------------+
//	| tag | field            | values after the tag                           |
//	+-----+------------------+------------------------------------------------+
//	| 1   | log number       | LogNum                                         |
//	| 2   | next file number | NextFileNum                                    |
//	| 3   | last sequence    | LastSeq                                        |
//	| 4   | compact pointer  | level, key (bytes)                             |
//	| 5   | deleted file     | level, file number                             |
//	| 6   | new file         | level, file number, size, smallest (bytes),    |
//	|     |                  | largest (bytes), smallest seq, largest seq     |
//	| 7   | flushed sequence | FlushedSeq: every write up to it is in tables  |
//	| 8   | synced sequence  | SyncedSeq: every write up to it was synced     |
//	| 9   | database id      | DBID (bytes, at most 64; snapshots only)       |
//	| 10  | foreign file     | a file name (bytes; snapshots only)            |
//	+-----+------------------+------------------------------------------------+
//
// Tags 1-3 and 7-9 appear at most once. The encoder writes tags 1, 2, 3, 7,
// 8, 9, 10, then 4, 5, 6 (each repeated field in slice order); the decoder
// accepts any order. Levels are < 7;
// smallest and largest are internal keys (user key + 8-byte little-endian
// trailer, see package base); a new file must pass the per-file checks
// above. An empty edit encodes to zero bytes.
//
// Worked example (TestEditGoldenBytes pins it): LogNum 3, NextFileNum 5,
// LastSeq 100, compact pointer level 1 key "m", deleted file 2 from level 1,
// new file 4 at level 0, size 1000, smallest "a"#7,SET, largest "c"#9,DEL,
// seqs 7-9:
//
//	01 03                  log number 3
//	02 05                  next file number 5
//	03 64                  last sequence 100
//	04 01 01 6d            compact pointer: level 1, key "m"
//	05 01 02               deleted file: level 1, number 2
//	06 00 04 e8 07         new file: level 0, number 4, size 1000
//	   09 61 01 07 00 00 00 00 00 00     smallest: 9 bytes, "a" + trailer 7<<8|1
//	   09 63 00 09 00 00 00 00 00 00     largest:  9 bytes, "c" + trailer 9<<8|0
//	   07 09                             seqs 7 and 9
//
// # MANIFEST files
//
// MANIFEST-NNNNNN is a record log in the format of package wal (32 KiB
// blocks, checksummed fragments); each record is one encoded VersionEdit.
// The first edit is a snapshot: it sets LogNum, NextFileNum and LastSeq and
// lists every live file as a new file (SnapshotEdit builds it). Replaying
// applies the edits in order, deletions before additions within an edit.
// A torn tail at the end of the file is dropped as in the WAL; any other
// damage, an edit that does not decode, or one that deletes a file that is
// not live or adds one that is, is ErrCorruption naming the file and the
// record's offset.
//
// What the counters promise, and recovery checks:
//
//   - NextFileNum: every file number the engine has handed out, or may hand
//     out before its next edit, is below it. The version set reserves
//     numbers ahead (VersionSet.TakeFileNum hands out only reserved ones;
//     the engine writes an edit when the reservation runs out), so a file
//     numbered at or above it was not written by the engine.
//   - LogNum: logs numbered below it are obsolete.
//   - FlushedSeq: every write with a sequence up to it is in tables; the
//     live logs hold the writes after it, in sequence order, without a gap.
//   - SyncedSeq: every write up to it was synced to a log (or is in
//     tables): recovery that does not find all of them reports corruption.
//   - DBID: chosen at creation and written into every table's properties,
//     so a table of another database is recognized.
//   - ForeignFiles: database-looking files found in the directory with
//     numbers the engine never handed out. They are never deleted, and
//     their numbers never used.
//
// # The version set
//
// VersionSet is the one owner of the tree's state and the one writer of
// manifests. It holds:
//
//   - the current version, and every installed version that still has
//     references (Version.Ref, Unref): their tables are live
//     (AddLiveFiles), and a version losing its last reference calls
//     Options.OnRelease so that the engine collects obsolete files;
//   - the sequence numbers: the last one assigned to a write (AssignSeqs),
//     the last one visible to reads (PublishSeq, VisibleSeq: an atomic that
//     reads load without a lock), the last one synced to a log
//     (MarkSynced);
//   - the file numbers: the next to hand out, and the reservation the
//     durable manifest records ahead of it (TakeFileNum); numbers of
//     foreign files are never handed out;
//   - the compact pointers, per level;
//   - the manifest: the durable state (State), the manifest in use.
//
// LogAndApply records in each edit the counters that moved past the durable
// state (last sequence, synced sequence, and a larger file-number
// reservation when fewer than half of Options.FileNumReserve are left),
// validates it, appends it and syncs it, rolls over to a fresh manifest (a
// snapshot edit) when the current one is large or a write failed, points
// CURRENT at the manifest in use, and then installs the new version as
// current. A failed append may or may not have reached the disk; the set
// then retries the edit at once as a fresh manifest and, until one is
// installed, reports itself uncertain so that no file is deleted.
//
// # Locks
//
// VersionSet has no mutex for its own state: the engine's two locks guard
// it, as they guarded the copies the engine used to keep.
//
//   - The manifest lock (bloomkv's DB.manifestMu) serializes edits: the
//     caller holds it around LogAndApply, WriteSnapshot, Close, and to read
//     the durable side (State, ManifestNum, Uncertain). A tool that is the
//     only user of its set needs no lock.
//   - The state lock (Options.Mu, bloomkv's DB.mu) guards the in-memory
//     side: current version, compact pointers, last and synced sequences,
//     file numbers. Methods that read or change them say "REQUIRES: the
//     state lock", so the engine can, for example, assign sequences and
//     queue a write in one critical section. LogAndApply and WriteSnapshot
//     take it themselves, briefly and without I/O, so they must be called
//     without it. The current version and compact pointers change only
//     under both locks, so either lock is enough to read them.
//   - Without either lock: VisibleSeq (an atomic), IsForeign (constant),
//     AddLiveFiles (a leaf lock of the set's own), Version.Ref and Unref
//     (atomics; the last Unref takes that leaf lock).
//
// Lock order: the manifest lock before the state lock before the set's leaf
// lock.
//
// # CURRENT
//
// CURRENT holds exactly "MANIFEST-<digits>\n" (SetCurrent writes the
// number as six or more digits). It is replaced atomically: the new content
// goes to NNNNNN.tmp (NNNNNN being the manifest's number), which is synced,
// renamed over CURRENT, and the directory is synced.
package manifest
