package manifest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func goldenEdit() *VersionEdit {
	return &VersionEdit{
		HasLogNum: true, LogNum: 3,
		HasNextFileNum: true, NextFileNum: 5,
		HasLastSeq: true, LastSeq: 100,
		CompactPointers: []CompactPointer{{1, []byte("m")}},
		DeletedFiles:    []DeletedFileEntry{{1, 2}},
		NewFiles: []NewFileEntry{{0, &FileMetadata{
			FileNum: 4, Size: 1000,
			Smallest: ikey("a", 7, base.KindSet), Largest: ikey("c", 9, base.KindDelete),
			SmallestSeq: 7, LargestSeq: 9,
		}}},
	}
}

var goldenEditBytes = []byte{
	0x01, 0x03,
	0x02, 0x05,
	0x03, 0x64,
	0x04, 0x01, 0x01, 'm',
	0x05, 0x01, 0x02,
	0x06, 0x00, 0x04, 0xe8, 0x07,
	0x09, 'a', 0x01, 0x07, 0, 0, 0, 0, 0, 0,
	0x09, 'c', 0x00, 0x09, 0, 0, 0, 0, 0, 0,
	0x07, 0x09,
}

func TestEditGoldenBytes(t *testing.T) {
	got := goldenEdit().Encode()
	if !bytes.Equal(got, goldenEditBytes) {
		t.Fatalf("encoding\n got % x\nwant % x", got, goldenEditBytes)
	}
	var e VersionEdit
	if err := e.Decode(goldenEditBytes); err != nil {
		t.Fatal(err)
	}
	if !editsEqual(&e, goldenEdit()) {
		t.Fatalf("decoded %+v", e)
	}
}

func TestEditRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 2000 {
		want := randomEdit(rng)
		if err := want.Validate(); err != nil {
			t.Fatalf("edit %d: generator made an invalid edit: %v", i, err)
		}
		enc := want.Encode()
		var got VersionEdit
		if err := got.Decode(enc); err != nil {
			t.Fatalf("edit %d: %v", i, err)
		}
		if !editsEqual(&got, want) {
			t.Fatalf("edit %d: round trip changed it:\n got %+v\nwant %+v", i, got, want)
		}
		// The decoded edit must not alias the input.
		for j := range enc {
			enc[j] = 0xee
		}
		if !editsEqual(&got, want) {
			t.Fatalf("edit %d: decoded edit aliases its input", i)
		}
	}
}

func TestEmptyEdit(t *testing.T) {
	if b := (&VersionEdit{}).Encode(); len(b) != 0 {
		t.Fatalf("empty edit encodes to % x", b)
	}
	e := goldenEdit()
	if err := e.Decode(nil); err != nil || !editsEqual(e, &VersionEdit{}) {
		t.Fatalf("Decode(nil) = %v, %+v; want an empty edit", err, e)
	}
}

