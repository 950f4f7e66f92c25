package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/klauspost/crc32"
)

// Serialized form of the standalone filters (MarshalBinary, WriteTo).
//
// Every type is wrapped in one envelope:
//
//	offset  size  field
//	0       4     magic "BKVF"
//	4       1     format version, 1
//	5       1     kind: 1 Bloom, 2 Counting, 3 Cuckoo, 4 Scalable,
//	              5 Cuckoo with another bucket size or with expansion,
//	              6 RangeFilter (rangefilter_codec.go)
//	6       2     reserved, zero
//	8       8     body length L, uint64
//	16      L     body, laid out per kind (see the kind's *_codec.go)
//	16+L    4     CRC-32C (Castagnoli) of bytes [0, 16+L), uint32
//
// All integers are little-endian; floats are IEEE 754 binary64 bit patterns
// stored as uint64. Reserved fields and unused trailing bits must be zero.
// Decoders check the magic, version, kind, length and checksum before they
// look at the body, then check the body's own fields for consistency, and
// reject anything else with an error wrapping ErrCorruption that names
// the kind and the byte offset. These constants and layouts never change; a
// new layout gets a new version number.
//
// Memory while decoding. No decoder allocates for a length or count it has
// not seen the bytes for. From a byte slice (UnmarshalBinary, and
// UnmarshalJSON, which hands it the base64-decoded bytes) every array is
// sized by a count checked against the bytes left, so the decoded filter
// is at most the input's size; with the few dozen bytes of bookkeeping per
// cuckoo table or scalable layer, each of which takes at least 24 input
// bytes, decoding allocates at most 8 bytes per input byte (5.6 measured
// for 2000 one-bucket tables, the worst case). From a stream (ReadFrom,
// LoadChunks) the body is gathered as it arrives (arrivals.go), then
// decoded as from a slice.
const (
	encodingMagic   = "BKVF"
	encodingVersion = 1
	headerLen       = 16
	checksumLen     = 4
)

// filterKind is the envelope's kind byte.
type filterKind uint8

const (
	kindBloom    filterKind = 1
	kindCounting filterKind = 2
	kindCuckoo   filterKind = 3
	kindScalable filterKind = 4
	// kindCuckooGrown is a Cuckoo with another bucket size than 4, or with
	// expansion (cuckoo_codec.go); kind 3 stays the layout of the others.
	kindCuckooGrown filterKind = 5
)

