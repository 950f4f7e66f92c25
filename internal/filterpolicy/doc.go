// Package filterpolicy is the one home of the engine's filter policy: how
// many bits per key the filter of each table it writes gets, whether an
// existing table's filter is stale, and which filters stay pinned in the
// block cache. It reads a description of the tree, not the engine.
//
// # The tree it reads
//
// A Tree is NumLevels levels of Table handles, each with its user-key
// range; a stats function the engine supplies says, per table, the keys
// its filter indexes (or its entries, for a table without one) and the
// bits per key it was written with. The engine's version satisfies Tree
// as it is and its cached table properties answer the stats, so asking
// the policy copies nothing; a test describes a tree by hand with Levels
// of *TableDesc. Invariants a Tree keeps: level 0 is newest first and its
// tables may overlap; each deeper level is sorted by key with disjoint
// ranges; each table has one handle (== is identity); and a tree never
// changes once built (the coverage memo keys on its identity).
//
// # What it decides (policy.go)
//
// With Settings.PerLevel off every table gets the uniform BitsPerKey. On,
// a table gets its run's share of the same total memory by Monkey's rule
// (filter.AllocateBitsProbed): runs probed by fewer absent keys per key
// they hold get more bits. The runs an absent Get probes are each level-0
// table and each deeper level; a flush is a level-0 run of its memtable's
// keys, a compaction grows its output level by the keys it brings from
// the level above. SkipLastLevel writes the tree's last level without
// filters and spreads the budget over the others.
//
// Each run is weighed by the fraction of absent keys that probe it
// (coverage.go), estimated from the tables' key ranges. A table keeps the
// bits it was written with while the tree changes shape around it, so
// each write also closes part of the gap between what the live filters
// spend and the uniform setting's budget (budget.go).
//
// Stale says whether an existing table's filter differs from what the
// policy would write for it now (a trivial move that would carry it to a
// level of different bits, or a table written under other settings);
// PinsFilter says which probed filters stay pinned in the block cache.
// docs/filter-policy.md derives the rules and works an example.
package filterpolicy
