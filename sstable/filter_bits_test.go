package sstable

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
)

// TestFractionalFilterBits writes tables with fractional bits per key: the
// filter spends ceil(n*b) bits (rounded to words), the properties record
// b exactly and a whole approximation, and every key is found.
func TestFractionalFilterBits(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(51, 52)), 2000, 1)
	for _, c := range []struct {
		o        WriterOptions
		wantBits float64
		wantInt  int64
	}{
		{WriterOptions{FilterBitsPerKey: 9.5}, 9.5, 10},
		{WriterOptions{FilterBitsPerKey: 0.4}, 0.4, 1},
		{WriterOptions{BloomBitsPerKey: 4, FilterBitsPerKey: 6.25}, 6.25, 6}, // overrides
		{WriterOptions{BloomBitsPerKey: 7}, 7, 7},
		{WriterOptions{BloomBitsPerKey: -1, FilterBitsPerKey: 3.3, FilterVariant: filter.VariantBlocked}, 3.3, 3},
	} {
		data, m := buildTable(t, es, c.o)
		r := mustOpenBytes(t, data, ReaderOptions{})
		p := r.Properties()
		if p.BitsPerKey() != c.wantBits || p.BloomBitsPerKey != c.wantInt || m.Props.BitsPerKey() != c.wantBits {
			t.Errorf("%+v: properties say %v bits (%d whole), want %v (%d)", c.o, p.BitsPerKey(), p.BloomBitsPerKey, c.wantBits, c.wantInt)
		}
		blk, ok := r.Filter()
		if !ok {
			t.Fatalf("%+v: no filter", c.o)
		}
		n := float64(blk.NumKeys())
		want := uint64(math.Ceil(n * c.wantBits))
		if blk.Bits() < want || blk.Bits()-want >= 512 || blk.NumProbes() != filter.NumProbes(c.wantBits) {
			t.Errorf("%+v: filter %v, want about %d bits and k=%d", c.o, blk, want, filter.NumProbes(c.wantBits))
		}
		if err := r.Check(); err != nil {
			t.Errorf("%+v: Check: %v", c.o, err)
		}
	}
}

func TestFilterBitsPerKeyRejected(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(53, 54)), 10, 1)
	for _, b := range []float64{-1, math.NaN(), math.Inf(1), filter.MaxBlockBitsPerKey + 1} {
		w := NewWriter(&memFile{}, WriterOptions{FilterBitsPerKey: b})
		err := w.Add(es[0].key, es[0].value)
		if err == nil || !strings.Contains(err.Error(), "FilterBitsPerKey") {
			t.Errorf("FilterBitsPerKey %v: Add = %v", b, err)
		}
	}
}

// TestFilterBitsProperty pins the new property's encoding (tag 24, the
// float64's bits little-endian) and rejects damaged values.
func TestFilterBitsProperty(t *testing.T) {
	p := Properties{FormatVersion: 1, Compression: NoCompression, BloomBitsPerKey: 10, FilterBitsPerKey: 9.5}
	enc := p.encode()
	want := []byte{24, 8, 0, 0, 0, 0, 0, 0, 0x23, 0x40} // 9.5 = 0x4023000000000000
	if !strings.HasSuffix(string(enc), string(want)) {
		t.Fatalf("encoding ends % x, want % x", enc[len(enc)-len(want):], want)
	}
	got, err := decodeProperties(enc, testLoc)
	if err != nil || got.FilterBitsPerKey != 9.5 {
		t.Fatalf("decode: %v, %v", got.FilterBitsPerKey, err)
	}
	p.FilterBitsPerKey = 0
	if strings.Contains(string(p.encode()), "\x18\x08") {
		t.Fatal("tag 24 written for a whole setting")
	}
	base0 := enc[:len(enc)-len(want)]
	for name, val := range map[string][]byte{
		"NaN":      binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN())),
		"negative": binary.LittleEndian.AppendUint64(nil, math.Float64bits(-2)),
		"+Inf":     binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.Inf(1))),
		"short":    {1, 2, 3},
	} {
		bad := append(append(append([]byte(nil), base0...), 24, byte(len(val))), val...)
		if _, err := decodeProperties(bad, testLoc); !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "FilterBitsPerKey") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckCatchesFilterBitsMismatch: a whole approximation that disagrees
// with the exact setting is damage.
func TestCheckCatchesFilterBitsMismatch(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(55, 56)), 300, 1)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 256, FilterBitsPerKey: 9.5})
	bad := rewriteTail(t, data, nil, func(p *Properties) { p.BloomBitsPerKey = 3 })
	if err := mustOpenBytes(t, bad, ReaderOptions{}).Check(); !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "9.5") {
		t.Fatalf("Check = %v", err)
	}
}
