package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestChunkedDump: every filter type dumps into chunks of the size asked
// and loads back to the same encoding; damage anywhere is ErrCorruption
// naming the chunk, never a panic, and leaves the receiver as it was.
func TestChunkedDump(t *testing.T) {
	for _, cc := range codecCases {
		t.Run(cc.name, func(t *testing.T) {
			f := cc.build(t)
			enc := mustMarshal(t, f)
			for _, size := range []int{1, 7, len(enc), 0} {
				var buf bytes.Buffer
				n, err := DumpChunks(&buf, f, size)
				if err != nil || n != int64(buf.Len()) {
					t.Fatalf("size %d: DumpChunks = %d, %v (wrote %d)", size, n, err, buf.Len())
				}
				eff := size
				if eff == 0 {
					eff = DefaultChunkSize
				}
				chunks := (len(enc)+eff-1)/eff + 1 // and the empty last one
				if want := chunks*(chunkHeaderLen+4) + len(enc); buf.Len() != want {
					t.Fatalf("size %d: dump of %d bytes, want %d (%d chunks)", size, buf.Len(), want, chunks)
				}
				back := cc.empty()
				if n, err := LoadChunks(bytes.NewReader(buf.Bytes()), back); err != nil || n != int64(buf.Len()) {
					t.Fatalf("size %d: LoadChunks = %d, %v", size, n, err)
				}
				if !bytes.Equal(mustMarshal(t, back), enc) {
					t.Fatalf("size %d: the round trip changed the filter", size)
				}
			}

			var buf bytes.Buffer
			if _, err := DumpChunks(&buf, f, 16); err != nil {
				t.Fatal(err)
			}
			dump := buf.Bytes()
			wantCorrupt := func(what string, data []byte) {
				t.Helper()
				dst := cc.build(t)
				_, err := LoadChunks(bytes.NewReader(data), dst)
				if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "offset") {
					t.Fatalf("%s: %v, want ErrCorruption with an offset", what, err)
				}
				if !bytes.Equal(mustMarshal(t, dst), enc) {
					t.Fatalf("%s: the receiver changed", what)
				}
			}
			for i := range dump {
				b := bytes.Clone(dump)
				b[i] ^= 0x20
				wantCorrupt(fmt.Sprintf("flip at %d", i), b)
			}
			for n := range len(dump) {
				wantCorrupt(fmt.Sprintf("cut to %d", n), dump[:n])
			}
			// Two chunks swapped (each of 16+16 bytes), and one dropped.
			c := chunkHeaderLen + 16 + 4
			swapped := append(append(append([]byte{}, dump[c:2*c]...), dump[:c]...), dump[2*c:]...)
			wantCorrupt("swapped chunks", swapped)
			wantCorrupt("dropped chunk", append(bytes.Clone(dump[:c]), dump[2*c:]...))
			// A plausible chunk claiming 4 GiB is refused before allocating.
			huge := bytes.Clone(dump[:chunkHeaderLen])
			binary.LittleEndian.PutUint32(huge[8:], 0xffffffff)
			wantCorrupt("huge length", huge)
		})
	}
	if _, err := DumpChunks(io.Discard, must(NewBloom(10, 0.1)), -1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("chunk size -1: %v", err)
	}
}

// TestInsert: BF.INSERT's model: create when missing with the options
// given, insert into an existing filter keeping its own shape, NoCreate.
func TestInsert(t *testing.T) {
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("a")}
	if _, _, err := Insert(nil, InsertOptions{NoCreate: true}, keys...); !errors.Is(err, ErrNoFilter) {
		t.Fatalf("NoCreate with no filter: %v", err)
	}
	f, added, err := Insert(nil, InsertOptions{Capacity: 2, ErrorRate: 0.001, Expansion: 4}, keys...)
	if err != nil {
		t.Fatal(err)
	}
	if !added[0] || !added[1] || added[2] {
		t.Fatalf("added %v, want [true true false]", added)
	}
	if f.cfg.initial != 2 || f.cfg.fpp != 0.001 || f.cfg.growth != 4 {
		t.Fatalf("created with %+v", f.cfg)
	}
	g, added, err := Insert(f, InsertOptions{Capacity: 999, NoCreate: true}, []byte("c"), []byte("b"))
	if err != nil || g != f || !added[0] || added[1] || f.cfg.initial != 2 {
		t.Fatalf("insert into existing: %v, %v, %v, cfg %+v", g == f, added, err, f.cfg)
	}
	if f.Count() != 3 {
		t.Fatalf("Count %d, want 3", f.Count())
	}
	d, _, err := Insert(nil, InsertOptions{})
	if err != nil || d.cfg.initial != 100 || d.cfg.fpp != 0.01 || d.cfg.growth != DefaultGrowth {
		t.Fatalf("defaults: %+v, %v", d.cfg, err)
	}
	if _, _, err := Insert(nil, InsertOptions{ErrorRate: 2}, keys...); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad rate: %v", err)
	}
}

// FuzzLoadChunks: arbitrary bytes as a chunked dump never panic, and an
// error always wraps ErrCorruption.
func FuzzLoadChunks(f *testing.F) {
	for _, cc := range codecCases {
		var buf bytes.Buffer
		if _, err := DumpChunks(&buf, cc.build(f), 16); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cc := range codecCases {
			if _, err := LoadChunks(bytes.NewReader(data), cc.empty()); err != nil && !errors.Is(err, ErrCorruption) {
				t.Fatalf("%s: error does not wrap ErrCorruption: %v", cc.name, err)
			}
		}
	})
}
