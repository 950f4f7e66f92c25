// Package memtable is bloomkv's in-memory write buffer: a sorted table of
// internal keys (user key + trailer, see package kv) held in a B-tree
// (github.com/google/btree), with size accounting for the flush trigger and
// an iterator over a point-in-time view. Its API uses only public types
// (kv's keys, kinds and iterator, rangedel's tombstone list): a program can
// use a Memtable on its own, as the example shows.
//
// # Invariants
//
//   - Entries are ordered by kv.CompareInternal: user key ascending, then
//     sequence descending, so the newest version of a key comes first.
//
//   - Sequence numbers are at most kv.MaxSeq and kinds are stored kinds
//     (kv.KindSet, kv.KindDelete); Add panics on anything else. Range
//     tombstones (AddRangeDel) are kept apart from point entries: Get,
//     GetSeq and the iterators see point entries only, and the caller
//     applies RangeDels.
//
//   - An entry is immutable once added. Add copies the caller's key and value
//     into fresh bytes of its own (carved from a slab, see slab.go) laid out as
//
//     user key | trailer (8 bytes, little-endian) | value
//
//     so Key() and Value() slices handed out by Get and iterators stay valid
//     and unchanged for the life of the Memtable. They are capped (full slice
//     expressions), so a caller's append can never overwrite a neighbour.
//
//   - At most one goroutine calls Add at a time (the DB's write path
//     serializes writers); any number of goroutines may call Get, NewIter,
//     Len, ApproximateSize and Empty concurrently with it.
//
//   - An iterator reads a copy-on-write clone of the tree taken under the
//     lock when it was created (btree.Clone is O(1)), so it sees exactly the
//     entries present at that moment and holds no lock while it moves.
//
// The memtable knows nothing of the write-ahead log or of disk: durability
// is the caller's business.
package memtable
