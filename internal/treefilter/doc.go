// Package treefilter is the tree-wide filter's data structure (after
// Chucky, Dayan and Twitto, SIGMOD 2021): one cuckoo filter over every
// table of a version of the tree, whose entries say which level holds a
// key, its level code, its size rule (grow.go: the loads it is built to,
// and when an update gives way to a build), the tables two versions
// differ by (diff.go), and its saved form (the TREEFILTER file). The
// engine (the root package's treefilter.go and treefilter_update.go)
// builds, updates, attaches to a version, saves and loads filters; this
// package knows nothing of a DB.
//
// # Invariants
//
//   - No false negatives: a Filter holds one entry per table holding a
//     point entry (a value or a point tombstone) for a key, with that
//     table's tag, as long as its owner inserts the keys of every table it
//     adds and removes those of every table it drops. Lookup then returns
//     a set of levels that includes every tag under which a live table
//     holds the key: only a fingerprint collision can add a level, none is
//     ever dropped. A failed Insert or Remove breaks this; the owner must
//     then discard the filter.
//   - Lock-free reads: a Filter is immutable once published (handed to
//     readers). Its owner changes only an unpublished Clone; the read
//     methods (Lookup, ProbeLevels, TagOf, AnyMoved, RangeDelLevels) take
//     no lock and write nothing. A copy of a Filter value shares its
//     buckets and maps: copy only to publish the same contents, and Clone
//     before a change.
//   - The saved form is checked: Encode ends the file with a CRC-32C
//     (Castagnoli) of every byte before it, and Decode rejects, with an
//     error wrapping ErrCorruption that names the file and the offset, a
//     file whose checksum, magic, version, slot shape, level code or counts
//     do not hold. The layout is in docs/formats.md ("Tree filter") and
//     pinned by TestFileLayout; it changes only with a new format version.
//
// # Entries
//
// A bucket is one uint64 of four 16-bit slots. A slot holds a prefix
// code of a level (0..6, manifest.NumLevels = 7) and a fingerprint in the
// bits left: 10 to 15 of them (code.go); an all-zero slot is empty. The
// filter is a multiset: the same key in level 0 twice and in level 3 has
// three entries, and removing one table's keys removes exactly one of
// them. A lookup returns the set of levels whose entries match the key's
// fingerprint in its two buckets.
//
// The level an entry carries is the level its table had when the entry
// was inserted: its tag. A table moved down unchanged (a trivial move)
// keeps its entries and their tag, and the filter records the move
// (SetMoved), so a Get whose key matches tag t also reads the levels
// tables carrying t moved to (ProbeLevels): updates never need a table's
// keys but from the flush or compaction that wrote or read it.
//
// # Buckets and the alternate bucket
//
// The table has any number n of buckets (sized to the keys, not rounded to
// a power of two): a key's first bucket is its hash reduced to [0, n) by
// multiply-high, and the alternate of bucket i for fingerprint fp is
// (c(fp) - i) mod n, an involution (the alternate of the alternate is i),
// so an entry can move between its two buckets knowing only its
// fingerprint, as in a cuckoo filter.
//
// # Snapshots, not locks
//
// Each version of the tree that changes the set of tables gets its own
// copy (copy-on-write), so a Get reads the filter of the very version it
// reads, with no lock, while the next one is made. A copy costs a memcpy
// of the buckets (~2.2 MB per million entries at 90% load).
package treefilter