func TestEditDamageRejected(t *testing.T) {
	good := goldenEditBytes
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	newFile := func(level byte, small, large []byte, s1, s2 byte) []byte {
		b := []byte{0x06, level, 0x04, 0x01, byte(len(small))}
		b = append(b, small...)
		b = append(b, byte(len(large)))
		b = append(b, large...)
		return append(b, s1, s2)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown tag", cat(good[:4], []byte{0x63, 0x01}), "byte 4: unknown tag 99"},
		{"tag zero", []byte{0x00}, "byte 0: unknown tag 0"},
		{"truncated varint", []byte{0x01, 0x80}, "byte 1: log number: truncated varint"},
		{"overlong varint", cat([]byte{0x02}, bytes.Repeat([]byte{0xff}, 10), []byte{0x01}), "byte 1: next file number: varint overflows"},
		{"log number twice", []byte{0x01, 0x01, 0x01, 0x02}, "byte 2: log number set twice"},
		{"next file twice", []byte{0x02, 0x01, 0x02, 0x02}, "next file number set twice"},
		{"last seq twice", []byte{0x03, 0x01, 0x03, 0x02}, "last sequence set twice"},
		{"level out of range", []byte{0x05, 0x07, 0x01}, "byte 1: level 7 out of range"},
		{"huge level", []byte{0x04, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00}, "out of range"},
		{"key past end", []byte{0x04, 0x01, 0x05, 'a', 'b'}, "compact pointer key: length 5 runs past the end"},
		{"truncated new file", good[:len(good)-1], "largest sequence: truncated varint"},
		{"short internal key", newFile(0, []byte("abc"), ikey("c", 1, base.KindSet), 1, 1), "not a valid internal key"},
		{"bad kind", newFile(0, ikey("a", 1, base.KindSeek), ikey("c", 1, base.KindSet), 1, 1), "not a valid internal key"},
		{"smallest after largest", newFile(0, ikey("d", 1, base.KindSet), ikey("c", 1, base.KindSet), 1, 1), "sorts after largest key"},
		{"seqs reversed", newFile(0, ikey("a", 1, base.KindSet), ikey("c", 1, base.KindSet), 5, 4), "bad sequence range 5-4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e VersionEdit
			err := e.Decode(tc.data)
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("Decode(% x) = %v, want corruption", tc.data, err)
			}
			if !strings.HasPrefix(err.Error(), "bloomkv/manifest: version edit byte ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// Cutting an encoding inside a field is always rejected (cutting it at a
// field boundary yields a shorter valid edit, which the log's checksums are
// there to catch).
func TestEditTruncationInsideFieldRejected(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for range 300 {
		e := randomEdit(rng)
		enc := e.Encode()
		boundaries := map[int]bool{0: true}
		prefix := VersionEdit{HasLogNum: e.HasLogNum, LogNum: e.LogNum}
		boundaries[len(prefix.Encode())] = true
		prefix.HasNextFileNum, prefix.NextFileNum = e.HasNextFileNum, e.NextFileNum
		boundaries[len(prefix.Encode())] = true
		prefix.HasLastSeq, prefix.LastSeq = e.HasLastSeq, e.LastSeq
		boundaries[len(prefix.Encode())] = true
		for _, cp := range e.CompactPointers {
			prefix.CompactPointers = append(prefix.CompactPointers, cp)
			boundaries[len(prefix.Encode())] = true
		}
		for _, d := range e.DeletedFiles {
			prefix.DeletedFiles = append(prefix.DeletedFiles, d)
			boundaries[len(prefix.Encode())] = true
		}
		for _, nf := range e.NewFiles {
			prefix.NewFiles = append(prefix.NewFiles, nf)
			boundaries[len(prefix.Encode())] = true
		}
		for n := range len(enc) {
			var d VersionEdit
			err := d.Decode(enc[:n])
			if boundaries[n] != (err == nil) {
				t.Fatalf("cut at %d of %d (boundary=%v): %v", n, len(enc), boundaries[n], err)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []*VersionEdit{
		{NewFiles: []NewFileEntry{{Level: 0}}},
		{NewFiles: []NewFileEntry{{Level: NumLevels, Meta: meta(1, "a", "b", 1)}}},
		{NewFiles: []NewFileEntry{{Level: 1, Meta: meta(1, "b", "a", 1)}}},
		{DeletedFiles: []DeletedFileEntry{{Level: -1, FileNum: 1}}},
		{CompactPointers: []CompactPointer{{Level: 9}}},
	}
	for i, e := range bad {
		var d VersionEdit
		if err := d.Decode(e.Encode()); err == nil {
			t.Fatalf("edit %d: Decode accepted the encoding of an invalid edit", i)
		}
		if err := e.Validate(); err == nil || !strings.HasPrefix(err.Error(), "bloomkv/manifest: invalid version edit: ") {
			t.Fatalf("edit %d: Validate = %v", i, err)
		}
	}
	if err := goldenEdit().Validate(); err != nil {
		t.Fatal(err)
	}
}
