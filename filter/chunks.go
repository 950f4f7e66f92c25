package filter

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/klauspost/crc32"
)

// Chunked dumps move a large filter in pieces, each checked on its own, as
// RedisBloom's SCANDUMP and LOADCHUNK do: a transport with a message size
// limit carries one chunk per message, and damage is reported at the chunk
// it hit. The chunks carry a filter's ordinary encoding (WriteTo), cut up:
//
//	chunk:  offset  size  field
//	        0       4     magic "BKVC"
//	        4       4     index: 0, 1, 2, ... in order
//	        8       4     payload length P: 1..MaxChunkSize, or 0 for the
//	                      last chunk, which ends the dump
//	        12      P     payload: the next P bytes of the encoding
//	        12+P    4     CRC-32C (Castagnoli) of bytes [0, 12+P)
//
// Little-endian throughout; these constants never change.
const (
	chunkMagic     = "BKVC"
	chunkHeaderLen = 12
	// MaxChunkSize bounds a chunk's payload: a larger length is refused
	// as damage. (Memory does not depend on it: LoadChunks allocates as
	// bytes arrive.)
	MaxChunkSize = 64 << 20
	// DefaultChunkSize is DumpChunks' chunk size when given 0.
	DefaultChunkSize = 1 << 20
)

// DumpChunks writes f's encoding to w as chunks of at most size payload
// bytes (0 = DefaultChunkSize), then the empty chunk that ends the dump,
// and returns the bytes written. f is any filter of this package; it is
// read once, streamed, never copied whole. A zero filter is ErrZeroFilter.
func DumpChunks(w io.Writer, f io.WriterTo, size int) (int64, error) {
	if size == 0 {
		size = DefaultChunkSize
	}
	if size < 1 || size > MaxChunkSize {
		return 0, invalidArgf("chunk size %d is outside [1, %d]", size, MaxChunkSize)
	}
	cw := &chunkWriter{w: w, buf: make([]byte, chunkHeaderLen, chunkHeaderLen+size+4), size: size}
	if _, err := f.WriteTo(cw); err != nil {
		return cw.n, err
	}
	if len(cw.buf) > chunkHeaderLen {
		cw.emit() // the rest
	}
	cw.emit() // the empty last chunk
	return cw.n, cw.err
}

// chunkWriter cuts what is written to it into chunks.
type chunkWriter struct {
	w     io.Writer
	buf   []byte // header space, then the pending payload
	size  int
	index uint32
	n     int64
	err   error
}

func (cw *chunkWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 && cw.err == nil {
		take := min(len(p), cw.size-(len(cw.buf)-chunkHeaderLen))
		cw.buf = append(cw.buf, p[:take]...)
		p, written = p[take:], written+take
		if len(cw.buf)-chunkHeaderLen == cw.size {
			cw.emit()
		}
	}
	return written, cw.err
}

// emit writes the pending payload as one chunk; with none pending it
// writes the empty last chunk.
func (cw *chunkWriter) emit() {
	if cw.err != nil {
		return
	}
	copy(cw.buf, chunkMagic)
	binary.LittleEndian.PutUint32(cw.buf[4:], cw.index)
	binary.LittleEndian.PutUint32(cw.buf[8:], uint32(len(cw.buf)-chunkHeaderLen))
	cw.buf = binary.LittleEndian.AppendUint32(cw.buf, crc32.Checksum(cw.buf, castagnoli))
	n, err := cw.w.Write(cw.buf)
	cw.n += int64(n)
	cw.err = err
	cw.index++
	cw.buf = cw.buf[:chunkHeaderLen]
}

// LoadChunks reads a dump written by DumpChunks from r, through its last
// chunk, and replaces f (a filter of the dumped type, zero or not) with
// it, as f.UnmarshalBinary does. A damaged, reordered, missing or foreign
// chunk, or a dump that ends early, is an error wrapping ErrCorruption
// that names the chunk and its offset in r; f is then left as it was.
//
// Memory grows with the bytes that actually arrive, never with a length
// a chunk claims: until the last chunk, LoadChunks holds the payloads read
// so far in pieces no larger than what has arrived (at most twice the
// bytes read plus 4 KiB, and at most the bytes read plus 1 MiB). Then it
// makes the encoding contiguous (one more copy) and decodes it.
func LoadChunks(r io.Reader, f encoding.BinaryUnmarshaler) (int64, error) {
	cr := &chunkReader{r: r}
	for !cr.done {
		if err := cr.next(); err != nil {
			return cr.n, err
		}
	}
	return cr.n, f.UnmarshalBinary(cr.payloads.whole())
}

// chunkReader reads and checks successive chunks.
type chunkReader struct {
	r        io.Reader
	payloads arrivals // every payload so far, in order
	index    uint32   // of the next chunk
	n        int64    // bytes read from r
	chunkAt  int64    // offset in r of the current chunk
	done     bool     // the empty last chunk was read
}

// next reads and checks the next chunk, adding its payload to payloads.
func (cr *chunkReader) next() error {
	cr.chunkAt = cr.n
	var hdr [chunkHeaderLen]byte
	if err := cr.fill(hdr[:]); err != nil {
		return err
	}
	switch {
	case string(hdr[:4]) != chunkMagic:
		return cr.corruptf(cr.chunkAt, "chunk %d: bad magic %q, want %q", cr.index, hdr[:4], chunkMagic)
	case binary.LittleEndian.Uint32(hdr[4:]) != cr.index:
		return cr.corruptf(cr.chunkAt+4, "chunk index %d where chunk %d belongs (missing or reordered chunks)", binary.LittleEndian.Uint32(hdr[4:]), cr.index)
	}
	size := binary.LittleEndian.Uint32(hdr[8:])
	if size > MaxChunkSize {
		return cr.corruptf(cr.chunkAt+8, "chunk %d: payload length %d exceeds %d", cr.index, size, MaxChunkSize)
	}
	// A payload that fails its checksum is dropped with the whole dump, so
	// it may go straight into payloads. How much more will follow is not
	// known: piece sizes follow what has arrived, not size.
	crc := crc32.Checksum(hdr[:], castagnoli)
	n, err := cr.payloads.readFull(cr.r, uint64(size), math.MaxUint64, &crc)
	cr.n += n
	if err != nil {
		return cr.readErr(err)
	}
	var sum [4]byte
	if err := cr.fill(sum[:]); err != nil {
		return err
	}
	if want := binary.LittleEndian.Uint32(sum[:]); want != crc {
		return cr.corruptf(cr.n-4, "chunk %d: checksum mismatch: stored %#08x, computed %#08x", cr.index, want, crc)
	}
	cr.done = size == 0
	cr.index++
	return nil
}

// fill reads exactly len(p) bytes; a dump that ends early is corrupt.
func (cr *chunkReader) fill(p []byte) error {
	n, err := io.ReadFull(cr.r, p)
	cr.n += int64(n)
	return cr.readErr(err)
}

// readErr reports a read error; the end of r inside a chunk is corruption.
func (cr *chunkReader) readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return cr.corruptf(cr.n, "dump ends inside chunk %d (no last chunk)", cr.index)
	}
	return err
}

func (cr *chunkReader) corruptf(off int64, format string, args ...any) error {
	return base.CorruptionErrorf("bloomkv/filter: chunked dump at offset %d: %s", off, fmt.Sprintf(format, args...))
}
