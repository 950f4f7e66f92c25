package filter

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestBloomMatchesFilterBlock checks "one implementation": a Bloom with the
// m and k of a filter block built from the same keys holds identical bits.
func TestBloomMatchesFilterBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, bpk := range []int{1, 4, 10, 16} {
		for _, n := range []int{0, 1, 3, 100, 4000} {
			keys := randomKeys(rng, n)
			bb := NewBlockBuilder(bpk)
			for _, k := range keys {
				bb.AddKey(k)
			}
			enc := bb.Finish()
			blk, err := DecodeBlock(enc)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewBloomWithShape(blk.Bits(), blk.NumProbes())
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				b.Add(k)
			}
			array := enc[:len(enc)-blockTrailerLen]
			for i, w := range b.words {
				if got := binary.LittleEndian.Uint64(array[8*i:]); got != w {
					t.Fatalf("bpk=%d n=%d: word %d: bloom %#016x, block %#016x", bpk, n, i, w, got)
				}
			}
			// And the conversions both ways preserve those bits.
			from, err := BloomFromBlock(blk)
			if err != nil || !from.Equal(b) {
				t.Fatalf("bpk=%d n=%d: BloomFromBlock differs (err %v)", bpk, n, err)
			}
			out := b.AppendBlock([]byte("prefix"))
			if !bytes.HasPrefix(out, []byte("prefix")) || !bytes.Equal(out[6:len(out)-blockTrailerLen], array) {
				t.Fatalf("bpk=%d n=%d: AppendBlock's bit array differs from the block's", bpk, n)
			}
			back, err := DecodeBlock(out[6:])
			if err != nil {
				t.Fatal(err)
			}
			if back.NumProbes() != blk.NumProbes() || back.Bits() != blk.Bits() {
				t.Fatalf("bpk=%d n=%d: AppendBlock shape %v, want %v", bpk, n, back, blk)
			}
			if d := back.NumKeys() - n; n > 0 && (d > n/10+1 || d < -n/10-1) {
				t.Errorf("bpk=%d n=%d: exported block claims %d keys", bpk, n, back.NumKeys())
			}
		}
	}
}

// TestBloomFromGoldenBlock reads the pinned filter block of TestGoldenBlock
// as a standalone Bloom.
func TestBloomFromGoldenBlock(t *testing.T) {
	blk, err := DecodeBlock([]byte{0x50, 0x42, 0xf0, 0x08, 0x03, 0x21, 0x3e, 0x20, 3, 0, 0, 0, 7, 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := BloomFromBlock(blk)
	if err != nil {
		t.Fatal(err)
	}
	if b.Bits() != 64 || b.NumProbes() != 7 || b.words[0] != 0x203e210308f04250 {
		t.Fatalf("golden block as Bloom: %v words %#x", b, b.words)
	}
	for _, k := range []string{"apple", "banana", "cherry"} {
		if !b.MayContain([]byte(k)) || b.Add([]byte(k)) {
			t.Fatalf("%q: not held by the Bloom read from the golden block", k)
		}
	}
}
