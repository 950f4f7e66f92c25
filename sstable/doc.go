// Package sstable writes and reads bloomkv's sorted string tables: immutable
// files of internal-key/value entries in kv.CompareInternal order, with a
// bloom filter over their keys so that a point lookup for an absent key
// reads no data block. It also provides the block cache and the table cache.
//
// # Using the package
//
// Its types are its own and those of the public packages kv, rangedel,
// filter and vfs; Example writes, reads and walks a table with nothing else.
//
//   - Keys are internal keys (package kv): a user key and an 8-byte trailer,
//     sequence << 8 | kind. kv.MakeInternalKey builds one,
//     kv.ParseInternalKey splits one, kv.CompareInternal is their order
//     (user keys ascending, then the newest version first).
//   - A Writer writes through a vfs.File and takes entries of kind
//     kv.KindSet or kv.KindDelete in strictly increasing kv.CompareInternal
//     order, and range tombstones through SetRangeDels (fragmented spans, as
//     a rangedel.List holds them). Finish syncs and closes the file and
//     returns the table's size and bounds (WriterMeta).
//   - Open takes the file, a name for its errors, a file number and the file
//     size (WriterMeta.Size, or the file's Stat). The file number keys the
//     block cache, so tables sharing a BlockCache need distinct numbers.
//   - Reader.Get returns the newest version of a user key at or below a
//     sequence number, deletions included (kind kv.KindDelete): the caller
//     says what a deletion means. Neither Get nor the iterators apply range
//     tombstones; the caller consults Reader.RangeDels. Iterators are
//     kv.Iterators over internal keys; SeekGE(kv.MakeSearchKey(ukey, seq))
//     lands on the newest version of ukey visible at seq.
//   - A TableCache opens the tables of one directory, named by their file
//     number: NNNNNN.sst, zero-padded to at least six digits.
//   - Damaged or hostile bytes yield errors wrapping kv.ErrCorruption.
//
// All integers are little-endian (encoding/binary); "uvarint" is
// encoding/binary's unsigned varint, "varint" its zigzag signed one. Every
// constant and layout below is part of the on-disk format and never
// changes: a different layout needs a new FormatVersion.
//
// # File layout
//
//	+--------------+-----+--------------+--------------+-------+------------+------------+--------+
//	| data block 0 | ... | data block n | filter block | index | range-del. | properties | footer |
//	|  + trailer   |     |  + trailer   |  + trailer   | +trl. |  + trailer |  + trailer | 64 B   |
//	+--------------+-----+--------------+--------------+-------+------------+------------+--------+
//	 \____________ DataSize ___________/  (absent when      (only in tables of
//	                                      BloomBitsPerKey    FormatVersionRangeDels)
//	                                      <= 0)
//
// A table written with WriterOptions.RangeFilterBitsPerKey also has a
// range-filter block among the metadata blocks (after the filter block;
// see rangefilter.go for its contents and TestGoldenRangeFilterTable for
// a worked example), located by properties 27 and 28 alone: the footer
// and the format version do not change, and a reader that predates it
// skips the two properties and reads the table without it.
//
// Readers locate blocks only through the footer, the index and the
// properties, never by this order, except that data blocks must lie in
// [0, DataSize).
//
// # Format versions
//
//	1  everything below but the range-deletion block
//	2  (FormatVersionRangeDels) version 1 plus a range-deletion block,
//	   located by properties 25 and 26
//	3  (FormatVersionPartitioned) a two-level index and a filter cut into
//	   partitions (partitions.go has the layout), with or without a
//	   range-deletion block; property 29 counts the partitions
//	4  (FormatVersionCompactIndex) version 3 with compact index
//	   partitions: separators stored as user keys, block handles
//	   delta-encoded (index_compact.go has the layout)
//
// A writer uses version 2 only for a table that holds range tombstones
// (DB.DeleteRange), so every other table is byte for byte a version 1
// table, and a build that predates range deletions refuses a table that
// has them ("unsupported format version") instead of serving the keys they
// delete. Likewise a writer partitions only a table whose index outgrows
// one partition, as version 4 unless WriterOptions.PartitionedFormat asks
// for version 3, which builds that predate version 4 can read. Footer and
// properties carry the version and must agree; a version 1 table must not
// have properties 25-26, a version 2 table must.
//
// # Range-deletion block
//
// The table's range tombstones, fragmented into non-overlapping spans in
// key order, each with the sequences of the tombstones covering it,
// newest first; package rangedel specifies the bytes (a count, then per
// span: start, end, sequences, all uvarint-framed) and checks them on
// decode. It is stored like a data block: compressed when that
// pays, followed by the trailer. A Reader decodes it at Open and keeps it
// in memory, as it does the filter: Get consults it whatever the filter
// says (the filter is over point keys only). Damage is ErrCorruption
// naming the file, "range-deletion block" and its offset.
//
// Properties 10-13 still describe the point entries only. The table's
// bounds in the manifest (Reader.Bounds, which CheckIdentity compares)
// widen them to the tombstones: a span [s, e)#q contributes s#q,RANGEDEL
// and e'#0,RANGEDEL, where e' is e, or k when e is k followed by a zero
// byte (bounds are inclusive; every key below k\x00 is at most k), and its
// sequences widen the sequence range.
//
// # Block trailer
//
// Every block on disk is followed by 5 bytes:
//
//	+-----------------------+---------------------------------------------+
//	| type: uint8           | crc32c: uint32 (Castagnoli, unmasked) of    |
//	| 0 = raw, 1 = snappy,  | the stored block bytes followed by the type |
//	| 2 = zstd              |                                             |
//	+-----------------------+---------------------------------------------+
//
// The type byte is a block type, not a Compression value: Compression's
// constants are settings (its zero value, SnappyCompression, is the
// default) and only block types reach the disk (blockType converts). A
// block handle's size counts the stored bytes, not the trailer. With
// SnappyCompression, data and index blocks are stored snappy-compressed
// (github.com/golang/snappy block format) only when that saves at least
// 12.5%; filter and properties blocks are always stored raw. With
// ZstdCompression the same rule stores them as one zstd frame (RFC 8878,
// github.com/klauspost/compress/zstd): single-segment, so it declares its
// content size, which readers check (at most 128 MiB, and exactly what the
// frame decodes to), and without a frame checksum (the trailer's covers
// it). Every block says its own type, so one table may mix them and a
// reader accepts any type for any block: tables written under other
// settings, or at other levels, read the same.
//
// # Data and index blocks
//
// Both hold entries sorted by kv.CompareInternal, prefix-compressed
// against the previous entry, then an array of restart points:
//
//	entry:   shared uvarint | unshared uvarint | valueLen uvarint |
//	         key[shared:] (unshared bytes) | value (valueLen bytes)
//	block:   entry* | restart[0] uint32 | ... | restart[r-1] uint32 | r uint32
//
// shared is the length of the prefix taken from the previous entry's key.
// A restart point is the block offset of an entry stored with shared = 0;
// restart[0] = 0, they increase strictly, and the writer starts one every
// RestartInterval entries (16 by default), so a reader binary searches the
// restarts and scans at most one interval. r >= 1 always: the empty block
// (only in the index of an empty table) is 00000000 01000000. Data blocks
// are cut once they reach BlockSize bytes uncompressed (4096 by default)
// and are never empty.
//
// Data-block keys are internal keys of a stored kind (set or delete).
// Index blocks have one entry per data block, in file order, with a restart
// at every entry. The key is an internal key k with lastKey(block) <= k <
// firstKey(next block); the writer shortens it when it can to a user key
// between the two with trailer (kv.MaxSeq, kv.KindSeek), and otherwise
// uses the block's last key (always when the blocks split the versions of
// one user key). The value is the block handle: offset uvarint | size
// uvarint. (The index partitions of version 4 tables store these keys and
// handles compactly: index_compact.go.)
//
// # Filter block
//
// The filter package's filter block (see its doc: a standard or blocked
// bloom filter's bit array, key count, k and variant, or a binary fuse
// filter's fingerprints and shape; the variant is the last byte), built
// over the user key of every entry, or over FilterKey(userKey) when the
// writer has an extractor, or over both with FilterWholeKey (the
// extractor's key of a run of entries first, then each entry's user key).
// Consecutive equal filter keys are added once. Get probes the whole key
// when the filter holds whole keys, else the extractor's key when the
// reader's extractor has the table's name; a prefix seek probes the prefix
// when the table's filter keys are the reader's extractor's. The
// properties record the extractor's name;
// a reader probes with its own extractor only when the names match, probes
// whole-key filters with the user key, and ignores any other filter, so it
// never suffers a false negative.
//
// # Properties block
//
// A sequence of records in strictly increasing tag order:
//
//	tag uvarint | length uvarint | value (length bytes)
//
// Numbers are uvarint values filling their record, except BloomBitsPerKey
// (varint) and FilterBitsPerKey (the 8 bytes of a float64, IEEE 754 bits
// little-endian); keys and names are raw bytes. Tags 01-20 (decimal) are
// required; 21 to 29 are optional (written only when set); readers skip
// unknown tags, which leaves room for later additions.
//
//	01 FormatVersion   08 IndexSize        15 BloomBitsPerKey (as configured)
//	02 NumEntries      09 FilterSize       16 FilterKeyCount
//	03 NumDeletions    10 SmallestKey      17 FilterKeyName ("" = whole key)
//	04 NumDataBlocks   11 LargestKey       18 Compression (a block type)
//	05 RawKeyBytes     12 SmallestSeq      19 BlockSize
//	06 RawValueBytes   13 LargestSeq       20 RestartInterval
//	07 DataSize        14 FilterVariant (0 = no filter)
//	21 FileNum (the table's own file number)
//	22 DBID (the identity of the database it was written for)
//	23 FilterWholeKeys (1: the filter holds the whole user keys as well as
//	   the keys of FilterKeyName; absent or 0: only those)
//	24 FilterBitsPerKey (a fractional bits-per-key setting, exactly;
//	   BloomBitsPerKey then holds it rounded, at least 1)
//	25 RangeDelHandle (bytes: offset uvarint | size uvarint, the
//	   range-deletion block's handle; version 2 tables only)
//	26 NumRangeDels (the block's (span, sequence) pairs; version 2 only)
//	27 RangeFilterHandle (bytes: offset uvarint | size uvarint, the
//	   range-filter block's handle; any version)
//	28 RangeFilterBitsPerKey (a float64 as FilterBitsPerKey: the budget
//	   the range filter was built with)
//	29 IndexPartitions (the number of index and filter partitions;
//	   version 3 and 4 tables only)
//
// Sizes include trailers; DataSize is where the data blocks end.
//
// Identity: a table put in another's place (an older copy, a table of
// another database, one renamed) reads without any checksum error, so
// Reader.CheckIdentity compares what the table says of itself -- FileNum,
// DBID, key and sequence ranges -- with what the manifest says of it; the
// table cache checks every table it opens for the engine.
//
// # Footer (64 bytes, at the end of the file)
//
//	offset  0: index handle       offset uint64 | size uint64
//	offset 16: filter handle      offset uint64 | size uint64  (0, 0: no filter)
//	offset 32: properties handle  offset uint64 | size uint64
//	offset 48: format version     uint32 (1; 2 with range deletions; 3, 4 partitioned)
//	offset 52: crc32c of bytes [0, 52)  uint32
//	offset 56: magic              "BLOOMSST" (42 4c 4f 4f 4d 53 53 54)
//
// A reader checks the magic, the checksum and the version, and that every
// handle lies inside the file before the footer.
//
// # Worked example
//
// The table holding "ab"#2,SET = "x" and "ac"#1,DEL, written with
// NoCompression, BloomBitsPerKey 10 and default options otherwise, is 232
// bytes (pinned by TestGoldenTable):
//
//	data block, offset 0, 34 bytes:
//	  00 0a 01  61 62 01 02 00 00 00 00 00 00  78   shared 0, unshared 10, value 1: "ab"#2,SET "x"
//	  01 09 00  63 00 01 00 00 00 00 00 00          shared 1 ("a"), unshared 9: "ac"#1,DEL ""
//	  00 00 00 00  01 00 00 00                      restart[0] = 0, r = 1
//	  00  59 20 22 76                               trailer: raw, crc32c
//	filter block, offset 39, 14 bytes:
//	  ca 01 02 02 a4 10 20 40  02 00 00 00  07  01  64 bits, 2 keys, k = 7, standard
//	  00  ef 45 71 84
//	index block, offset 58, 22 bytes:
//	  00 09 02  62 ff ff ff ff ff ff ff ff  00 22   "b"#MaxSeq,SEEK -> handle (0, 34)
//	  00 00 00 00  01 00 00 00
//	  00  5b 60 6d ce
//	properties block, offset 85, 78 bytes:
//	  01 01 01  02 01 02  03 01 01  04 01 01  05 01 14  06 01 01  07 01 27
//	  08 01 1b  09 01 13  0a 0a 61 62 01 02 00 00 00 00 00 00
//	  0b 0a 61 63 00 01 00 00 00 00 00 00  0c 01 01  0d 01 02  0e 01 01
//	  0f 01 14  10 01 02  11 00  12 01 00  13 02 80 20  14 01 10
//	  00  08 b9 af d8
//	footer, offset 168:
//	  3a 00 00 00 00 00 00 00  16 00 00 00 00 00 00 00   index (58, 22)
//	  27 00 00 00 00 00 00 00  0e 00 00 00 00 00 00 00   filter (39, 14)
//	  55 00 00 00 00 00 00 00  4e 00 00 00 00 00 00 00   properties (85, 78)
//	  01 00 00 00  0f 18 f1 3f  42 4c 4f 4f 4d 53 53 54  version 1, crc32c, magic
//
// # Invariants
//
//   - A table's keys strictly increase; index keys separate blocks as above.
//   - Every byte of a table is covered by a checksum (block trailers, footer
//     crc), and every decoder checks structure too: damaged or hostile bytes
//     yield an error wrapping kv.ErrCorruption that names the file, the
//     block kind and its offset, never a panic and never wrong data.
//     Reader.Check verifies everything, including properties and the
//     filter's lack of false negatives.
//   - A Reader keeps its index and filter blocks in memory for its life;
//     data blocks are immutable once decoded, so the block cache and any
//     number of iterators share them, and a value returned by Get stays
//     valid (aliasing its block) even after the block leaves the cache.
//     A value returned by GetSeqHeld is valid until its BlockRef is
//     released, and a key or value of an iterator made with
//     NewIterReleasing until its next move or Close: a data block's buffer
//     is reused for another block only once the cache has evicted it and
//     every holder has released it, and holders that never release (other
//     iterators, Get) keep it from reuse.
//   - A Get served from the block cache allocates nothing (beyond what a
//     FilterKey extractor may), nor does a TableCache.Find that hits. A
//     GetSeqHeld that reads its block from the file decodes it into the
//     buffer of a block the cache evicted.
//   - The table cache closes a Reader only after the cache and every holder
//     have released it. It keeps one Reader, so one file descriptor, per
//     table, and no more tables open than its capacity or, when holders pin
//     more, than they pin (tables deleted while held excepted, until
//     released).
//   - A Get that hits the table cache and the block cache takes no lock and
//     writes no cache line shared with Gets on other cores, but for the
//     reference count of the block it reads (GetSeqHeld; only Gets reading
//     the same block at the same time share that line): table references
//     and hit counters live in per-P slots (internal/pslot), the block
//     cache is probed lock-free and its CLOCK bit is written only when
//     clear.
package sstable
