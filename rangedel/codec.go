package rangedel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
)

// Encode appends the block encoding of spans (fragmented, as a List holds
// them) to dst. See the package doc for the layout.
func Encode(dst []byte, spans []Span) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for _, s := range spans {
		dst = binary.AppendUvarint(dst, uint64(len(s.Start)))
		dst = append(dst, s.Start...)
		dst = binary.AppendUvarint(dst, uint64(len(s.End)))
		dst = append(dst, s.End...)
		dst = binary.AppendUvarint(dst, uint64(len(s.Seqs)))
		for _, q := range s.Seqs {
			dst = binary.AppendUvarint(dst, q)
		}
	}
	return dst
}

// DecodeError says what is wrong with a block and at which byte. The
// caller (the table reader) names the file and block offset and wraps
// kv.ErrCorruption.
type DecodeError struct {
	Offset int
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("range-deletion block byte %d: %s", e.Offset, e.Reason)
}

// ErrMalformed is wrapped by every *DecodeError, for errors.Is.
var ErrMalformed = errors.New("malformed range-deletion block")

func (e *DecodeError) Unwrap() error { return ErrMalformed }

// Decode parses a block and checks everything a List relies on: spans in
// key order, not overlapping, each non-empty with non-empty keys of at
// most maxKey bytes, sequences 1..kv.MaxSeq strictly descending, and no
// byte after the last span. The spans alias b.
func Decode(b []byte, maxKey int) (*List, error) {
	d := decoder{b: b, maxKey: maxKey}
	n := d.uvarint("span count")
	// Each span takes at least 6 bytes: a bound on n that keeps bad bytes
	// from provoking a huge allocation.
	if d.err == nil && n > uint64(len(b))/6 {
		d.fail(0, fmt.Sprintf("%d spans cannot fit in %d bytes", n, len(b)))
	}
	var spans []Span
	if d.err == nil {
		spans = make([]Span, 0, n)
	}
	for i := uint64(0); d.err == nil && i < n; i++ {
		at := d.off
		var s Span
		s.Start = d.key("start")
		s.End = d.key("end")
		k := d.uvarint("sequence count")
		if d.err != nil {
			break
		}
		if k == 0 || k > uint64(len(b)-d.off) {
			d.fail(at, fmt.Sprintf("span %d: bad sequence count %d", i, k))
			break
		}
		s.Seqs = make([]uint64, 0, k)
		for j := uint64(0); j < k && d.err == nil; j++ {
			q := d.uvarint("sequence")
			if d.err != nil {
				break
			}
			if q == 0 || q > kv.MaxSeq || (j > 0 && q >= s.Seqs[j-1]) {
				d.fail(at, fmt.Sprintf("span %d: sequence %d out of range or order", i, q))
				break
			}
			s.Seqs = append(s.Seqs, q)
		}
		if d.err != nil {
			break
		}
		if bytes.Compare(s.Start, s.End) >= 0 {
			d.fail(at, fmt.Sprintf("span %d: start %q is not before end %q", i, s.Start, s.End))
			break
		}
		if len(spans) > 0 && bytes.Compare(spans[len(spans)-1].End, s.Start) > 0 {
			d.fail(at, fmt.Sprintf("span %d starts at %q, before the previous span ends", i, s.Start))
			break
		}
		spans = append(spans, s)
	}
	if d.err == nil && d.off != len(b) {
		d.fail(d.off, fmt.Sprintf("%d trailing bytes", len(b)-d.off))
	}
	if d.err != nil {
		return nil, d.err
	}
	return NewList(spans), nil
}

type decoder struct {
	b      []byte
	off    int
	maxKey int
	err    error
}

func (d *decoder) fail(at int, reason string) {
	if d.err == nil {
		d.err = &DecodeError{Offset: at, Reason: reason}
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(d.off, "bad "+what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) key(what string) []byte {
	at := d.off
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n == 0 || n > uint64(d.maxKey) || n > uint64(len(d.b)-d.off) {
		d.fail(at, fmt.Sprintf("%s key of %d bytes", what, n))
		return nil
	}
	k := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return k
}
