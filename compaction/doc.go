// Package compaction decides what to compact and filters what a compaction
// writes.
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
package compaction
