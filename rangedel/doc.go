// Package rangedel holds range tombstones (DB.DeleteRange): a tombstone
// [Start, End)#Seq deletes every version of every user key in [Start, End)
// whose sequence is below Seq. Tombstones are kept fragmented: a List is a
// sequence of non-overlapping spans in key order, each with the sequences
// of every tombstone that covers all of it, newest first, so that asking
// "which tombstones cover this key?" is one binary search.
//
// Fragmenting [a, e)#5 and [c, g)#9 gives three spans:
//
//	[a, c) 5    [c, e) 9 5    [e, g) 9
//
// # Block layout
//
// An SSTable stores its tombstones in a range-deletion block (package
// sstable frames it: checksummed, compressed like data blocks, located by
// properties; see sstable/doc.go). Its contents, with every integer an
// encoding/binary uvarint. These wire constants never change.
//
//	block := count span*count
//	span  := startLen start endLen end seqCount seq*seqCount
//
// Spans are in key order and do not overlap (each span's end <= the next
// span's start); start < end, both 1 to MaxKeySize bytes; sequences are
// 1 to kv.MaxSeq and strictly descending. No byte follows the last span.
//
// Worked example: [a, c)#5 and [c, e)#9,5 encode as (pinned by
// TestGoldenBlock)
//
//	02                      two spans
//	01 61  01 63  01 05     "a" "c" {5}
//	01 63  01 65  02 09 05  "c" "e" {9, 5}
package rangedel
