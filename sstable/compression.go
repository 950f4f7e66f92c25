package sstable

import "fmt"

// Compression says how a table's data and index blocks are stored. It is
// the one compression setting of bloomkv: the root package's
// bloomkv.Compression is an alias of it.
//
// The zero value is SnappyCompression, the default (bloomkv's API promises
// that). The constants are settings, not file contents: they never reach
// the disk as they are. What a file stores is a block type, given by
// blockType and read back by compressionFromBlockType, whose values never
// change. A new codec (ZstdCompression, issue 14) is a constant appended
// below, a block type with the next free byte, a case in each of the two
// conversions, and one in writeBlock and decodeBlockContents.
type Compression int

const (
	// SnappyCompression stores a block snappy-compressed when that saves at
	// least 12.5% of its size, and raw otherwise. The zero value: the
	// default of WriterOptions and of bloomkv.Options.
	SnappyCompression Compression = iota
	// NoCompression stores blocks as they are.
	NoCompression
)

func (c Compression) String() string {
	switch c {
	case SnappyCompression:
		return "snappy"
	case NoCompression:
		return "none"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// Valid reports whether c is one of the constants above.
func (c Compression) Valid() bool {
	_, ok := blockType(c)
	return ok
}

// Block types: the first byte of every block trailer, which says how the
// block is stored. The properties block records the table's Compression
// (tag 18) with the same codes. They are part of the on-disk format and
// never change; a new codec takes the next free value.
const (
	blockTypeRaw    byte = 0 // stored as it is
	blockTypeSnappy byte = 1 // github.com/golang/snappy block format
)

// blockType returns the block type that stands for c on disk: in a block
// trailer, the type of a block that c actually compressed (a block that
// compression would not shrink enough is stored as blockTypeRaw whatever
// c is), and in the properties, c itself. ok is false when c is not a
// known Compression.
func blockType(c Compression) (typ byte, ok bool) {
	switch c {
	case NoCompression:
		return blockTypeRaw, true
	case SnappyCompression:
		return blockTypeSnappy, true
	}
	return 0, false
}

// compressionFromBlockType is the inverse of blockType: the Compression
// that a block type read from a trailer or the properties stands for. ok
// is false for a type this version does not know, which the caller reports
// as corruption.
func compressionFromBlockType(typ byte) (c Compression, ok bool) {
	switch typ {
	case blockTypeRaw:
		return NoCompression, true
	case blockTypeSnappy:
		return SnappyCompression, true
	}
	return 0, false
}
