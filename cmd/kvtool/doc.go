// Command kvtool inspects, verifies and repairs a bloomkv database offline.
//
//	kvtool check [-json] [-strict] [-q] DIR   verify a whole database
//	kvtool sst [-blocks] FILE                 describe one table
//	kvtool manifest DIR|MANIFEST              print the version history
//	kvtool repair [-json] DIR                 rebuild a database Open refuses
//
// # Read only, but for repair
//
// check, sst and manifest never write: they open every file read-only
// through vfs.Default, do not take the LOCK and do not call bloomkv.Open
// (which would replay logs, write a new manifest and delete files). repair
// writes, under the LOCK (see below). kvtool reads the formats with
// the packages that own them: internal/manifest for CURRENT and the
// MANIFEST, wal for record framing, sstable for tables. Checking a database
// that a process has open is safe for that process, but the listing may
// race with its flushes and compactions (a table being written shows as
// orphaned, a table being deleted as missing); check a closed database for
// a verdict.
//
// # What check verifies
//
//   - CURRENT names a manifest that replays cleanly (every record's
//     checksum, every edit's encoding, every deletion of a live file), and
//     the version it yields passes the level invariants: level 0 newest
//     first, levels 1-6 sorted with disjoint key ranges, no file twice.
//   - Every table of that version is on disk (else: missing, an error) with
//     the size the manifest records; it opens (footer, properties, index
//     and filter checksums); sstable's Reader.Check passes (every data
//     block's checksum and encoding, key order, index separators, properties
//     recounted, and the filter reports every key present); and it is the
//     table the manifest lists (Reader.CheckIdentity): the file number and
//     database identity its properties record match its name and the
//     manifest's identity, and its key and sequence ranges the manifest's
//     entry. A valid table put in another's place fails here.
//   - Across tables, the order reads visit them in (level 0 newest first,
//     then levels 1..6) never shows an older version of a key before a
//     newer one, and no (key, sequence) pair is stored twice.
//   - Every write-ahead log decodes: record framing and checksums (package
//     internal/record) and, inside each record, the write batch (sequence,
//     count and operations; internal/batchrep). The logs are judged by
//     wal.Check, the code Open recovers with, by the rules of the default
//     mode (see bloomkv.WALRecoveryMode), so check finds in them exactly
//     what makes Open refuse the database: a torn tail, which a crash
//     leaves and the next Open drops, is a note only in the newest
//     non-empty live log; every live log before it must read cleanly to
//     its end (strictly), else it is an error. The live logs' sequences
//     continue from the manifest's flushed sequence without a gap (a gap
//     or an overlap is an error naming the log and the record's offset),
//     and every write up to the manifest's synced sequence is found (else
//     the writes are lost, an error). The log the manifest's log number
//     names must exist (0, what a checkpoint records, names none). An
//     obsolete log is read on its own (damage in it is a warning), and so
//     is every log when no manifest replays.
//   - Tables on disk that the manifest does not list are orphans: leftovers
//     of an interrupted flush or compaction that the next Open deletes.
//     Manifests CURRENT does not name, logs older than the manifest's log
//     number and temporary files are obsolete and noted.
//   - Files the engine did not write are foreign, noted as "foreign file,
//     never touched" and not read: those the manifest lists as foreign,
//     and -- the engine reserving every file number in the manifest before
//     use -- every file numbered at or past the manifest's next file
//     number (when the manifest records a database identity; older ones
//     predate reservations). The lost/ subdirectory, where point-in-time
//     recovery and repair put what they do not keep, is noted.
//
// Findings have a severity: ERROR (damage or an inconsistency that loses or
// misreads data), WARN (orphaned tables, damage in an obsolete log) and NOTE
// (harmless facts worth knowing). When the manifest cannot be read (CURRENT
// is missing or damaged, or the manifest it names does not replay), that is
// an error finding, and check still verifies every table and log on disk on
// its own; it then calls no file obsolete, since only the manifest says which
// are, and promises nothing of the next Open, which fails.
//
// # What repair does
//
// repair rebuilds a database that Open refuses (CURRENT lost, a damaged
// table or manifest, a log damaged before its end). It never loses intact
// data, never invents data, never deletes a file and never touches a
// foreign one: what it does not keep goes to DIR/lost/ (a name taken there
// gets a numeric suffix). It takes the directory's LOCK, so no process may
// have the database open.
//
//  1. The identity: the manifest CURRENT names if it replays, else the
//     newest that replays, gives the database identity (DBID), its foreign
//     files and its next file number; without one, the identity most
//     tables record. Files the manifest lists as foreign, files numbered at
//     or past its next file number (the engine reserves numbers before use)
//     and tables recording another identity are foreign: left in place,
//     unread, and listed as foreign in the new manifest.
//  2. Every other table is verified whole (sstable.Open, Reader.Check, an
//     iteration over every entry); a damaged one goes to lost/.
//  3. Every other log is read in number order, keeping each whole record
//     before its first damage (a torn tail, a record wal rejects, a record
//     that is not a write batch, or one whose sequence does not follow);
//     the dropped bytes are counted. A later log is still read.
//  4. When the manifest is trusted -- every table it lists is present,
//     intact and the table it describes -- the writes up to its flushed
//     sequence are in those tables, and copies elsewhere (an obsolete log,
//     a table compacted away but not yet removed) are superseded, not
//     merged: merging them could resurrect a key whose deletion a
//     compaction dropped with the value it deleted.
//  5. The kept tables and log records are merged (internal/iterator's
//     merging iterator through compaction.Iter, no snapshots,
//     everything bottommost): the newest version of each key, tombstones
//     and shadowed versions dropped. The output goes to new tables cut at
//     about 2 MiB between user keys, numbered past every file present, with
//     the settings of the newest kept table, each synced and read back. They
//     form one sorted run in the last level: putting every old table in
//     level 0 instead would be wrong, since level 0 is read newest first by
//     LargestSeq, and a deep table can hold an old version of a key beside
//     a newer LargestSeq than the shallower table holding its newest one.
//  6. The commit: an empty, synced log; a copy of CURRENT in lost/; then a
//     fresh manifest (manifest.VersionSet.WriteSnapshot) naming the new
//     tables, the log, the identity and the foreign files, with every write
//     up to the largest sequence seen flushed and synced; CURRENT then names
//     it. Until here the directory is as it was found (repair removes what
//     it wrote if it fails earlier).
//  7. After the commit, every table, log, manifest and temporary file read
//     or superseded moves to lost/. If repair is interrupted between the
//     commit and the end of the moves, run it again before opening the
//     database: with the new manifest trusted, it finds the leftovers
//     superseded and moves them (Open would delete them as obsolete).
//
// The report lists every table (merged, superseded, damaged or foreign),
// every log (records kept, bytes dropped and where), the new tables, the
// sequence range, the files moved, the findings -- damage, writes the old
// manifest recorded as durable that no intact file holds, a gap left
// between logs -- and a final line.
//
// # Exit codes
//
//	0  no errors (warnings and notes may be reported; -strict fails on warnings);
//	   repair: the database was repaired
//	1  problems found (or the database could not be read); repair: nothing was
//	   repaired (the directory is as found), or the moves after the commit did
//	   not all succeed
//	2  usage: unknown command, bad flag, wrong number of arguments
package main
