package batchrep

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// HeaderLen is the size of a batch's header: seq (8 bytes) then count (4).
const HeaderLen = 12

const (
	seqOffset   = 0
	countOffset = 8
)

// Seq returns the sequence in the header of rep (at least HeaderLen bytes).
func Seq(rep []byte) uint64 { return binary.LittleEndian.Uint64(rep[seqOffset:]) }

// Count returns the operation count in the header of rep.
func Count(rep []byte) uint32 { return binary.LittleEndian.Uint32(rep[countOffset:]) }

// SetSeq writes seq into the header of rep.
func SetSeq(rep []byte, seq uint64) { binary.LittleEndian.PutUint64(rep[seqOffset:], seq) }

// SetCount writes the operation count into the header of rep.
func SetCount(rep []byte, n uint32) { binary.LittleEndian.PutUint32(rep[countOffset:], n) }

// AppendSet appends a set of key to value to rep, a batch with its header,
// and counts it in the header. The caller checks key and value against its
// limits first.
func AppendSet(rep, key, value []byte) []byte {
	rep = append(rep, byte(base.KindSet))
	rep = binary.AppendUvarint(rep, uint64(len(key)))
	rep = append(rep, key...)
	rep = binary.AppendUvarint(rep, uint64(len(value)))
	rep = append(rep, value...)
	SetCount(rep, Count(rep)+1)
	return rep
}

// AppendDelete appends a deletion of key to rep and counts it.
func AppendDelete(rep, key []byte) []byte {
	rep = append(rep, byte(base.KindDelete))
	rep = binary.AppendUvarint(rep, uint64(len(key)))
	rep = append(rep, key...)
	SetCount(rep, Count(rep)+1)
	return rep
}

// AppendDeleteRange appends a deletion of the keys in [start, end) to rep
// and counts it. The caller checks that start < end.
func AppendDeleteRange(rep, start, end []byte) []byte {
	rep = append(rep, byte(base.KindRangeDelete))
	rep = binary.AppendUvarint(rep, uint64(len(start)))
	rep = append(rep, start...)
	rep = binary.AppendUvarint(rep, uint64(len(end)))
	rep = append(rep, end...)
	SetCount(rep, Count(rep)+1)
	return rep
}

// Limits bound the keys and values a decoder accepts. The engine owns them
// (bloomkv.MaxKeySize and MaxValueSize); a batch holding more than the
// engine ever writes is damaged.
type Limits struct {
	MaxKey, MaxValue int
}

// Op is one operation of a batch. Key and Value alias the batch.
type Op struct {
	Seq   uint64
	Kind  base.Kind
	Key   []byte
	Value []byte // nil for a delete; the end key (exclusive) of a range delete
}

// CorruptionError is a batch that does not decode: what is wrong, and at
// which byte of the batch. It wraps base.ErrCorruption; the caller adds
// the file and offset of the batch (a log record) when it has them.
type CorruptionError struct {
	Offset int // byte of the batch where the problem is
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("bloomkv/batchrep: batch byte %d: %s: %v", e.Offset, e.Reason, base.ErrCorruption)
}

func (e *CorruptionError) Unwrap() error { return base.ErrCorruption }

// Reader decodes the operations of a batch in order, checking each as it
// goes (see the package doc for what decodes). Next hands out operations
// up to the first problem, so a caller that must not apply part of a
// damaged batch runs Validate first.
//
//	r := batchrep.NewReader(rep, lim)
//	for op, ok := r.Next(); ok; op, ok = r.Next() { ... }
//	if err := r.Err(); err != nil { ... }
type Reader struct {
	rep  []byte
	lim  Limits
	off  int    // where the next operation starts
	seq  uint64 // its sequence
	i    uint32 // its index
	left uint32 // operations not yet read
	err  error
}

