package filter

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/klauspost/crc32"
)

type codec interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
	WriteTo(io.Writer) (int64, error)
	ReadFrom(io.Reader) (int64, error)
}

// codecCase is one filter type: how to build a small populated one (the
// golden example) and an empty receiver to decode into.
type codecCase struct {
	name   string
	golden string // hex of the small example's encoding
	build  func(t testing.TB) codec
	empty  func() codec
}

var goldenKeys = []string{"apple", "banana", "cherry"}

// grownKeys fill the kind-5 golden cuckoo past its first table.
var grownKeys = strings.Fields("date elderberry fig grape honeydew kiwi lemon mango nectarine orange papaya quince raspberry strawberry tangerine")

// The golden encodings below pin hashing, probing, sizing and layout: a
// change to any of them breaks every filter already saved, and this test.
var codecCases = []codecCase{
	{
		name: "bloom",
		// "BKVF" v1 kind=1, L=24 | m=64, k=3, reserved | bits | crc
		golden: "424b564601010000" + "1800000000000000" +
			"4000000000000000" + "0300000000000000" +
			"5040500000201820" + "40173e6d",
		build: func(t testing.TB) codec {
			b := must(NewBloomWithShape(64, 3))
			for _, k := range goldenKeys {
				b.Add([]byte(k))
			}
			return b
		},
		empty: func() codec { return new(Bloom) },
	},
	{
		name: "counting",
		// L=56 | m=64 counters, k=15, reserved, count=3 | 8 counter words | crc
		golden: "424b564601020000" + "3800000000000000" +
			"4000000000000000" + "0f00000000000000" + "0300000000000000" +
			"0011010110100011" + "0000243200110100" + "1100100101102000" + "1011121302012000" +
			"bccc85f1",
		build: func(t testing.TB) codec {
			c := must(NewCounting(3, 0.1))
			for _, k := range goldenKeys {
				c.Add([]byte(k))
			}
			return c
		},
		empty: func() codec { return new(Counting) },
	},
	{
		name: "cuckoo",
		// L=48 | 5 buckets, f=7, reserved, count=3 | 3 slot words | crc
		golden: "424b564601030000" + "3000000000000000" +
			"0500000000000000" + "0700000000000000" + "0300000000000000" +
			"000000f001000000" + "000000000000e202" + "0000000000000000" +
			"d9ea17fd",
		build: func(t testing.TB) codec {
			c := must(NewCuckoo(3, 0.1))
			for _, k := range goldenKeys {
				if err := c.Add([]byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			return c
		},
		empty: func() codec { return new(Cuckoo) },
	},
	{
		// Kind 5: buckets of 2 slots, expansion 2, grown to a second table.
		// L=88 | b=2, f=6, expansion 2, 2 tables |
		// table 0: 8 buckets, count 16, 2 slot words |
		// table 1: 16 buckets, count 2, 3 slot words | crc
		name: "cuckoo",
		golden: "424b564601050000" + "5800000000000000" +
			"0200000006000000" + "0200000002000000" +
			"0800000000000000" + "1000000000000000" + "0198ce5f32802c1f" + "9662506400000000" +
			"1000000000000000" + "0200000000000000" + "0000000000000000" + "003b000037000000" + "0000000000000000" +
			"7658fad6",
		build: func(t testing.TB) codec {
			c := must(NewCuckoo(3, 0.1, WithBucketSize(2), WithExpansion(2)))
			for _, k := range append(goldenKeys, grownKeys...) {
				if err := c.Add([]byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			if c.Tables() != 2 {
				t.Fatalf("the golden cuckoo did not grow: %v", c)
			}
			return c
		},
		empty: func() codec { return new(Cuckoo) },
	},
	{
		name: "scalable",
		// L=120 | fpp=0.1, growth=2, tightening=0.5, initial=2, 2 layers |
		// layer 0: capacity 2, count 2, m=64, k=22, bits |
		// layer 1: capacity 4, count 3, m=64, k=11, bits | crc
		golden: "424b564601040000" + "7800000000000000" +
			"9a9999999999b93f" + "0000000000000040" + "000000000000e03f" + "0200000000000000" + "0200000000000000" +
			"0200000000000000" + "0200000000000000" + "4000000000000000" + "1600000000000000" + "18a3f08f6228fe33" +
			"0400000000000000" + "0300000000000000" + "4000000000000000" + "0b00000000000000" + "d5e89cc25529632c" +
			"efe7eefe",
		build: func(t testing.TB) codec {
			s := must(NewScalable(2, 0.1))
			for _, k := range append(goldenKeys, "date", "elderberry") {
				s.Add([]byte(k))
			}
			return s
		},
		empty: func() codec { return new(Scalable) },
	},
}

func mustMarshal(t testing.TB, c codec) []byte {
	t.Helper()
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestGoldenEncodings(t *testing.T) {
	for _, c := range codecCases {
		got := hex.EncodeToString(mustMarshal(t, c.build(t)))
		if got != c.golden {
			t.Errorf("%s: golden encoding changed:\n got %s\nwant %s", c.name, got, c.golden)
		}
		// The golden bytes decode, re-encode identically and still hold the keys.
		data, _ := hex.DecodeString(c.golden)
		f := c.empty()
		if err := f.UnmarshalBinary(data); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(mustMarshal(t, f), data) {
			t.Errorf("%s: golden bytes do not re-encode to themselves", c.name)
		}
		for _, k := range goldenKeys {
			if !f.(interface{ MayContain([]byte) bool }).MayContain([]byte(k)) {
				t.Errorf("%s: decoded golden filter lost %q", c.name, k)
			}
		}
	}
}

func TestStreamRoundTrip(t *testing.T) {
	for _, c := range codecCases {
		f := c.build(t)
		want := mustMarshal(t, f)
		var buf bytes.Buffer
		n, err := f.WriteTo(&buf)
		if err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("%s: WriteTo wrote %d bytes (err %v), differing from MarshalBinary's %d", c.name, n, err, len(want))
		}
		// Two encodings back to back: ReadFrom consumes exactly one.
		buf.Write(want)
		for i := 0; i < 2; i++ {
			g := c.empty()
			n, err := g.ReadFrom(&buf)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("%s: ReadFrom #%d: n=%d err=%v", c.name, i, n, err)
			}
			if !bytes.Equal(mustMarshal(t, g), want) {
				t.Fatalf("%s: ReadFrom #%d decoded a different filter", c.name, i)
			}
		}
		if buf.Len() != 0 {
			t.Fatalf("%s: %d bytes left", c.name, buf.Len())
		}
	}
}

// TestDamageRejected flips, truncates and extends every encoding and checks
// each result is rejected as corruption, both from a slice and a stream,
// and that a failed decode leaves the receiver as it was.
func TestDamageRejected(t *testing.T) {
	for _, c := range codecCases {
		good := mustMarshal(t, c.build(t))
		var damaged [][]byte
		for i := range good {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				d := bytes.Clone(good)
				d[i] ^= x
				damaged = append(damaged, d)
			}
		}
		for n := 0; n < len(good); n++ {
			damaged = append(damaged, good[:n])
		}
		damaged = append(damaged, append(bytes.Clone(good), 0))
		for i, d := range damaged {
			recv := c.build(t)
			before := mustMarshal(t, recv)
			wantCorruption(t, c.name+" UnmarshalBinary", recv.UnmarshalBinary(d))
			if !bytes.Equal(mustMarshal(t, recv), before) {
				t.Fatalf("%s: damaged input %d changed the receiver", c.name, i)
			}
			if len(d) <= len(good) { // a stream may legitimately go on past the encoding
				_, err := c.empty().ReadFrom(bytes.NewReader(d))
				wantCorruption(t, c.name+" ReadFrom", err)
			}
		}
	}
}

func TestWrongKindRejected(t *testing.T) {
	for _, from := range codecCases {
		data := mustMarshal(t, from.build(t))
		for _, into := range codecCases {
			if into.name == from.name {
				continue
			}
			err := into.empty().UnmarshalBinary(data)
			wantCorruption(t, from.name+" into "+into.name, err)
			if !strings.Contains(err.Error(), "holds a "+from.name+" filter") {
				t.Errorf("%s into %s: error %q does not say what the encoding holds", from.name, into.name, err)
			}
		}
	}
}

// reseal rewrites the body length and checksum after a test edits the
// body, so the edit reaches the body's own validation.
func reseal(data []byte) []byte {
	binary.LittleEndian.PutUint64(data[8:], uint64(len(data)-headerLen-checksumLen))
	end := len(data) - checksumLen
	binary.LittleEndian.PutUint32(data[end:], crc32.Checksum(data[:end], castagnoli))
	return data
}

func putU32(off int, v uint32) func([]byte) []byte {
	return func(d []byte) []byte { binary.LittleEndian.PutUint32(d[off:], v); return d }
}

func putU64(off int, v uint64) func([]byte) []byte {
	return func(d []byte) []byte { binary.LittleEndian.PutUint64(d[off:], v); return d }
}

func dropBytes(off, n int) func([]byte) []byte {
	return func(d []byte) []byte { return append(d[:off:off], d[off+n:]...) }
}

// TestInvalidFieldsRejected edits fields behind a valid checksum: the body's
// own checks must catch them, naming the offset of the bad field.
func TestInvalidFieldsRejected(t *testing.T) {
	const b = headerLen // body offset
	edits := map[string]map[string]func([]byte) []byte{
		"bloom": {
			"version 2 at offset 4":         func(d []byte) []byte { d[4] = 2; return d },
			"reserved header at offset 6":   func(d []byte) []byte { d[6] = 1; return d },
			"m=0 at offset 16":              putU64(b, 0),
			"m=65 at offset 16":             putU64(b, 65),
			"m=128 (array short)":           putU64(b, 128),
			"k=0 at offset 24":              putU32(b+8, 0),
			"k=31 at offset 24":             putU32(b+8, 31),
			"reserved body at offset 28":    putU32(b+12, 1),
			"array missing":                 dropBytes(b+16, 8),
			"trailing byte":                 func(d []byte) []byte { return append(d[:len(d)-4], 0, 0, 0, 0, 0) },
			"body length wrong (no reseal)": nil,
		},
		"counting": {
			"k=99 at offset 24":         putU32(b+8, 99),
			"count 2^63 at offset 32":   putU64(b+16, 1<<63),
			"m=64*7 (counters short)":   putU64(b, 64*7),
			"counters cut at offset 40": dropBytes(b+24, 8),
		},
		"cuckoo": {
			"buckets=0 at offset 16":       putU64(b, 0),
			"f=3 at offset 24":             putU32(b+8, 3),
			"f=33 at offset 24":            putU32(b+8, 33),
			"count=4 at offset 32":         putU64(b+16, 4),
			"padding bit set":              func(d []byte) []byte { d[len(d)-5] |= 0x80; return d },
			"buckets=7 (slots short)":      putU64(b, 7),
			"buckets 2^62 (overflowing)":   putU64(b, 1<<62),
			"f=32 (slots short)":           putU32(b+8, 32),
			"reserved at offset 28":        putU32(b+12, 7),
			"slot words cut at offset 40":  dropBytes(b+24, 8),
			"count of filled slots is one": putU64(b+16, 1),
		},
		"scalable": {
			"fpp=0 at offset 16":              putU64(b, 0),
			"fpp NaN at offset 16":            putU64(b, math.Float64bits(math.NaN())),
			"growth 0.5 at offset 24":         putU64(b+8, math.Float64bits(0.5)),
			"tightening 1 at offset 32":       putU64(b+16, math.Float64bits(1)),
			"initial 0 at offset 40":          putU64(b+24, 0),
			"layers 0 at offset 48":           putU32(b+32, 0),
			"layers 3 (body short)":           putU32(b+32, 3),
			"layer 0 count > capacity":        putU64(b+40+8, 3),
			"layer 0 capacity 0":              putU64(b+40, 0),
			"initial 100 (layers disagree)":   putU64(b+24, 100),
			"layer 1 capacity 9 at offset 96": putU64(b+40+40, 9),
			"layer 1 k=14 at offset 96":       putU32(b+40+40+16+8, 14),
			"layer 1 bloom k=0":               putU32(b+40+40+16+8, 0),
			"layers 1 (bytes left)":           putU32(b+32, 1),
			"initial huge at offset 40":       putU64(b+24, 1<<46),
			"reserved at offset 52":           putU32(b+36, 1),
			"layer 0 array cut at offset 112": dropBytes(b+40+32, 8),
		},
	}
	for _, c := range codecCases {
		if c.golden[10:12] == "05" {
			continue // kind 5: TestCuckooGrownFieldsRejected
		}
		for name, edit := range edits[c.name] {
			d := mustMarshal(t, c.build(t))
			if edit == nil {
				binary.LittleEndian.PutUint64(d[8:], 1)
			} else {
				d = reseal(edit(d))
			}
			err := c.empty().UnmarshalBinary(d)
			wantCorruption(t, c.name+": "+name, err)
			if i := strings.Index(name, "at offset "); i >= 0 && !strings.Contains(err.Error(), name[i:]) {
				t.Errorf("%s: %s: error %q names another offset", c.name, name, err)
			}
			t.Logf("%s: %s: %v", c.name, name, err)
		}
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after < len(p) {
		n := w.after
		w.after = 0
		return n, errDisk
	}
	w.after -= len(p)
	return len(p), nil
}

var errDisk = errors.New("disk on fire")

func TestIOErrorsPassThrough(t *testing.T) {
	for _, c := range codecCases {
		_, err := c.empty().ReadFrom(failingReader{errDisk})
		if !errors.Is(err, errDisk) || errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s ReadFrom: err=%v, want the reader's error, not corruption", c.name, err)
		}
		good := mustMarshal(t, c.build(t))
		for _, after := range []int{0, 5, len(good) - 4, len(good) - 1} {
			n, err := c.build(t).WriteTo(&failingWriter{after: after})
			if !errors.Is(err, errDisk) || n != int64(after) {
				t.Errorf("%s WriteTo failing after %d bytes: n=%d err=%v", c.name, after, n, err)
			}
		}
	}
}

// TestDamagedLengthAllocatesLittle gives ReadFrom a header claiming a huge
// body followed by a short stream: it must fail without allocating what the
// header claims.
func TestDamagedLengthAllocatesLittle(t *testing.T) {
	hdr := mustMarshal(t, codecCases[0].build(t))[:headerLen]
	binary.LittleEndian.PutUint64(hdr[8:], 1<<40)
	stream := append(hdr, make([]byte, 1000)...)
	// What matters is the bytes a claimed 1 TiB length makes the decoder
	// allocate, not the number of allocations (which the race detector
	// inflates).
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := new(Bloom).ReadFrom(bytes.NewReader(stream))
	runtime.ReadMemStats(&after)
	wantCorruption(t, "huge length", err)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("decoding a damaged length allocated %d bytes", grew)
	}
	binary.LittleEndian.PutUint64(hdr[8:], 1<<60)
	_, err = new(Bloom).ReadFrom(bytes.NewReader(hdr))
	wantCorruption(t, "length beyond 2^50", err)
}