func (k filterKind) String() string {
	switch k {
	case kindBloom:
		return "bloom"
	case kindCounting:
		return "counting"
	case kindCuckoo, kindCuckooGrown:
		return "cuckoo"
	case kindScalable:
		return "scalable"
	case kindRange:
		return "range"
	}
	return "unknown"
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxBodyLen bounds a declared body length before anything is read, so a
// damaged length cannot make a reader loop for exabytes.
const maxBodyLen = 1 << 50

// bodyEncoder is what each filter type implements to be serialized.
type bodyEncoder interface {
	bodyLen() uint64
	encodeBody(e *encoder)
}

// marshal returns the whole envelope for f in one exactly-sized slice.
func marshal(kind filterKind, f bodyEncoder) []byte {
	l := f.bodyLen()
	buf := bytes.NewBuffer(make([]byte, 0, headerLen+l+checksumLen))
	_, _ = writeEnvelope(buf, kind, f) // a bytes.Buffer cannot fail
	return buf.Bytes()
}

// writeEnvelope streams the envelope for f to w through a small buffer, so a
// large filter is never copied whole.
func writeEnvelope(w io.Writer, kind filterKind, f bodyEncoder) (int64, error) {
	e := &encoder{w: w, buf: make([]byte, 0, 64<<10)}
	e.bytes([]byte(encodingMagic))
	e.u8(encodingVersion)
	e.u8(uint8(kind))
	e.u16(0)
	e.u64(f.bodyLen())
	f.encodeBody(e)
	e.flush()
	if e.err == nil {
		var sum [checksumLen]byte
		binary.LittleEndian.PutUint32(sum[:], e.crc)
		var n int
		n, e.err = w.Write(sum[:])
		e.n += int64(n)
	}
	return e.n, e.err
}

// encoder buffers little-endian fields, checksumming them as they are
// flushed. After the first write error it does nothing.
type encoder struct {
	w   io.Writer
	buf []byte
	crc uint32
	n   int64
	err error
}

func (e *encoder) flush() {
	if e.err != nil || len(e.buf) == 0 {
		e.buf = e.buf[:0]
		return
	}
	e.crc = crc32.Update(e.crc, castagnoli, e.buf)
	n, err := e.w.Write(e.buf)
	e.n += int64(n)
	e.err = err
	e.buf = e.buf[:0]
}

func (e *encoder) room(n int) {
	if len(e.buf)+n > cap(e.buf) {
		e.flush()
	}
}

func (e *encoder) bytes(p []byte) { e.room(len(p)); e.buf = append(e.buf, p...) }
func (e *encoder) u8(v uint8)     { e.room(1); e.buf = append(e.buf, v) }
func (e *encoder) u16(v uint16)   { e.room(2); e.buf = binary.LittleEndian.AppendUint16(e.buf, v) }
func (e *encoder) u32(v uint32)   { e.room(4); e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }
func (e *encoder) u64(v uint64)   { e.room(8); e.buf = binary.LittleEndian.AppendUint64(e.buf, v) }
func (e *encoder) f64(v float64)  { e.u64(math.Float64bits(v)) }

// words writes ws with atomic loads, so a Bloom being added to concurrently
// is read without a data race.
func (e *encoder) words(ws []uint64) {
	for len(ws) > 0 {
		e.room(8)
		n := min(len(ws), (cap(e.buf)-len(e.buf))/8)
		for i := range ws[:n] {
			e.buf = binary.LittleEndian.AppendUint64(e.buf, atomic.LoadUint64(&ws[i]))
		}
		ws = ws[n:]
	}
}

// openEnvelope validates a whole encoding held in data and returns its body.
func openEnvelope(kind filterKind, data []byte) ([]byte, error) {
	if len(data) < headerLen+checksumLen {
		return nil, corruptf(kind, 0, "encoding of %d bytes is shorter than the %d-byte header and checksum", len(data), headerLen+checksumLen)
	}
	l, err := checkHeader(kind, data[:headerLen])
	if err != nil {
		return nil, err
	}
	if want := uint64(headerLen) + l + checksumLen; uint64(len(data)) != want {
		return nil, corruptf(kind, 8, "body length %d implies %d bytes in all, have %d", l, want, len(data))
	}
	end := headerLen + int(l)
	if err := checkSum(kind, data[:end], data[end:]); err != nil {
		return nil, err
	}
	return data[headerLen:end], nil
}

// readEnvelope reads one encoding of kind from r, validates it and returns
// its body and the number of bytes read. A stream that ends early is
// corrupt; other read errors are returned as they are. Before the body has
// arrived whole it has allocated at most twice the bytes read plus 4 KiB
// (and at most the bytes read plus 1 MiB), whatever length the header
// claims; a body in more than one piece is then copied once.
func readEnvelope(kind filterKind, r io.Reader) ([]byte, int64, error) {
	_, body, n, err := readEnvelopeOf(r, kind)
	return body, n, err
}

// readEnvelopeOf is readEnvelope for a type with more than one layout
// (kinds): it returns the kind the header names, when it is one of them.
func readEnvelopeOf(r io.Reader, kinds ...filterKind) (filterKind, []byte, int64, error) {
	var hdr [headerLen]byte
	n, err := io.ReadFull(r, hdr[:])
	read := int64(n)
	kind := pickKind(hdr[:n], kinds)
	if err != nil {
		return kind, nil, read, truncated(kind, read, err)
	}
	l, err := checkHeader(kind, hdr[:])
	if err != nil {
		return kind, nil, read, err
	}
	// The body arrives into pieces no larger than what has already
	// arrived (arrivals.go): a forged length fails at the end of the
	// stream having allocated at most about what the stream held.
	var a arrivals
	crc := crc32.Checksum(hdr[:], castagnoli)
	got, err := a.readFull(r, l, l, &crc)
	read += got
	if err != nil {
		return kind, nil, read, truncated(kind, read, err)
	}
	var sum [checksumLen]byte
	n, err = io.ReadFull(r, sum[:])
	read += int64(n)
	if err != nil {
		return kind, nil, read, truncated(kind, read, err)
	}
	if want := binary.LittleEndian.Uint32(sum[:]); crc != want {
		return kind, nil, read, corruptf(kind, int64(headerLen+l), "checksum mismatch: stored %#08x, computed %#08x", want, crc)
	}
	return kind, a.whole(), read, nil
}

// openEnvelopeOf is openEnvelope for a type with more than one layout.
func openEnvelopeOf(data []byte, kinds ...filterKind) (filterKind, []byte, error) {
	kind := pickKind(data, kinds)
	body, err := openEnvelope(kind, data)
	return kind, body, err
}

// pickKind returns the kind byte of an encoding's header when it is one of
// kinds, else kinds[0] (which checkHeader then reports as a mismatch).
func pickKind(hdr []byte, kinds []filterKind) filterKind {
	if len(hdr) > 5 {
		for _, k := range kinds {
			if filterKind(hdr[5]) == k {
				return k
			}
		}
	}
	return kinds[0]
}

func truncated(kind filterKind, off int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptf(kind, off, "stream ends inside the encoding")
	}
	return err
}

