package batchrep

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// testLimits are small, so that tests and the fuzzer reach them.
var testLimits = Limits{MaxKey: 100, MaxValue: 1000}

// testOp is an operation for encode.
type testOp struct {
	del        bool
	key, value string
}

// encode builds a batch with AppendSet and AppendDelete.
func encode(seq uint64, ops ...testOp) []byte {
	rep := make([]byte, HeaderLen)
	SetSeq(rep, seq)
	for _, op := range ops {
		if op.del {
			rep = AppendDelete(rep, []byte(op.key))
		} else {
			rep = AppendSet(rep, []byte(op.key), []byte(op.value))
		}
	}
	return rep
}

// decode reads every operation of rep, and the reader's error.
func decode(rep []byte, lim Limits) ([]Op, error) {
	var ops []Op
	r := NewReader(rep, lim)
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		ops = append(ops, op)
	}
	return ops, r.Err()
}

func formatOps(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "%d %s %q", op.Seq, op.Kind, op.Key)
		switch op.Kind {
		case base.KindSet:
			fmt.Fprintf(&b, "=%q", op.Value)
		case base.KindRangeDelete:
			fmt.Fprintf(&b, "-%q", op.Value)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestGolden pins the worked example of the package doc.
func TestGolden(t *testing.T) {
	want := []byte{
		0x05, 0, 0, 0, 0, 0, 0, 0, // seq 5
		0x02, 0, 0, 0, // count 2
		0x01, 0x02, 'a', 'b', 0x01, 'x', // set "ab" = "x"
		0x00, 0x01, 'c', // delete "c"
	}
	got := encode(5, testOp{key: "ab", value: "x"}, testOp{del: true, key: "c"})
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
	ops, err := decode(want, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if s, w := formatOps(ops), `5 SET "ab"="x"; 6 DEL "c"; `; s != w {
		t.Fatalf("decoded %s, want %s", s, w)
	}
	if seq, count, err := Validate(want, testLimits); seq != 5 || count != 2 || err != nil {
		t.Fatalf("Validate = %d, %d, %v", seq, count, err)
	}
}

// TestGoldenRangeDelete pins the encoding of a range deletion (kind 2),
// the one operation added since the format was first written.
func TestGoldenRangeDelete(t *testing.T) {
	want := []byte{
		0x07, 0, 0, 0, 0, 0, 0, 0, // seq 7
		0x02, 0, 0, 0, // count 2
		0x00, 0x01, 'c', // delete "c"
		0x02, 0x01, 'a', 0x02, 'b', 'c', // delete ["a", "bc")
	}
	got := AppendDeleteRange(encode(7, testOp{del: true, key: "c"}), []byte("a"), []byte("bc"))
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
	ops, err := decode(want, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if s, w := formatOps(ops), `7 DEL "c"; 8 RANGEDEL "a"-"bc"; `; s != w {
		t.Fatalf("decoded %s, want %s", s, w)
	}
}

// TestRejects pins, for each kind of damage, the byte it is reported at
// and what the message says.
func TestRejects(t *testing.T) {
	good := encode(5, testOp{key: "k", value: "v"}) // 12-byte header, op at 12
	head := func(seq uint64, count uint32) []byte {
		b := binary.LittleEndian.AppendUint64(nil, seq)
		return binary.LittleEndian.AppendUint32(b, count)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name   string
		rep    []byte
		offset int
		reason string
	}{
		{"empty", nil, 0, "batch of 0 bytes is shorter than its 12-byte header"},
		{"short header", good[:11], 0, "shorter than its 12-byte header"},
		{"zero sequence", encode(0, testOp{key: "k"}), 0, "sequence 0 with 1 operations is out of range"},
		{"sequence past MaxSeq", encode(base.MaxSeq+1, testOp{key: "k"}), 0, "out of range"},
		{"sequence range", encode(base.MaxSeq, testOp{key: "k"}, testOp{key: "l"}), 0, "out of range"},
		{"sequence wraps", head(1<<64-1, 1), 0, "out of range"},
		{"missing op", cat(head(5, 2), []byte{1, 1, 'k', 0}), 16, "the batch ends after 1 of 2 operations"},
		{"count far past the bytes", cat(head(5, 1<<31), good[12:]), 17, "ends after 1 of 2147483648 operations"},
		{"unknown kind", cat(head(5, 1), []byte{7, 1, 'k'}), 12, "operation 0 has unknown kind 7"},
		{"empty key", encode(5, testOp{key: "", value: "v"}), 13, "operation 0: key of 0 bytes (want 1 to 100)"},
		{"long key", encode(5, testOp{del: true, key: strings.Repeat("k", 101)}), 13, "key of 101 bytes (want 1 to 100)"},
		{"long value", encode(5, testOp{key: "k", value: strings.Repeat("v", 1001)}), 15, "value of 1001 bytes (want 0 to 1000)"},
		{"key past end", cat(head(5, 1), []byte{1, 9, 'k'}), 13, "key of 9 bytes runs past the end"},
		{"value past end", cat(head(5, 1), []byte{1, 1, 'k', 5, 'v'}), 15, "value of 5 bytes runs past the end"},
		{"key length cut off", cat(head(5, 1), []byte{0, 0x80}), 13, "key length is cut off"},
		{"value length cut off", cat(head(5, 1), []byte{1, 1, 'k'}), 15, "value length is cut off"},
		{"overlong varint", cat(head(5, 1), []byte{1}, bytes.Repeat([]byte{0xff}, 10), []byte{1}), 13, "key length overflows 64 bits"},
		{"trailing bytes", cat(good, []byte{0}), 17, "1 trailing bytes after 1 operations"},
		{"range end before start", cat(head(5, 1), []byte{2, 1, 'k', 1, 'a'}), 15, `range deletion end "a" is not after its start "k"`},
		{"empty range", cat(head(5, 1), []byte{2, 1, 'k', 1, 'k'}), 15, "is not after its start"},
		{"range end empty", cat(head(5, 1), []byte{2, 1, 'k', 0}), 15, "end key of 0 bytes"},
		{"range end cut off", cat(head(5, 1), []byte{2, 1, 'k'}), 15, "end key length is cut off"},
		{"trailing bytes, no ops", cat(head(5, 0), []byte{1, 1, 'k'}), 12, "3 trailing bytes after 0 operations"},
	}
	for _, tc := range cases {
		_, _, err := Validate(tc.rep, testLimits)
		var ce *CorruptionError
		if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: %v, want a *CorruptionError wrapping ErrCorruption", tc.name, err)
			continue
		}
		if ce.Offset != tc.offset || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("%s: byte %d %q, want byte %d %q", tc.name, ce.Offset, ce.Reason, tc.offset, tc.reason)
		}
		if want := fmt.Sprintf("bloomkv/batchrep: batch byte %d: ", tc.offset); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: message %q does not start with %q", tc.name, err, want)
		}
	}
}

