package sstable

import (
	"encoding/binary"

	"github.com/klauspost/crc32"
)

// Wire constants. They are part of the on-disk format and never change; a
// new layout gets a new FormatVersion.
const (
	// FormatVersion is the table format this package writes and reads.
	FormatVersion uint32 = 1
	// FormatVersionRangeDels is version 1 plus a range-deletion block
	// (located by properties 25 and 26). Only tables holding range
	// tombstones are written with it, so a build that predates range
	// deletions refuses them ("unsupported format version") instead of
	// reading deleted keys back; every other table stays version 1, byte
	// for byte.
	FormatVersionRangeDels uint32 = 2
	// FormatVersionPartitioned is a table whose index is two-level and
	// whose filter is cut into partitions, one per index partition
	// (partitions.go has the layout); it may hold range tombstones
	// (NumRangeDels > 0) or not. Only tables whose index outgrows one
	// partition are written with it, so that every smaller table keeps
	// version 1 or 2, byte for byte, and a build that predates partitions
	// refuses the others instead of reading index partitions as data.
	FormatVersionPartitioned uint32 = 3
	// FormatVersionCompactIndex is FormatVersionPartitioned with index
	// partitions in the compact encoding (index_compact.go): separators
	// stored as user keys, block handles delta-encoded. Partitioned
	// tables are written with it unless WriterOptions.PartitionedFormat
	// asks for version 3; a build that predates it refuses the tables
	// ("unsupported format version") instead of misreading their index.
	FormatVersionCompactIndex uint32 = 4
	// maxRangeDelKey bounds the keys of a range-deletion block (the
	// engine's MaxKeySize).
	maxRangeDelKey = 64 << 10
	// blockTrailerLen is the compression type byte plus the crc32c.
	blockTrailerLen = 5
	// footerLen is the fixed size of the footer at the end of every table.
	footerLen = 64
	// tableMagic ends every table file.
	tableMagic = "BLOOMSST"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// blockChecksum returns the crc32c a block trailer stores: over the stored
// block bytes followed by the type byte.
func blockChecksum(stored []byte, typ byte) uint32 {
	c := crc32.Update(0, castagnoli, stored)
	return crc32.Update(c, castagnoli, byteValues[int(typ):int(typ)+1])
}

// byteValues holds each byte value at its own index. A slice of it feeds
// the type byte to crc32 without allocating: a []byte{typ} literal escapes
// into crc32's assembly, one heap allocation per block read or written.
var byteValues = func() (a [256]byte) {
	for i := range a {
		a[i] = byte(i)
	}
	return a
}()

// blockHandle locates a block in the file. size excludes the 5-byte trailer.
type blockHandle struct {
	offset, size uint64
}

// end returns the offset just past the block's trailer.
func (h blockHandle) end() uint64 { return h.offset + h.size + blockTrailerLen }

// appendHandle appends h as two uvarints (the index-block value encoding).
func appendHandle(dst []byte, h blockHandle) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.size)
}

// decodeHandlePrefix decodes the handle at the start of src and returns
// the bytes it took; ok is false when src does not start with one.
func decodeHandlePrefix(src []byte) (h blockHandle, n int, ok bool) {
	off, n1 := binary.Uvarint(src)
	if n1 <= 0 {
		return blockHandle{}, 0, false
	}
	size, n2 := binary.Uvarint(src[n1:])
	if n2 <= 0 {
		return blockHandle{}, 0, false
	}
	return blockHandle{offset: off, size: size}, n1 + n2, true
}

// decodeHandle decodes an index-block value, which must be exactly two
// uvarints. ok is false otherwise.
func decodeHandle(src []byte) (h blockHandle, ok bool) {
	off, n := binary.Uvarint(src)
	if n <= 0 {
		return blockHandle{}, false
	}
	size, m := binary.Uvarint(src[n:])
	if m <= 0 || n+m != len(src) {
		return blockHandle{}, false
	}
	return blockHandle{offset: off, size: size}, true
}

// blockKind names a block in error messages.
type blockKind uint8

const (
	kindData blockKind = iota
	kindIndex
	kindFilter
	kindProperties
	kindFooter
	kindRangeDel
	kindRangeFilter
	kindIndexPartition
	kindFilterPartition
)

func (k blockKind) String() string {
	switch k {
	case kindData:
		return "data block"
	case kindIndex:
		return "index block"
	case kindFilter:
		return "filter block"
	case kindProperties:
		return "properties block"
	case kindFooter:
		return "footer"
	case kindRangeDel:
		return "range-deletion block"
	case kindRangeFilter:
		return "range-filter block"
	case kindIndexPartition:
		return "index partition"
	case kindFilterPartition:
		return "filter partition"
	}
	return "unknown block"
}
