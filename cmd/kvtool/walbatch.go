package main

import (
	"encoding/binary"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
)

// A write-ahead log record is one write batch. The root package owns the
// encoding (batch.go documents it; the layout is a wire constant that never
// changes); kvtool decodes it independently so that a checker bug and an
// engine bug are unlikely to cancel out:
//
//	+-------------------+-------------------+------------------+
//	| seq: uint64 LE    | count: uint32 LE  | count operations |
//	+-------------------+-------------------+------------------+
//	set:    kind 1 (1 byte) | uvarint key length | key | uvarint value length | value
//	delete: kind 0 (1 byte) | uvarint key length | key
//
// Operation i has sequence seq+i.
const batchHeaderLen = 12

// batchSummary is what checking a batch learns.
type batchSummary struct {
	seq     uint64 // sequence of the first operation
	count   uint32 // operations
	deletes uint32
}

// decodeBatch checks one log record as a write batch. Damage is an error
// wrapping base.ErrCorruption naming the log file, the record's offset in
// it and the byte inside the record.
func decodeBatch(rec []byte, file string, recOff int64) (batchSummary, error) {
	bad := func(at int, format string, args ...any) (batchSummary, error) {
		prefix := []any{file, recOff, at}
		return batchSummary{}, base.CorruptionErrorf("kvtool: %s: record at offset %d, byte %d: "+format, append(prefix, args...)...)
	}
	if len(rec) < batchHeaderLen {
		return bad(0, "batch of %d bytes is shorter than its %d-byte header", len(rec), batchHeaderLen)
	}
	s := batchSummary{
		seq:   binary.LittleEndian.Uint64(rec),
		count: binary.LittleEndian.Uint32(rec[8:]),
	}
	if s.seq == 0 || s.seq > base.MaxSeq || uint64(s.count) > base.MaxSeq-s.seq {
		return bad(0, "batch sequence %d with %d operations is out of range", s.seq, s.count)
	}
	p := batchHeaderLen
	for i := uint32(0); i < s.count; i++ {
		opStart := p
		if p >= len(rec) {
			return bad(p, "batch ends after %d of %d operations", i, s.count)
		}
		kind := base.Kind(rec[p])
		p++
		if kind != base.KindSet && kind != base.KindDelete {
			return bad(opStart, "operation %d has unknown kind %d", i, uint8(kind))
		}
		klen, next, ok := lengthPrefixed(rec, p)
		if !ok {
			return bad(p, "operation %d: bad key length", i)
		}
		if klen == 0 || klen > bloomkv.MaxKeySize {
			return bad(p, "operation %d: key of %d bytes (want 1 to %d)", i, klen, bloomkv.MaxKeySize)
		}
		p = next
		if kind == base.KindDelete {
			s.deletes++
			continue
		}
		vlen, next, ok := lengthPrefixed(rec, p)
		if !ok {
			return bad(p, "operation %d: bad value length", i)
		}
		if vlen > bloomkv.MaxValueSize {
			return bad(p, "operation %d: value of %d bytes exceeds %d", i, vlen, bloomkv.MaxValueSize)
		}
		p = next
	}
	if p != len(rec) {
		return bad(p, "%d trailing bytes after %d operations", len(rec)-p, s.count)
	}
	return s, nil
}

// lengthPrefixed reads a uvarint length at rec[p:] and checks that that
// many bytes follow. It returns the length and the offset past the bytes.
func lengthPrefixed(rec []byte, p int) (n int, next int, ok bool) {
	v, w := binary.Uvarint(rec[p:])
	if w <= 0 || v > uint64(len(rec)-p-w) {
		return 0, 0, false
	}
	return int(v), p + w + int(v), true
}

// forEachBatchOp calls fn for each operation of a batch that decodeBatch
// accepted, with the operation's sequence. key and value alias rec.
func forEachBatchOp(rec []byte, fn func(seq uint64, kind base.Kind, key, value []byte)) {
	seq := binary.LittleEndian.Uint64(rec)
	count := binary.LittleEndian.Uint32(rec[8:])
	p := batchHeaderLen
	for i := uint32(0); i < count; i++ {
		kind := base.Kind(rec[p])
		klen, next, _ := lengthPrefixed(rec, p+1)
		key := rec[next-klen : next]
		p = next
		var value []byte
		if kind == base.KindSet {
			vlen, next, _ := lengthPrefixed(rec, p)
			value = rec[next-vlen : next]
			p = next
		}
		fn(seq+uint64(i), kind, key, value)
	}
}
