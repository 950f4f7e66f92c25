// Package batchrep owns the encoding of a write batch: the bytes of
// bloomkv.Batch, which are also, byte for byte, one record of a
// write-ahead log (package wal frames records; this package says what one
// holds). The engine encodes and decodes batches here; kvtool decodes them
// here too, so the tool and the engine cannot disagree on the format.
//
// # Layout
//
// All integers are little-endian (encoding/binary). These wire constants
// never change.
//
//	batch := header operation*
//
//	header (HeaderLen = 12 bytes):
//	+--------+------+-----------------------------------------------+
//	| offset | size | field                                         |
//	+--------+------+-----------------------------------------------+
//	| 0      | 8    | seq: uint64, the sequence of operation 0      |
//	| 8      | 4    | count: uint32, how many operations follow     |
//	+--------+------+-----------------------------------------------+
//
//	operation (set):    kind=1 (1 byte) | uvarint key length | key | uvarint value length | value
//	operation (delete): kind=0 (1 byte) | uvarint key length | key
//	operation (range delete): kind=2 (1 byte) | uvarint start length | start |
//	                          uvarint end length | end
//
// Operation i has sequence seq+i. The kinds are base.KindSet,
// base.KindDelete and base.KindRangeDelete (DB.DeleteRange: every key in
// [start, end) older than the operation is deleted). A batch ends exactly
// after its count-th operation.
//
// Kind 2 is the one addition since the format was first written: a batch
// without it is byte for byte what it always was, so older logs decode as
// before; a log holding a range delete is refused by an older build
// ("unknown kind 2") rather than misread.
//
// # What a decoder accepts
//
// A batch decodes when: it is at least HeaderLen bytes long; seq is at
// least 1 (sequence 0 is never handed out) and seq+count is at most
// base.MaxSeq; every operation has a known kind, a key of 1 to
// Limits.MaxKey bytes and (a set) a value of at most Limits.MaxValue
// bytes or (a range delete) an end key of 1 to Limits.MaxKey bytes that
// sorts after the start key, each length inside the batch; and no byte follows the last
// operation. A length written with more bytes than it needs (a non-minimal
// uvarint) is accepted; the encoder never writes one. Anything else is a
// *CorruptionError, wrapping base.ErrCorruption, that names the byte of
// the batch where the problem is. A batch of zero operations decodes; the
// write-ahead log never holds one (package wal rejects it).
//
// # Worked example
//
// A batch at sequence 5 that sets "ab" to "x" then deletes "c" is 21
// bytes (pinned by TestGolden):
//
//	05 00 00 00 00 00 00 00   seq 5
//	02 00 00 00               count 2
//	01 02 61 62 01 78         set "ab" = "x"   (sequence 5)
//	00 01 63                  delete "c"       (sequence 6)
package batchrep
