package filter

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// codecFilter is what every standalone filter offers for this test.
type codecFilter interface {
	MayContain(key []byte) bool
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
	io.WriterTo
	io.ReaderFrom
}

// TestRoundTripNoFalseNegatives fills each filter type with random key sets
// and checks, after both MarshalBinary/UnmarshalBinary and WriteTo/ReadFrom,
// that every key added is still reported present, and that a flipped byte
// in the encoding is rejected as ErrCorruption.
func TestRoundTripNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	type maker struct {
		name  string
		new   func(n int) (codecFilter, func([]byte) error, codecFilter)
		fresh func() codecFilter
	}
	makers := []maker{
		{"bloom", func(n int) (codecFilter, func([]byte) error, codecFilter) {
			f, _ := NewBloom(n, 0.01)
			return f, func(k []byte) error { f.Add(k); return nil }, new(Bloom)
		}, func() codecFilter { return new(Bloom) }},
		{"counting", func(n int) (codecFilter, func([]byte) error, codecFilter) {
			f, _ := NewCounting(n, 0.01)
			return f, func(k []byte) error { f.Add(k); return nil }, new(Counting)
		}, func() codecFilter { return new(Counting) }},
		{"cuckoo", func(n int) (codecFilter, func([]byte) error, codecFilter) {
			f, _ := NewCuckoo(n, 0.01)
			return f, f.Add, new(Cuckoo)
		}, func() codecFilter { return new(Cuckoo) }},
		{"scalable", func(n int) (codecFilter, func([]byte) error, codecFilter) {
			f, _ := NewScalable(max(1, n/8), 0.01) // grows several layers
			return f, func(k []byte) error { f.Add(k); return nil }, new(Scalable)
		}, func() codecFilter { return new(Scalable) }},
	}
	for _, mk := range makers {
		for round := 0; round < 20; round++ {
			n := 1 + rng.IntN(3000)
			f, add, _ := mk.new(n)
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "%s-%d-%x", mk.name, i, rng.Uint64())
				if err := add(keys[i]); err != nil {
					t.Fatalf("%s: Add: %v", mk.name, err)
				}
			}
			data, err := f.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			viaBytes := mk.fresh()
			if err := viaBytes.UnmarshalBinary(data); err != nil {
				t.Fatalf("%s: UnmarshalBinary: %v", mk.name, err)
			}
			var buf bytes.Buffer
			if _, err := f.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			viaStream := mk.fresh()
			if _, err := viaStream.ReadFrom(&buf); err != nil {
				t.Fatalf("%s: ReadFrom: %v", mk.name, err)
			}
			for _, k := range keys {
				if !viaBytes.MayContain(k) || !viaStream.MayContain(k) {
					t.Fatalf("%s (n=%d): false negative for %q after a round trip", mk.name, n, k)
				}
			}
			damaged := append([]byte(nil), data...)
			damaged[rng.IntN(len(damaged))] ^= byte(1 + rng.IntN(255))
			if err := mk.fresh().UnmarshalBinary(damaged); !errors.Is(err, ErrCorruption) {
				t.Fatalf("%s: a flipped byte gave %v, want ErrCorruption", mk.name, err)
			}
		}
	}
}
