package filter

import (
	"io"

	"github.com/klauspost/crc32"
)

// Streamed decoding (ReadFrom, LoadChunks) learns a length from a header
// long before the bytes arrive, and a damaged or forged header can claim
// far more than the stream holds. arrivals keeps what has been read in
// pieces allocated only as bytes arrive: a new piece is allocated when the
// last one is full, and is at most as large as everything read so far
// (between minPiece and maxPiece). So before a stream ends, what is
// allocated is at most the bytes read plus one piece: twice the bytes read
// plus 4 KiB, and never more than the bytes read plus 1 MiB, whatever a
// header claims.
//
// Contiguous bytes (what the decoders need) are made once everything has
// arrived (whole), which costs one more copy of the body.
type arrivals struct {
	pieces [][]byte // each but the last full to its capacity
	n      uint64   // bytes held, the sum of the pieces' lengths
}

const (
	minPiece = 4 << 10
	maxPiece = 1 << 20
)

// readFull reads exactly n more bytes from r, updating *crc (CRC-32C) with
// them, and returns the bytes read. expect bounds what more will be read
// in all (n, or more when the caller will call again: a chunked dump), so
// that a small stream gets a piece its size rather than minPiece. Errors
// are io.ReadFull's.
func (a *arrivals) readFull(r io.Reader, n, expect uint64, crc *uint32) (int64, error) {
	var read int64
	for n > 0 {
		last := len(a.pieces) - 1
		if last < 0 || len(a.pieces[last]) == cap(a.pieces[last]) {
			size := min(max(a.n, minPiece), maxPiece, expect)
			a.pieces = append(a.pieces, make([]byte, 0, size))
			last++
		}
		p := a.pieces[last]
		take := int(min(n, uint64(cap(p)-len(p))))
		got, err := io.ReadFull(r, p[len(p):len(p)+take])
		*crc = crc32.Update(*crc, castagnoli, p[len(p):len(p)+got])
		a.pieces[last] = p[:len(p)+got]
		a.n += uint64(got)
		read += int64(got)
		n -= uint64(got)
		expect -= uint64(got)
		if err != nil {
			return read, err
		}
	}
	return read, nil
}

// whole returns every byte read, contiguous, and empties a. A single piece
// is returned as it is; several are copied into one exactly-sized slice.
func (a *arrivals) whole() []byte {
	var all []byte
	switch len(a.pieces) {
	case 0:
	case 1:
		all = a.pieces[0]
	default:
		all = make([]byte, 0, a.n)
		for _, p := range a.pieces {
			all = append(all, p...)
		}
	}
	*a = arrivals{}
	return all
}
