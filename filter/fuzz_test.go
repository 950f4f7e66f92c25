package filter

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// fuzzDecoder checks one decoder on arbitrary bytes: an error must wrap
// ErrCorruption, and anything accepted must re-encode to exactly the same
// bytes (the encoding is canonical) and survive use.
func fuzzDecoder(f *testing.F, c codecCase) {
	good := mustMarshal(f, c.build(f))
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(append(bytes.Clone(good), 0))
	f.Add([]byte{})
	for _, other := range codecCases {
		f.Add(mustMarshal(f, other.build(f)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAndCheck(t, c, data)
		// Most random bytes die at the checksum; also try them with the
		// length and checksum made right, so the body's checks are fuzzed.
		if len(data) >= headerLen+checksumLen {
			decodeAndCheck(t, c, reseal(bytes.Clone(data)))
		}
	})
}

func decodeAndCheck(t *testing.T, c codecCase, data []byte) {
	recv := c.empty()
	if err := recv.UnmarshalBinary(data); err != nil {
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("error does not wrap ErrCorruption: %v", err)
		}
		return
	}
	if again := mustMarshal(t, recv); !bytes.Equal(again, data) {
		t.Fatalf("accepted input re-encodes differently:\n in %x\nout %x", data, again)
	}
	exercise(t, recv)
}

// exercise adds, probes and removes a few keys on a decoded filter.
func exercise(t *testing.T, f codec) {
	for i := 0; i < 20; i++ {
		k := keyN('f', i)
		switch f := f.(type) {
		case *Bloom:
			f.Add(k)
			if !f.MayContain(k) {
				t.Fatal("false negative")
			}
			f.ApproximateCount()
		case *Counting:
			f.Add(k)
			if !f.MayContain(k) {
				t.Fatal("false negative")
			}
			_ = f.Remove(k)
		case *Cuckoo:
			if f.Add(k) == nil && !f.MayContain(k) {
				t.Fatal("false negative")
			}
			_ = f.Remove(k)
		case *Scalable:
			f.Add(k)
			if !f.MayContain(k) {
				t.Fatal("false negative")
			}
		}
	}
}

func FuzzUnmarshalBloom(f *testing.F)    { fuzzDecoder(f, codecCases[0]) }
func FuzzUnmarshalCounting(f *testing.F) { fuzzDecoder(f, codecCases[1]) }
func FuzzUnmarshalCuckoo(f *testing.F)   { fuzzDecoder(f, codecCases[2]) }
func FuzzUnmarshalScalable(f *testing.F) { fuzzDecoder(f, codecCases[3]) }

// FuzzReadFrom feeds a stream to ReadFrom of the type picked by the first
// byte: it must fail with corruption or consume exactly one encoding.
func FuzzReadFrom(f *testing.F) {
	for i, c := range codecCases {
		good := mustMarshal(f, c.build(f))
		f.Add(byte(i), good)
		f.Add(byte(i), append(bytes.Clone(good), "trailing"...))
		f.Add(byte(i), good[:20])
	}
	f.Fuzz(func(t *testing.T, which byte, stream []byte) {
		c := codecCases[int(which)%len(codecCases)]
		recv := c.empty()
		n, err := recv.ReadFrom(bytes.NewReader(stream))
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		if again := mustMarshal(t, recv); !bytes.Equal(again, stream[:n]) {
			t.Fatalf("ReadFrom consumed %d bytes that re-encode differently", n)
		}
	})
}
