package sstable

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Compression says how a table's data and index blocks are stored. It is
// the one compression setting of bloomkv: the root package's
// bloomkv.Compression is an alias of it.
//
// The zero value is SnappyCompression, the default (bloomkv's API promises
// that). The constants are settings, not file contents: they never reach
// the disk as they are. What a file stores is a block type, given by
// blockType and read back by compressionFromBlockType, whose values never
// change. A new codec is a constant appended below, a block type with the
// next free byte, a case in each of the two conversions, and one in
// writeBlock and decodeBlockContents (ZstdCompression is the example).
type Compression int

const (
	// SnappyCompression stores a block snappy-compressed when that saves at
	// least 12.5% of its size, and raw otherwise. The zero value: the
	// default of WriterOptions and of bloomkv.Options.
	SnappyCompression Compression = iota
	// NoCompression stores blocks as they are.
	NoCompression
	// ZstdCompression stores a block as one zstd frame
	// (github.com/klauspost/compress/zstd, its default level) when that
	// saves at least 12.5%, and raw otherwise: smaller than snappy, slower
	// to write and somewhat slower to read. A fit for the bottom levels,
	// which hold most of the data and are rewritten least often.
	ZstdCompression
)

func (c Compression) String() string {
	switch c {
	case SnappyCompression:
		return "snappy"
	case NoCompression:
		return "none"
	case ZstdCompression:
		return "zstd"
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
	blockTypeZstd   byte = 2 // one zstd frame (RFC 8878) declaring its content size
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
	case ZstdCompression:
		return blockTypeZstd, true
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
	case blockTypeZstd:
		return ZstdCompression, true
	}
	return 0, false
}

// maxZstdBlock bounds the uncompressed size a zstd block may declare: a
// data block holds at least one entry, and a value may be 64 MiB. A larger
// claim is damage, refused before anything is allocated for it.
const maxZstdBlock = 128 << 20

// One zstd encoder and one decoder serve every table: their EncodeAll and
// DecodeAll may be called from many goroutines at once, each call running
// on its caller's goroutine. Made on first use.
var (
	zstdOnce    sync.Once
	zstdEncoder *zstd.Encoder
	zstdDecoder *zstd.Decoder
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		// A single-segment frame always says its content size (the reader
		// checks it); no checksum of its own: the block trailer's crc32c
		// covers the frame.
		zstdEncoder, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false),
			zstd.WithSingleSegment(true), zstd.WithZeroFrames(true))
		if err != nil {
			panic("bloomkv/sstable: zstd encoder: " + err.Error())
		}
		zstdDecoder, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxZstdBlock),
			zstd.WithDecoderMaxWindow(maxZstdBlock))
		if err != nil {
			panic("bloomkv/sstable: zstd decoder: " + err.Error())
		}
	})
	return zstdEncoder, zstdDecoder
}

// zstdDecode decodes a stored zstd block: exactly one frame that declares
// its content size, at most maxZstdBlock, and decodes to exactly that.
func zstdDecode(stored []byte, loc location) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(stored); err != nil {
		return nil, loc.corruptf("zstd frame header: %v", err)
	}
	if !h.HasFCS {
		return nil, loc.corruptf("zstd frame does not declare its size")
	}
	if h.FrameContentSize > maxZstdBlock {
		return nil, loc.corruptf("zstd block of %d bytes claims %d uncompressed", len(stored), h.FrameContentSize)
	}
	_, dec := zstdCodecs()
	out, err := dec.DecodeAll(stored, make([]byte, 0, h.FrameContentSize))
	if err != nil {
		return nil, loc.corruptf("zstd: %v", err)
	}
	if uint64(len(out)) != h.FrameContentSize {
		return nil, loc.corruptf("zstd block decodes to %d bytes, its header says %d", len(out), h.FrameContentSize)
	}
	return out, nil
}
