package main

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
)

// TestKeyOrderAndGaps checks the key-space invariants doc.go states, on
// random parameters: keys have the asked size, strictly increase with the
// slot (so absent odd slots fall between present neighbours) and are the
// same on every call.
func TestKeyOrderAndGaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		num := 2 + rng.IntN(100_000)
		size := 8 + rng.IntN(40)
		ks := newKeySpace(num, size, 10, 0.5)
		var prev, cur, again []byte
		// Consecutive slots at random places, and both ends.
		starts := []uint64{0, uint64(2*num - 4)}
		for range 20 {
			starts = append(starts, uint64(rng.IntN(2*num-3)))
		}
		for _, s := range starts {
			for slot := s; slot < s+3 && slot < uint64(2*num); slot++ {
				cur = ks.key(cur, slot)
				if len(cur) != size {
					t.Fatalf("num %d size %d slot %d: key of %d bytes", num, size, slot, len(cur))
				}
				if slot > s && bytes.Compare(prev, cur) >= 0 {
					t.Fatalf("num %d: key(%d)=%x not above key(%d)=%x", num, slot, cur, slot-1, prev)
				}
				again = ks.key(again, slot)
				if !bytes.Equal(again, cur) {
					t.Fatalf("key(%d) differs between calls", slot)
				}
				prev = append(prev[:0], cur...)
			}
		}
		for range 100 {
			if s := ks.randomAbsent(rng); s%2 != 1 || s > uint64(2*num-3) {
				t.Fatalf("num %d: absent slot %d is not odd inside the range", num, s)
			}
			if s := ks.randomPresent(rng); s%2 != 0 || s > uint64(2*num-2) {
				t.Fatalf("num %d: present slot %d is not an even slot of a written key", num, s)
			}
		}
	}
}

// TestKeysSpreadOverKeySpace: keys look random (first bytes vary) even
// though they are ordered.
func TestKeysSpreadOverKeySpace(t *testing.T) {
	ks := newKeySpace(1000, 16, 100, 0.5)
	seen := map[byte]bool{}
	var k []byte
	for s := range uint64(2000) {
		k = ks.key(k, s)
		seen[k[0]] = true
	}
	if len(seen) < 200 {
		t.Errorf("first key byte takes %d values over 2000 keys; want them spread over 0..255", len(seen))
	}
}

// TestValuesCompressToRatio: values are deterministic and snappy
// compresses them to about -compression_ratio.
func TestValuesCompressToRatio(t *testing.T) {
	for _, size := range []int{100, 4000} {
		for _, ratio := range []float64{0.25, 0.5, 1} {
			ks := newKeySpace(1000, 16, size, ratio)
			v := ks.value(nil, 42)
			if len(v) != size || !bytes.Equal(v, newKeySpace(1000, 16, size, ratio).value(nil, 42)) {
				t.Fatalf("value(42) is not a stable %d-byte value", size)
			}
			if bytes.Equal(v, ks.value(nil, 44)) {
				t.Fatalf("slots 42 and 44 have the same value")
			}
			got := float64(len(snappy.Encode(nil, v))) / float64(len(v))
			if got < ratio-0.1 || got > ratio+0.1 {
				t.Errorf("value_size %d, compression_ratio %.2f: snappy ratio %.2f", size, ratio, got)
			}
		}
	}
	if v := newKeySpace(10, 8, 0, 0.5).value(nil, 2); len(v) != 0 {
		t.Errorf("value_size 0 gives %d bytes", len(v))
	}
}

func BenchmarkKey(b *testing.B) {
	ks := newKeySpace(1_000_000, 16, 100, 0.5)
	var k []byte
	b.ReportAllocs()
	for i := range b.N {
		k = ks.key(k, uint64(i))
	}
}

func BenchmarkValue(b *testing.B) {
	ks := newKeySpace(1_000_000, 16, 100, 0.5)
	var v []byte
	b.ReportAllocs()
	for i := range b.N {
		v = ks.value(v, uint64(i))
	}
}
