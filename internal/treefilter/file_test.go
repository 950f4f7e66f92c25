package treefilter

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// TestFileLayout pins the saved filter's layout of
// docs/formats.md: header, table entries, buckets, checksum.
func TestFileLayout(t *testing.T) {
	v := &manifest.Version{}
	v.Levels[1] = []*manifest.FileMetadata{{FileNum: 5}}
	tf := New(1, OpenLoad, ChooseCode([manifest.NumLevels]float64{0, 1}))
	seed := uint64(1)
	h := Hash([]byte("a"))
	tf.Insert(h, 1, &seed)
	data := tf.Encode(v)
	if len(data) != 571 {
		t.Fatalf("%d bytes, want 571", len(data))
	}
	// Level code for a tree all in L1: L1 "1", L2 (where it grows next)
	// "011", the others 4 bits.
	if tf.code.lens != [manifest.NumLevels]uint8{4, 1, 3, 4, 4, 4, 4} {
		t.Fatalf("code lengths %v", tf.code.lens)
	}
	want := []byte("BKVTREEF\x02\x00\x00\x00" + // magic, version
		"\x10\x04\x06\x00" + // 16-bit slots, 4 per bucket, codewords up to 6 bits
		"\x04\x01\x03\x04\x04\x04\x04\x00" + // code lengths of L0..L6
		"\x40\x00\x00\x00\x00\x00\x00\x00" + // 64 buckets
		"\x01\x00\x00\x00\x00\x00\x00\x00" + // 1 entry
		"\x01\x00\x00\x00" + // 1 table:
		"\x05\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01") // file 5, L1, no range deletions, tag 1
	if !bytes.Equal(data[:len(want)], want) {
		t.Fatalf("header and table entry\n% x\nwant\n% x", data[:len(want)], want)
	}
	got, tables, err := Decode("TREEFILTER", data)
	if err != nil || len(tables) != 1 || tables[0] != (Table{5, 1, false, 1}) || got.Lookup(h) != 1<<1 || got.entries != 1 {
		t.Fatalf("decoded %v %v, levels %b: %v", got, tables, got.Lookup(h), err)
	}
	if !MatchesVersion(tables, v) {
		t.Fatal("the decoded tables do not match the version encoded")
	}
	// Damage: every byte flipped in turn, and cuts, are rejected.
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		if _, _, err := Decode("TREEFILTER", bad); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("byte %d flipped: %v, want ErrCorruption", i, err)
		}
	}
	for _, n := range []int{0, 10, len(data) - 1} {
		if _, _, err := Decode("TREEFILTER", data[:n]); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("cut to %d bytes: %v, want ErrCorruption", n, err)
		}
	}
}