// NewReader returns a reader of the batch rep, whose header it checks.
func NewReader(rep []byte, lim Limits) Reader {
	r := Reader{rep: rep, lim: lim, off: HeaderLen}
	if len(rep) < HeaderLen {
		r.fail(0, fmt.Sprintf("batch of %d bytes is shorter than its %d-byte header", len(rep), HeaderLen))
		return r
	}
	r.seq, r.left = Seq(rep), Count(rep)
	if r.seq == 0 || r.seq > base.MaxSeq || uint64(r.left) > base.MaxSeq-r.seq {
		r.fail(0, fmt.Sprintf("sequence %d with %d operations is out of range (sequences are 1 to %d)", r.seq, r.left, base.MaxSeq))
	}
	return r
}

// Next returns the next operation. It returns false after the last one and
// at the first problem; Err tells which.
func (r *Reader) Next() (Op, bool) {
	if r.err != nil {
		return Op{}, false
	}
	if r.left == 0 {
		if r.off != len(r.rep) {
			r.fail(r.off, fmt.Sprintf("%d trailing bytes after %d operations", len(r.rep)-r.off, r.i))
		}
		return Op{}, false
	}
	p := r.off
	if p >= len(r.rep) {
		r.fail(p, fmt.Sprintf("the batch ends after %d of %d operations", r.i, r.i+r.left))
		return Op{}, false
	}
	op := Op{Seq: r.seq, Kind: base.Kind(r.rep[p])}
	if op.Kind != base.KindSet && op.Kind != base.KindDelete && op.Kind != base.KindRangeDelete {
		r.fail(p, fmt.Sprintf("operation %d has unknown kind %d", r.i, r.rep[p]))
		return Op{}, false
	}
	p++
	var ok bool
	if op.Key, p, ok = r.lengthPrefixed(p, "key", 1, r.lim.MaxKey); !ok {
		return Op{}, false
	}
	switch op.Kind {
	case base.KindSet:
		if op.Value, p, ok = r.lengthPrefixed(p, "value", 0, r.lim.MaxValue); !ok {
			return Op{}, false
		}
	case base.KindRangeDelete:
		at := p
		if op.Value, p, ok = r.lengthPrefixed(p, "end key", 1, r.lim.MaxKey); !ok {
			return Op{}, false
		}
		if bytes.Compare(op.Key, op.Value) >= 0 {
			r.fail(at, fmt.Sprintf("operation %d: range deletion end %q is not after its start %q", r.i, op.Value, op.Key))
			return Op{}, false
		}
	}
	r.off, r.seq, r.i, r.left = p, r.seq+1, r.i+1, r.left-1
	return op, true
}

// lengthPrefixed reads a uvarint length at p and the lo to hi bytes that
// follow it; it returns them and the offset past them.
func (r *Reader) lengthPrefixed(p int, what string, lo, hi int) ([]byte, int, bool) {
	n, w := binary.Uvarint(r.rep[p:])
	switch {
	case w == 0:
		r.fail(p, fmt.Sprintf("operation %d: the %s length is cut off", r.i, what))
	case w < 0:
		r.fail(p, fmt.Sprintf("operation %d: the %s length overflows 64 bits", r.i, what))
	case n < uint64(lo) || n > uint64(hi):
		r.fail(p, fmt.Sprintf("operation %d: %s of %d bytes (want %d to %d)", r.i, what, n, lo, hi))
	case n > uint64(len(r.rep)-p-w):
		r.fail(p, fmt.Sprintf("operation %d: %s of %d bytes runs past the end of the batch", r.i, what, n))
	default:
		start := p + w
		return r.rep[start : start+int(n) : start+int(n)], start + int(n), true
	}
	return nil, 0, false
}

func (r *Reader) fail(at int, reason string) {
	r.err = &CorruptionError{Offset: at, Reason: reason}
}

// Err returns the problem that stopped Next, nil after a batch that
// decoded to its end.
func (r *Reader) Err() error { return r.err }

// Validate decodes rep to its end and returns its header's sequence and
// count, or the first problem.
func Validate(rep []byte, lim Limits) (seq uint64, count uint32, err error) {
	r := NewReader(rep, lim)
	for {
		if _, ok := r.Next(); !ok {
			break
		}
	}
	if r.err != nil {
		return 0, 0, r.err
	}
	return Seq(rep), Count(rep), nil
}