// checkHeader validates the 16-byte header and returns the body length.
func checkHeader(kind filterKind, hdr []byte) (uint64, error) {
	switch {
	case string(hdr[:4]) != encodingMagic:
		return 0, corruptf(kind, 0, "bad magic %q, want %q", hdr[:4], encodingMagic)
	case hdr[4] != encodingVersion:
		return 0, corruptf(kind, 4, "unsupported format version %d, want %d", hdr[4], encodingVersion)
	case filterKind(hdr[5]) != kind:
		return 0, corruptf(kind, 5, "encoding holds a %s filter (kind %d), not a %s filter", filterKind(hdr[5]), hdr[5], kind)
	case hdr[6] != 0 || hdr[7] != 0:
		return 0, corruptf(kind, 6, "reserved bytes are not zero")
	}
	l := binary.LittleEndian.Uint64(hdr[8:])
	if l > maxBodyLen {
		return 0, corruptf(kind, 8, "body length %d exceeds the %d supported", l, uint64(maxBodyLen))
	}
	return l, nil
}

func checkSum(kind filterKind, covered, stored []byte) error {
	want := binary.LittleEndian.Uint32(stored)
	if got := crc32.Checksum(covered, castagnoli); got != want {
		return corruptf(kind, int64(len(covered)), "checksum mismatch: stored %#08x, computed %#08x", want, got)
	}
	return nil
}

func corruptf(kind filterKind, off int64, format string, args ...any) error {
	return base.CorruptionErrorf("bloomkv/filter: %s filter encoding at offset %d: "+format,
		append([]any{kind, off}, args...)...)
}

// decoder reads little-endian fields from a body, tracking the offset for
// error messages. After the first error every read returns zero.
type decoder struct {
	kind filterKind
	body []byte
	off  int // within body; the encoding offset is headerLen+off
	err  error
}

func newDecoder(kind filterKind, body []byte) *decoder {
	return &decoder{kind: kind, body: body}
}

// failf records the first error, at the current offset.
func (d *decoder) failf(format string, args ...any) { d.failAtf(d.off, format, args...) }

// failAtf records the first error, naming body offset at (the start of the
// field that was wrong).
func (d *decoder) failAtf(at int, format string, args ...any) {
	if d.err == nil {
		d.err = corruptf(d.kind, int64(headerLen+at), format, args...)
	}
}

// check fails at body offset at unless ok.
func (d *decoder) check(ok bool, at int, format string, args ...any) {
	if !ok {
		d.failAtf(at, format, args...)
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.body)-d.off < n {
		d.failf("body ends inside %s (%d bytes left, need %d)", what, len(d.body)-d.off, n)
		return nil
	}
	p := d.body[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) u32(what string) uint32 {
	if p := d.take(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if p := d.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) f64(what string) float64 { return math.Float64frombits(d.u64(what)) }

// zero32 reads a reserved field that must be zero.
func (d *decoder) zero32(what string) {
	at := d.off
	v := d.u32(what)
	d.check(v == 0, at, "%s is %#x, must be zero", what, v)
}

// words reads n little-endian uint64 words, after checking they fit, so a
// damaged count never allocates more than the input holds.
func (d *decoder) words(n uint64, what string) []uint64 {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.body)-d.off)/8 {
		d.failf("body ends inside %s (%d bytes left, need %d words)", what, len(d.body)-d.off, n)
		return nil
	}
	ws := make([]uint64, n)
	for i := range ws {
		ws[i] = binary.LittleEndian.Uint64(d.body[d.off:])
		d.off += 8
	}
	return ws
}

// finish fails if bytes remain after the body's last field.
func (d *decoder) finish() error {
	if d.err == nil && d.off != len(d.body) {
		d.failf("%d unexpected bytes after the body", len(d.body)-d.off)
	}
	return d.err
}
