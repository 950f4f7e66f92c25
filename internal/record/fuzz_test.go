package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, and
// must end with io.EOF or an error wrapping ErrCorruption.
func FuzzReader(f *testing.F) {
	seed, _ := buildLog(f, [][]byte{[]byte("bloom"), {}, bytes.Repeat([]byte("x"), 40000)})
	f.Add(seed)
	f.Add(seed[:20])
	f.Add([]byte{})
	f.Add(make([]byte, 100))
	f.Add(frame(typeLast, []byte("z")))
	f.Fuzz(func(t *testing.T, data []byte) {
		res := readAll(data, "fuzz.log")
		if res.err != nil && !errors.Is(res.err, base.ErrCorruption) {
			t.Fatalf("unexpected error kind: %v", res.err)
		}
		if res.torn && (res.tornOffset < 0 || res.tornOffset > int64(len(data))) {
			t.Fatalf("torn offset %d outside a %d-byte input", res.tornOffset, len(data))
		}
	})
}

// FuzzDamagedLog writes a log of known records, damages it as the fuzz input
// says, and checks that the reader returns a prefix of the records written:
// never a record that was not written, never one out of order.
func FuzzDamagedLog(f *testing.F) {
	f.Add(uint64(1), []byte{0, 10, 0, 0, 0x01})            // flip a bit
	f.Add(uint64(2), []byte{1, 0, 0, 0x80, 0})             // truncate
	f.Add(uint64(3), []byte{2, 0, 0, 0x40, 0})             // append zeros
	f.Add(uint64(4), []byte{3, 0, 0x80, 0, 0, 0, 5, 0, 0}) // zero a range
	f.Add(uint64(5), []byte{0, 1, 0, 0, 0xff, 1, 0, 0, 0x10, 0})
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		recs := randomRecords(rng, 1+rng.IntN(12))
		data, _ := buildLog(t, recs)
		data = damage(data, ops)
		res := readAll(data, "damaged.log")
		if res.err != nil && !errors.Is(res.err, base.ErrCorruption) {
			t.Fatalf("unexpected error kind: %v", res.err)
		}
		checkPrefix(t, res.recs, recs)
		// Allowing reserved space changes what the tail means, never
		// which records come back: a prefix, and reserved space is
		// zeros to the end.
		for _, strict := range []bool{false, true} {
			rr, reserved, at := readReserved(data, strict)
			if rr.err != nil && !errors.Is(rr.err, base.ErrCorruption) {
				t.Fatalf("reserved allowed (strict %v): unexpected error kind: %v", strict, rr.err)
			}
			checkPrefix(t, rr.recs, recs)
			if reserved && (at > int64(len(data)) || !allZero(data[at:])) {
				t.Fatalf("reserved from %d of %d bytes, but not all zeros", at, len(data))
			}
		}
	})
}

// damage applies a list of 5-byte operations (op, 32-bit position) to data.
func damage(data []byte, ops []byte) []byte {
	for len(ops) >= 5 {
		op := ops[0] % 4
		// int64, not int: a uint32 above 2^31 would turn negative in a
		// 32-bit int.
		arg := int64(binary.LittleEndian.Uint32(ops[1:5]))
		ops = ops[5:]
		n := int64(len(data))
		if n == 0 && op != 2 {
			continue
		}
		switch op {
		case 0: // flip the low bits of one byte
			data[arg%n] ^= byte(arg>>24) | 1
		case 1: // truncate
			data = data[:arg%(n+1)]
		case 2: // append zeros
			data = append(data, make([]byte, arg%(2*BlockSize))...)
		case 3: // zero a range of up to 4 KiB
			start := arg % n
			clear(data[start:min(n, start+(arg>>20)%4096+1)])
		}
	}
	return data
}
