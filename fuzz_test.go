package bloomkv

// FuzzDecodeBatch feeds arbitrary bytes to decodeBatch, the engine's use of
// the internal/batchrep decoder for write-ahead-log records (the byte
// layout is in internal/batchrep; its FuzzDecode fuzzes the decoder on its
// own). It must never panic; every rejection wraps ErrCorruption and happens before any
// operation is handed out (a damaged batch is never half applied); and
// whatever it accepts re-encodes, through the public Batch API, to a
// batch that decodes to the same operations. CI runs the seeds below;
// `go test -fuzz=FuzzDecodeBatch` explores further.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
)

// encodedBatch returns b's log record with sequence seq in its header.
func encodedBatch(b *Batch, seq uint64) []byte {
	b.init()
	rep := append([]byte(nil), b.rep...)
	binary.LittleEndian.PutUint64(rep, seq)
	return rep
}

type decodedOp struct {
	seq        uint64
	kind       base.Kind
	key, value string
}

func decodeAll(rep []byte) ([]decodedOp, error) {
	var ops []decodedOp
	err := decodeBatch(rep, func(op batchrep.Op) {
		ops = append(ops, decodedOp{op.Seq, op.Kind, string(op.Key), string(op.Value)})
	})
	return ops, err
}

func FuzzDecodeBatch(f *testing.F) {
	// Seeds: valid batches of each shape, and damaged ones.
	b := NewBatch()
	f.Add(encodedBatch(b, 1)) // empty
	f.Add(encodedBatch(b, 0)) // sequence 0 is never handed out
	b.Put([]byte("k"), []byte("v"))
	f.Add(encodedBatch(b, 1))
	b.Delete([]byte("gone"))
	b.Put([]byte("empty-value"), nil)
	valid := encodedBatch(b, 42)
	f.Add(valid)
	f.Add(encodedBatch(genBatch(7), 1000))
	f.Add(encodedBatch(genBatch(8), base.MaxSeq-5)) // near the sequence limit
	f.Add(valid[:len(valid)-1])                     // truncated value
	f.Add(valid[:batchHeaderLen+1])                 // truncated record
	f.Add(valid[:5])                                // truncated header
	f.Add(append(append([]byte(nil), valid...), 0)) // trailing byte
	bad := append([]byte(nil), valid...)
	bad[batchHeaderLen] = 7 // unknown kind
	f.Add(bad)
	huge := append([]byte(nil), valid...)
	binary.LittleEndian.PutUint32(huge[8:], 1<<31) // count far beyond the bytes
	f.Add(huge)
	f.Add([]byte{})
	// An overlong varint length (0 written in two bytes) for the key.
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0x81, 0x00, 'k', 0})

	f.Fuzz(func(t *testing.T, rep []byte) {
		calls := 0
		err := decodeBatch(rep, func(batchrep.Op) { calls++ })
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("error %v does not wrap ErrCorruption", err)
			}
			if calls != 0 {
				t.Fatalf("a rejected batch handed out %d operations", calls)
			}
			return
		}
		ops, err := decodeAll(rep)
		if err != nil {
			t.Fatalf("second decode failed: %v", err)
		}
		seq := binary.LittleEndian.Uint64(rep)
		if uint32(len(ops)) != binary.LittleEndian.Uint32(rep[8:]) {
			t.Fatalf("decoded %d operations, header says %d", len(ops), binary.LittleEndian.Uint32(rep[8:]))
		}
		// Re-encode through the public API: it must accept every decoded
		// operation and produce the same operations again.
		var rb Batch
		for i, op := range ops {
			if op.seq != seq+uint64(i) {
				t.Fatalf("operation %d has sequence %d, want %d", i, op.seq, seq+uint64(i))
			}
			switch op.kind {
			case base.KindSet:
				rb.Put([]byte(op.key), []byte(op.value))
			case base.KindRangeDelete:
				rb.DeleteRange([]byte(op.key), []byte(op.value))
			default:
				rb.Delete([]byte(op.key))
			}
		}
		if rb.err != nil {
			t.Fatalf("decoded operations are not a valid batch: %v", rb.err)
		}
		again := encodedBatch(&rb, seq)
		ops2, err := decodeAll(again)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if len(ops2) != len(ops) {
			t.Fatalf("round trip: %d operations, then %d", len(ops), len(ops2))
		}
		for i := range ops {
			if ops[i] != ops2[i] {
				t.Fatalf("round trip: operation %d %+v became %+v", i, ops[i], ops2[i])
			}
		}
		// The encoder writes minimal varints, so for anything it could
		// have produced the bytes must match exactly.
		if len(again) == len(rep) && !bytes.Equal(again, rep) {
			t.Fatalf("same-length re-encoding differs:\n%x\n%x", rep, again)
		}
	})
}

// TestDecodeBatchGolden pins the encoding the public Batch API produces:
// internal/batchrep's worked example.
func TestDecodeBatchGolden(t *testing.T) {
	b := NewBatch()
	b.Put([]byte("ab"), []byte("x"))
	b.Delete([]byte("c"))
	got := encodedBatch(b, 5)
	want := []byte{
		0x05, 0, 0, 0, 0, 0, 0, 0, // seq 5
		0x02, 0, 0, 0, // count 2
		0x01, 0x02, 'a', 'b', 0x01, 'x', // set "ab" = "x"
		0x00, 0x01, 'c', // delete "c"
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
	ops, err := decodeAll(want)
	if err != nil {
		t.Fatal(err)
	}
	wantOps := []decodedOp{{5, base.KindSet, "ab", "x"}, {6, base.KindDelete, "c", ""}}
	if len(ops) != 2 || ops[0] != wantOps[0] || ops[1] != wantOps[1] {
		t.Fatalf("decoded %+v, want %+v", ops, wantOps)
	}
}

// BenchmarkDecodeBatch measures decoding a log record during recovery: a
// typical small batch of the crash-test workload.
func BenchmarkDecodeBatch(b *testing.B) {
	rep := encodedBatch(genBatch(12345), 1)
	b.SetBytes(int64(len(rep)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := decodeBatch(rep, func(batchrep.Op) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
}
