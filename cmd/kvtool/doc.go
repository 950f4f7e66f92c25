// Command kvtool inspects and verifies a bloomkv database offline.
//
//	kvtool check [-json] [-strict] [-q] DIR   verify a whole database
//	kvtool sst [-blocks] FILE                 describe one table
//	kvtool manifest DIR|MANIFEST              print the version history
//
// # Read only
//
// kvtool never writes: it opens every file read-only through vfs.Default,
// does not take the LOCK and does not call bloomkv.Open (which would replay
// logs, write a new manifest and delete files). It reads the formats with
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
//     wal) and, inside each record, the write batch (sequence, count and
//     operations). The logs are held to the rules recovery applies (see
//     bloomkv.WALRecoveryMode): a torn tail, which a crash leaves and the
//     next Open drops, is a note only in the newest non-empty live log;
//     every live log before it must read cleanly to its end (strictly),
//     else it is an error. The live logs' sequences continue from the
//     manifest's flushed sequence without a gap (a gap or an overlap is an
//     error naming the log and the record's offset), and every write up to
//     the manifest's synced sequence is found (else the writes are lost, an
//     error). The log the manifest's log number names must exist.
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
// # Exit codes
//
//	0  no errors (warnings and notes may be reported; -strict fails on warnings)
//	1  problems found (or the database could not be read)
//	2  usage: unknown command, bad flag, wrong number of arguments
package main
