// Package kv is the vocabulary bloomkv's public packages share (memtable,
// sstable, compaction): internal keys, their kinds and order, the iterator
// over them, and the corruption marker.
//
// # Internal keys
//
// Every entry stored in a memtable or an SSTable is keyed by an internal key:
//
//	+---------------------+-------------------------------------------+
//	| user key (n bytes)  | trailer: uint64 little-endian (8 bytes)   |
//	+---------------------+-------------------------------------------+
//	trailer = sequence << 8 | kind
//
// Internal keys order by user key ascending (bytes.Compare), then by trailer
// descending, so the newest version of a user key comes first. Sequence
// numbers are at most MaxSeq (56 bits). These encodings are part of the
// on-disk format and never change.
//
// Invariants: a trailer's kind is one of the Kind constants (KindSeek is
// used only in search keys, never stored); sequence numbers of stored
// entries are unique per database. CompareTrailers is the one definition of
// the order of versions; the memtable and the block decoder use it rather
// than comparing trailers themselves.
//
// Everything here is a pure function, a constant or an interface, safe for
// concurrent use.
package kv
