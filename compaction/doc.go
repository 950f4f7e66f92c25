// Package compaction decides what to compact and filters what a compaction
// writes.
//
// # The tree it reads
//
// The picker reads its own description of the tree, not the engine's
// manifest: a Tree is NumLevels levels of Table handles, each with its
// user-key range and size. The engine's version satisfies Tree as it is
// (describing it copies nothing); a program can describe a tree by hand
// with Levels of *TableDesc and ask the picker about it, as the example
// does. Every exported signature uses this package's types, package kv's
// internal keys and rangedel's tombstone lists, and the standard library.
//
// Invariants a Tree must keep: level 0 is newest first and its tables may
// overlap; each deeper level is sorted by key and its tables' user-key
// ranges are disjoint; a table's range covers every key it holds or
// deletes; each table has one handle (== is identity); and the tree does
// not change while the picker reads it. Choose then returns compactions
// whose inputs are tables of the tree: Inputs[0] from Level, Inputs[1]
// every table of OutputLevel that overlaps them (none for a rewrite in
// place, where OutputLevel is Level).
//
// # The picker (picker.go)
//
// Leveled compaction: level 0 holds flushed memtables, which may overlap;
// every deeper level is one sorted run whose size target is LBaseMaxBytes
// for level 1 and LevelMultiplier times the level above for each one below
// (static targets), or, with Options.DynamicLevelBytes (the engine's
// default; bloomkv.Options.StaticLevelBytes turns it off), the last level's
// size divided by LevelMultiplier once per level above it, with level 0
// compacting into the base level, the shallowest level whose target is at
// least LBaseMaxBytes/sqrt(LevelMultiplier) (dynamic targets: shape.go has
// the rule and what it
// means for every kind of compaction). Scores says how far each level is over its trigger (level 0: its table
// count against L0CompactionThreshold; others: bytes against the target);
// a size compaction takes the level with the highest score of at least 1:
//
//   - from level 0, the oldest table and every level-0 table overlapping it,
//     transitively (so a newer version of a key never stays above an older
//     one that moved down);
//   - from a deeper level, the table with the least overlap in the output
//     level for its own size (it moves its bytes down most cheaply), the
//     first after that level's compact pointer among equals (round robin
//     over the key space);
//
// plus every table of the output level (the next level; for level 0 the
// base level, Shape.L0Output) overlapping the inputs, and, for
// splitting outputs, the overlapping tables two levels down
// (grandparents). A single input with nothing to merge below it and little
// grandparent overlap is a trivial move: the table changes level unchanged.
// Where a compaction's output tables end (target size, grandparent
// overlap, grandparent boundaries) is OutputSplitter's rule (split.go).
// The same range compaction -- every table of a level overlapping a key
// range, with its overlap below -- serves Compact(start, end), level by
// level (Triggers.Manual), the idle rule (every level-0 table into the
// base level, below the threshold: see Options.IdleCompactionDelay) and
// the read-triggered one. Choose (choose.go) is the one entry point: it
// weighs a manual request, then size, idle and read-triggered
// compactions, in that order.
//
// # The merge filter (iter.go)
//
// A compaction reads its inputs merged into one stream of internal keys
// (user key ascending, then sequence descending) and writes only the entries
// some reader can still see. Live snapshots split the sequence numbers into
// stripes: with snapshots s1 < s2 < ... < sn the stripes are [0, s1],
// (s1, s2], ..., (sn, MaxSeq]. A reader at any sequence number inside a stripe
// sees, for a key, the newest version at or below its sequence, and for the
// snapshots and the latest view that is always the newest version in the
// stripe. So, for each user key:
//
//   - the newest version in each stripe is kept, every other version is
//     shadowed and dropped;
//   - a kept tombstone whose next older kept version is also a tombstone is
//     dropped: readers of its stripe then meet the older tombstone, with the
//     same result (the key is absent);
//   - a kept tombstone with no older kept version is dropped when the
//     bottommost callback reports that no level below the output can hold the
//     key: it has nothing left to hide.
//
// Invariants of the output: it is a subsequence of the input; for every
// snapshot and for the latest view, a read of output plus the levels below at
// that sequence number returns exactly what a read of input plus those levels
// returns; every tombstone written hides an older version (a kept value, or,
// when not bottommost, possibly data below).
//
// # Concurrency
//
// Nothing here holds state between calls: the picker reads trees that do
// not change while it reads them, and an Iter is used by one goroutine. Deciding when to compact,
// and installing the result, is the root package's job.
package compaction
