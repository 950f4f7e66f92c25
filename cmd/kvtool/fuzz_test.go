package main

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// testBatchOp is one operation for encodeBatch.
type testBatchOp struct {
	del        bool
	key, value string
}

// encodeBatch writes a batch in the log record layout internal/batchrep
// documents, independently of its encoder.
func encodeBatch(seq uint64, ops []testBatchOp) []byte {
	b := binary.LittleEndian.AppendUint64(nil, seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ops)))
	for _, op := range ops {
		kind := base.KindSet
		if op.del {
			kind = base.KindDelete
		}
		b = append(b, byte(kind))
		b = binary.AppendUvarint(b, uint64(len(op.key)))
		b = append(b, op.key...)
		if !op.del {
			b = binary.AppendUvarint(b, uint64(len(op.value)))
			b = append(b, op.value...)
		}
	}
	return b
}

// TestDecodeBatchGolden pins a worked example of the record layout.
func TestDecodeBatchGolden(t *testing.T) {
	rec := []byte{
		0x07, 0, 0, 0, 0, 0, 0, 0, // seq 7
		0x02, 0, 0, 0, // 2 operations
		0x01, 0x01, 'a', 0x02, 'x', 'y', // set "a" = "xy"
		0x00, 0x01, 'b', // delete "b"
	}
	if got := encodeBatch(7, []testBatchOp{{key: "a", value: "xy"}, {del: true, key: "b"}}); string(got) != string(rec) {
		t.Fatalf("encodeBatch = %x, want %x", got, rec)
	}
	s, err := decodeBatch(rec, "000001.log", 0)
	if err != nil || s != (batchSummary{seq: 7, count: 2, deletes: 1}) {
		t.Fatalf("decodeBatch = %+v, %v", s, err)
	}
}

// TestDecodeBatchRejects: every kind of damage is an error naming the
// log, the record and the byte (internal/batchrep tests the decoder
// itself, with a fuzz target).
func TestDecodeBatchRejects(t *testing.T) {
	good := encodeBatch(5, []testBatchOp{{key: "k", value: "v"}})
	cases := map[string][]byte{
		"short header":    good[:11],
		"zero sequence":   encodeBatch(0, []testBatchOp{{key: "k"}}),
		"sequence range":  encodeBatch(base.MaxSeq, []testBatchOp{{key: "k"}, {key: "l"}}),
		"missing op":      append(binary.LittleEndian.AppendUint64(nil, 5), 2, 0, 0, 0, 1, 1, 'k', 0),
		"unknown kind":    append(append([]byte(nil), good[:12]...), 7, 1, 'k'),
		"empty key":       encodeBatch(5, []testBatchOp{{key: "", value: "v"}}),
		"key past end":    append(append([]byte(nil), good[:12]...), 1, 9, 'k'),
		"value past end":  append(append([]byte(nil), good[:12]...), 1, 1, 'k', 5, 'v'),
		"trailing bytes":  append(append([]byte(nil), good...), 0),
		"overlong varint": append(append([]byte(nil), good[:12]...), 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for name, rec := range cases {
		_, err := decodeBatch(rec, "000009.log", 4096)
		if !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: %v, want ErrCorruption", name, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "kvtool: 000009.log: record at offset 4096: bloomkv/batchrep: batch byte ") {
			t.Errorf("%s: message %q does not name the file and offset", name, msg)
		}
	}
}

// FuzzCheckTableDamage flips bits of one byte of one table of a real
// database: every table byte is under a checksum, so check must fail and
// name the file, whatever the byte.
func FuzzCheckTableDamage(f *testing.F) {
	f.Add(uint8(0), uint32(0), byte(1))
	f.Add(uint8(1), uint32(100), byte(0x80))
	f.Add(uint8(2), uint32(1<<31), byte(0xff))
	f.Add(uint8(3), uint32(7), byte(0x10))
	f.Fuzz(func(t *testing.T, which uint8, at uint32, mask byte) {
		if mask == 0 {
			return
		}
		dir := cleanDB(t) // a fresh copy of the shared database
		tables := filesOfType(t, dir, base.FileTypeTable)
		name := tables[int(which)%len(tables)]
		path := filepath.Join(dir, name)
		off := int64(at) % fileSize(t, path)
		xorByte(t, path, off, mask)
		code, out, _ := runTool(t, "check", "-q", dir)
		if code != exitProblems {
			t.Fatalf("%s byte %d ^= %#x: exit %d:\n%s", name, off, mask, code, out)
		}
		wantFinding(t, out, "ERROR", name)
	})
}
