package bloomkv

import (
	"encoding/binary"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Batch is a set of Puts and Deletes applied atomically by DB.Write: all of
// them or none, also across a crash. Within a batch a later operation on the
// same key wins. A Batch copies the keys and values it is given. It is not
// safe for concurrent use.
//
// # Encoding (the write-ahead log record, byte for byte)
//
//	+-------------------+-----------------+-----------------------+
//	| seq: uint64 LE    | count: uint32 LE| count records ...     |
//	+-------------------+-----------------+-----------------------+
//	record (set):    kind=1 (1 byte) | uvarint key length | key | uvarint value length | value
//	record (delete): kind=0 (1 byte) | uvarint key length | key
//
// Record i gets sequence number seq+i. This layout is part of the log format
// and never changes.
type Batch struct {
	rep []byte
	// err is the first invalid operation; Write rejects the whole batch.
	err error
}

const batchHeaderLen = 12

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

func (b *Batch) init() {
	if len(b.rep) < batchHeaderLen {
		b.rep = make([]byte, batchHeaderLen, 256)
	}
}

// Put adds a set of key to value. An empty or oversize key or an oversize
// value makes the whole batch invalid: Write will reject it.
func (b *Batch) Put(key, value []byte) {
	b.init()
	if err := checkKey(key); err != nil {
		b.setErr(err)
		return
	}
	if err := checkValue(value); err != nil {
		b.setErr(err)
		return
	}
	b.rep = append(b.rep, byte(base.KindSet))
	b.rep = binary.AppendUvarint(b.rep, uint64(len(key)))
	b.rep = append(b.rep, key...)
	b.rep = binary.AppendUvarint(b.rep, uint64(len(value)))
	b.rep = append(b.rep, value...)
	b.setCount(b.count() + 1)
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) {
	b.init()
	if err := checkKey(key); err != nil {
		b.setErr(err)
		return
	}
	b.rep = append(b.rep, byte(base.KindDelete))
	b.rep = binary.AppendUvarint(b.rep, uint64(len(key)))
	b.rep = append(b.rep, key...)
	b.setCount(b.count() + 1)
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int {
	if len(b.rep) < batchHeaderLen {
		return 0
	}
	return int(b.count())
}

// Reset empties the batch (keeping its memory) and clears any error.
func (b *Batch) Reset() {
	if b.rep != nil {
		b.rep = b.rep[:batchHeaderLen]
		clear(b.rep)
	}
	b.err = nil
}

func (b *Batch) setErr(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *Batch) count() uint32 { return binary.LittleEndian.Uint32(b.rep[8:12]) }

func (b *Batch) setCount(n uint32) { binary.LittleEndian.PutUint32(b.rep[8:12], n) }

// batchOp is one decoded record of a batch.
type batchOp struct {
	kind       base.Kind
	key, value []byte
}

// decodeBatch validates a batch encoding (as read back from a log) and calls
// fn for each record with its sequence number. Slices alias rep. Malformed
// input returns an error wrapping ErrCorruption; fn is not called at all
// then, so a damaged batch is never half applied.
func decodeBatch(rep []byte, fn func(seq uint64, op batchOp)) error {
	if len(rep) < batchHeaderLen {
		return base.CorruptionErrorf("bloomkv: batch of %d bytes is shorter than its header", len(rep))
	}
	seq := binary.LittleEndian.Uint64(rep)
	count := binary.LittleEndian.Uint32(rep[8:])
	if seq+uint64(count) > base.MaxSeq {
		return base.CorruptionErrorf("bloomkv: batch sequence %d+%d overflows", seq, count)
	}
	for pass := 0; pass < 2; pass++ {
		p := rep[batchHeaderLen:]
		for i := uint32(0); i < count; i++ {
			op, rest, err := decodeBatchOp(p, len(rep)-len(p))
			if err != nil {
				return err
			}
			p = rest
			if pass == 1 {
				fn(seq+uint64(i), op)
			}
		}
		if len(p) != 0 {
			return base.CorruptionErrorf("bloomkv: batch has %d trailing bytes after %d records", len(p), count)
		}
	}
	return nil
}

func decodeBatchOp(p []byte, off int) (batchOp, []byte, error) {
	if len(p) < 1 {
		return batchOp{}, nil, base.CorruptionErrorf("bloomkv: batch truncated at offset %d", off)
	}
	op := batchOp{kind: base.Kind(p[0])}
	if op.kind != base.KindSet && op.kind != base.KindDelete {
		return batchOp{}, nil, base.CorruptionErrorf("bloomkv: batch record at offset %d has unknown kind %d", off, p[0])
	}
	p = p[1:]
	var err error
	if op.key, p, err = readLengthPrefixed(p, off); err != nil {
		return batchOp{}, nil, err
	}
	if len(op.key) == 0 || len(op.key) > MaxKeySize {
		return batchOp{}, nil, base.CorruptionErrorf("bloomkv: batch record at offset %d has a key of %d bytes", off, len(op.key))
	}
	if op.kind == base.KindSet {
		if op.value, p, err = readLengthPrefixed(p, off); err != nil {
			return batchOp{}, nil, err
		}
	}
	return op, p, nil
}

func readLengthPrefixed(p []byte, off int) ([]byte, []byte, error) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)-w) {
		return nil, nil, base.CorruptionErrorf("bloomkv: batch record at offset %d has a bad length", off)
	}
	return p[w : w+int(n)], p[w+int(n):], nil
}
