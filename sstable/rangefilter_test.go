package sstable

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// goldenRangeHex is the worked example of doc.go (goldenEntries) written
// with a range filter of 10 bits per key: the same data and filter blocks,
// then the range-filter block, and properties 27 and 28.
var goldenRangeHex = []string{
	// data block at 0, filter block at 39: as in goldenHex
	"000a016162010200000000000078", "010900630001000000000000", "00000000", "01000000",
	"00" + "59202276",
	"ca010202a4102040", "02000000", "07", "01",
	"00" + "ef457184",
	// range-filter block at 58: a filter.RangeFilter encoding ("BKVF", kind 6)
	"424b5646" + "01" + "06" + "0000" + "3000000000000000", // "BKVF", v1, range, body 48 bytes
	"0200000000000000" + "0002000000000000",                // n = 2 keys, r = 512
	"dba4fac82b037e30" + "08" + "08" + "0000" + "00000000", // seed, logL, lowBits, prefix length 0
	"2fef000000000000", // low parts 0x2f, 0xef
	"0300000000000000", // high parts: bits 0 and 1 (both hashes below 256)
	"08ec903a",         // CRC-32C of the encoding
	"00" + "35767245",  // trailer: raw, crc32c
	// index block at 131, properties block at 158 (tags 1-20, then 27 and 28)
	"00090262ffffffffffffffff0022", "00000000", "01000000",
	"00" + "5b606dce",
	"010101", "020102", "030101", "040101", "050114", "060101", "070127", "08011b", "090113",
	"0a0a" + "6162" + "0102000000000000", "0b0a" + "6163" + "0001000000000000",
	"0c0101", "0d0102", "0e0101", "0f0114", "100102", "1100", "120100", "13028020", "140110",
	"1b02" + "3a44",             // RangeFilterHandle: offset 58, size 68
	"1c08" + "0000000000002440", // RangeFilterBitsPerKey: 10.0
	"00" + "f894ee84",
	// footer at 255
	"8300000000000000" + "1600000000000000",    // index handle
	"2700000000000000" + "0e00000000000000",    // filter handle
	"9e00000000000000" + "5c00000000000000",    // properties handle
	"01000000", "860388be", "424c4f4f4d535354", // version 1, crc32c, "BLOOMSST"
}

func TestGoldenRangeFilterTable(t *testing.T) {
	o := goldenOptions
	o.RangeFilterBitsPerKey = 10
	data, _ := buildTable(t, goldenEntries(), o)
	plain, _ := buildTable(t, goldenEntries(), goldenOptions)
	if !bytes.Equal(data[:58], plain[:58]) {
		t.Fatal("data and filter blocks differ from the table without a range filter")
	}
	got := hex.EncodeToString(data)
	if want := strings.Join(goldenRangeHex, ""); got != want {
		t.Fatalf("table bytes changed:\n got %s\nwant %s", got, want)
	}
	r := mustOpenBytes(t, data, ReaderOptions{})
	p := r.Properties()
	if p.RangeFilterOffset != 58 || p.RangeFilterBitsPerKey != 10 || !r.HasRangeFilter() {
		t.Fatalf("properties: %+v", p)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	lay, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if lay[2].Kind != RangeFilterBlock || lay[2].Offset != 58 {
		t.Fatalf("layout: %+v", lay)
	}
	// The table without a range filter reads as before: every range may match.
	if may, filtered := mustOpenBytes(t, plain, ReaderOptions{}).RangeMayMatch([]byte("x"), []byte("y"), nil); !may || filtered {
		t.Fatal("a table without a range filter filtered")
	}
}

// TestRangeMayMatchNoFalseNegatives checks RangeMayMatch against the
// entries (every kind, every version) on random tables and ranges.
func TestRangeMayMatchNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	var negatives int
	for round := 0; round < 20; round++ {
		es := randomEntries(rng, 300, 3)
		data, _ := buildTable(t, es, WriterOptions{RangeFilterBitsPerKey: 2 + rng.Float64()*20})
		r := mustOpenBytes(t, data, ReaderOptions{})
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
		ukeys := make([][]byte, 0, len(es))
		for _, e := range es {
			ukeys = append(ukeys, kv.UserKey(e.key))
		}
		for i := 0; i < 2000; i++ {
			var lo, hi []byte
			if rng.IntN(10) > 0 {
				lo = randomSearchKey(rng, es)
			}
			if rng.IntN(10) > 0 {
				hi = randomSearchKey(rng, es)
			}
			if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			holds := slices.ContainsFunc(ukeys, func(k []byte) bool {
				return (lo == nil || bytes.Compare(k, lo) >= 0) && (hi == nil || bytes.Compare(k, hi) < 0)
			})
			may, filtered := r.RangeMayMatch(lo, hi, nil)
			if holds && !may {
				t.Fatalf("false negative for [%q, %q)", lo, hi)
			}
			if !filtered {
				t.Fatal("unfiltered")
			}
			if !may {
				negatives++
			}
		}
	}
	if negatives == 0 {
		t.Fatal("the range filter never said no")
	}
}

func TestRangeFilterBlockDamage(t *testing.T) {
	o := goldenOptions
	o.RangeFilterBitsPerKey = 10
	data, _ := buildTable(t, goldenEntries(), o)
	for off := 58; off < 58+40; off++ {
		bad := slices.Clone(data)
		bad[off] ^= 1
		if _, err := openBytes(bad, ReaderOptions{}); !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "range-filter block") {
			t.Fatalf("byte %d damaged: %v", off, err)
		}
	}
	if _, err := buildTableErr(WriterOptions{RangeFilterBitsPerKey: 1}); err == nil {
		t.Fatal("1 bit per key accepted")
	}
}

func buildTableErr(o WriterOptions) (WriterMeta, error) {
	w := NewWriter(&memFile{}, o)
	if err := w.Add(kv.MakeInternalKey([]byte("a"), 1, kv.KindSet), nil); err != nil {
		w.Abort()
		return WriterMeta{}, err
	}
	return w.Finish()
}
