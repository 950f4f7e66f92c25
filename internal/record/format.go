package record

import (
	"encoding/binary"
	"math/bits"

	"github.com/klauspost/crc32"
)

// Wire constants. They are part of the on-disk format described in doc.go and
// never change: a log written by one version of bloomkv must be readable by
// every later one.
const (
	// BlockSize is the size of the blocks a log is cut into. No fragment
	// crosses a block boundary.
	BlockSize = 32 * 1024

	// headerSize is the size of a fragment header: checksum (4), length (2),
	// type (1).
	headerSize = 7

	// maxFragmentPayload is the most payload one fragment can carry: a whole
	// block less its header. It fits the uint16 length field.
	maxFragmentPayload = BlockSize - headerSize

	// checksumMaskDelta is added after rotating a raw CRC (see maskChecksum).
	checksumMaskDelta = 0x3c6ef372
)

// fragmentType says where a fragment sits in its record. Zero is reserved so
// that zero-filled space (preallocation, a torn write) never parses as a
// fragment.
type fragmentType uint8

const (
	typeZero   fragmentType = 0 // reserved, never written
	typeFull   fragmentType = 1 // the whole record
	typeFirst  fragmentType = 2 // first fragment of a record that continues
	typeMiddle fragmentType = 3 // neither first nor last
	typeLast   fragmentType = 4 // last fragment of a record
)

func (t fragmentType) valid() bool { return t >= typeFull && t <= typeLast }

func (t fragmentType) String() string {
	switch t {
	case typeZero:
		return "zero"
	case typeFull:
		return "full"
	case typeFirst:
		return "first"
	case typeMiddle:
		return "middle"
	case typeLast:
		return "last"
	}
	return "unknown"
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// typeSeed[t] is the CRC32C of the single byte t, so that the checksum of
// type byte + payload continues from it without building a joined slice.
var typeSeed = func() (seeds [256]uint32) {
	for t := range seeds {
		seeds[t] = crc32.Checksum([]byte{byte(t)}, castagnoli)
	}
	return seeds
}()

// fragmentChecksum returns the stored (masked) checksum of a fragment.
func fragmentChecksum(t fragmentType, payload []byte) uint32 {
	return maskChecksum(crc32.Update(typeSeed[t], castagnoli, payload))
}

// maskChecksum rotates the raw CRC right by 15 bits and adds a constant. A
// record payload may itself hold bytes framed by this package (a log stored
// as a value), and the CRC of data that embeds its own CRCs is weaker than it
// looks; the mask makes stored checksums differ from raw ones.
func maskChecksum(crc uint32) uint32 {
	return bits.RotateLeft32(crc, -15) + checksumMaskDelta
}

// putHeader writes a fragment header into h[:headerSize].
func putHeader(h []byte, t fragmentType, payload []byte) {
	binary.LittleEndian.PutUint32(h[0:4], fragmentChecksum(t, payload))
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(payload)))
	h[6] = byte(t)
}

// header is a decoded fragment header.
type header struct {
	checksum uint32
	length   int
	typ      fragmentType
}

func parseHeader(h []byte) header {
	return header{
		checksum: binary.LittleEndian.Uint32(h[0:4]),
		length:   int(binary.LittleEndian.Uint16(h[4:6])),
		typ:      fragmentType(h[6]),
	}
}

// intactFragmentIn reports whether an intact fragment starts at any offset
// from `from` on in block (the bytes of one block read from the file,
// starting at a block boundary): a known type, a payload inside the block and
// a matching checksum. It is the test the torn-tail rule applies to the rest
// of a log after damage. Random bytes pass it with odds of about 2^-32 per
// offset; the cheap type and length tests reject most offsets before any
// checksum is computed.
func intactFragmentIn(block []byte, from int) bool {
	for off := max(from, 0); off+headerSize <= len(block); off++ {
		if fragmentType(block[off+6]).valid() && intactFragmentAt(block[off:]) {
			return true
		}
	}
	return false
}

// intactFragmentAt reports whether b begins with an intact fragment whose
// payload lies inside b.
func intactFragmentAt(b []byte) bool {
	if len(b) < headerSize {
		return false
	}
	h := parseHeader(b)
	if !h.typ.valid() || headerSize+h.length > len(b) {
		return false
	}
	return fragmentChecksum(h.typ, b[headerSize:headerSize+h.length]) == h.checksum
}