// TestAccepts covers the edges a decoder must accept.
func TestAccepts(t *testing.T) {
	cases := map[string][]byte{
		"no operations":      encode(7),
		"empty value":        encode(7, testOp{key: "k"}),
		"limits exactly":     encode(7, testOp{key: strings.Repeat("k", 100), value: strings.Repeat("v", 1000)}),
		"last sequences":     encode(base.MaxSeq-2, testOp{key: "a"}, testOp{del: true, key: "b"}),
		"non-minimal varint": {7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x81, 0x00, 'k'},
	}
	for name, rep := range cases {
		if _, _, err := Validate(rep, testLimits); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestReaderStopsAtDamage: the reader hands out the operations before the
// damage, then stops with the error; Validate hands out none.
func TestReaderStopsAtDamage(t *testing.T) {
	rep := encode(10, testOp{key: "a", value: "1"}, testOp{del: true, key: "b"}, testOp{key: "c", value: "3"})
	rep[len(rep)-5] = 9 // the third operation's kind
	ops, err := decode(rep, testLimits)
	if s := formatOps(ops); s != `10 SET "a"="1"; 11 DEL "b"; ` || !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("decoded %s then %v", s, err)
	}
	if !strings.Contains(err.Error(), "operation 2 has unknown kind 9") {
		t.Fatalf("error %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder. It must never panic;
// the reader and Validate agree; every rejection is a *CorruptionError
// inside the input; and whatever decodes re-encodes, through AppendSet and AppendDelete, to
// the same operations (and the same bytes, but for non-minimal varints).
// CI fuzzes it briefly (.ci/run).
func FuzzDecode(f *testing.F) {
	f.Add(encode(1, testOp{key: "a", value: "b"}))
	f.Add(encode(99, testOp{del: true, key: "k"}, testOp{key: "long", value: strings.Repeat("v", 300)}))
	f.Add(encode(3))
	f.Add(encode(base.MaxSeq-1, testOp{key: "x"}))
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x81, 0x00, 'k'})
	f.Add(AppendDeleteRange(encode(4, testOp{key: "a", value: "b"}), []byte("a"), []byte("c")))
	f.Fuzz(func(t *testing.T, rep []byte) {
		ops, rerr := decode(rep, testLimits)
		seq, count, err := Validate(rep, testLimits)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("Validate says %v, the reader %v", err, rerr)
		}
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v is not a *CorruptionError wrapping ErrCorruption", err)
			}
			if ce.Offset < 0 || ce.Offset > len(rep) {
				t.Fatalf("error at byte %d of a %d-byte batch", ce.Offset, len(rep))
			}
			return
		}
		if uint32(len(ops)) != count || seq == 0 {
			t.Fatalf("decoded %d operations; the header says %d at sequence %d", len(ops), count, seq)
		}
		again := make([]byte, HeaderLen)
		SetSeq(again, seq)
		for i, op := range ops {
			if op.Seq != seq+uint64(i) {
				t.Fatalf("operation %d has sequence %d, want %d", i, op.Seq, seq+uint64(i))
			}
			switch op.Kind {
			case base.KindSet:
				again = AppendSet(again, op.Key, op.Value)
			case base.KindRangeDelete:
				again = AppendDeleteRange(again, op.Key, op.Value)
			default:
				again = AppendDelete(again, op.Key)
			}
		}
		ops2, err := decode(again, testLimits)
		if err != nil || formatOps(ops2) != formatOps(ops) {
			t.Fatalf("re-encoded %x to %x: %s then %s (%v)", rep, again, formatOps(ops), formatOps(ops2), err)
		}
		if len(again) == len(rep) && !bytes.Equal(again, rep) || len(again) > len(rep) {
			t.Fatalf("re-encoded %x as %x", rep, again)
		}
	})
}

// BenchmarkValidate measures checking a 100-operation batch, as kvtool
// check and recovery do for each log record.
func BenchmarkValidate(b *testing.B) {
	var ops []testOp
	for i := range 100 {
		ops = append(ops, testOp{key: fmt.Sprintf("key%06d", i), value: strings.Repeat("v", 40)})
	}
	rep := encode(1, ops...)
	b.SetBytes(int64(len(rep)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Validate(rep, testLimits); err != nil {
			b.Fatal(err)
		}
	}
}
