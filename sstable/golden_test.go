package sstable

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// goldenEntries and goldenOptions are the worked example in doc.go. The
// example is written raw (NoCompression, explicitly, since the zero value
// means snappy) so that every byte of it stays readable; its properties
// record block type 0 for that.
func goldenEntries() []refEntry {
	return []refEntry{
		{kv.MakeInternalKey([]byte("ab"), 2, kv.KindSet), []byte("x")},
		{kv.MakeInternalKey([]byte("ac"), 1, kv.KindDelete), nil},
	}
}

var goldenOptions = WriterOptions{Compression: NoCompression, BloomBitsPerKey: 10}

// goldenHex is the whole table of the worked example, region by region
// (block bytes, then the 5-byte trailer). If this test fails, the on-disk
// format changed: that is never allowed without a new FormatVersion.
var goldenHex = []string{
	// data block at 0, 34 bytes
	"000a016162010200000000000078", "010900630001000000000000", "00000000", "01000000",
	"00" + "59202276",
	// filter block at 39, 14 bytes
	"ca010202a4102040", "02000000", "07", "01",
	"00" + "ef457184",
	// index block at 58, 22 bytes
	"00090262ffffffffffffffff0022", "00000000", "01000000",
	"00" + "5b606dce",
	// properties block at 85, 78 bytes
	"010101", "020102", "030101", "040101", "050114", "060101", "070127", "08011b", "090113",
	"0a0a" + "6162" + "0102000000000000", "0b0a" + "6163" + "0001000000000000",
	"0c0101", "0d0102", "0e0101", "0f0114", "100102", "1100", "120100", "13028020", "140110",
	"00" + "08b9afd8",
	// footer at 168, 64 bytes
	"3a00000000000000" + "1600000000000000",    // index handle
	"2700000000000000" + "0e00000000000000",    // filter handle
	"5500000000000000" + "4e00000000000000",    // properties handle
	"01000000", "0f18f13f", "424c4f4f4d535354", // version, crc32c, "BLOOMSST"
}

func TestGoldenTable(t *testing.T) {
	want, err := hex.DecodeString(strings.Join(goldenHex, ""))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := buildTable(t, goldenEntries(), goldenOptions)
	if !bytes.Equal(data, want) {
		t.Fatalf("table bytes changed:\n got %x\nwant %x", data, want)
	}
	// And the pinned bytes read back as the example's entries.
	r := mustOpenBytes(t, want, ReaderOptions{})
	it := r.NewIter(true)
	es := goldenEntries()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		checkIterAt(t, "golden", it, true, es, i)
		i++
	}
	if i != len(es) {
		t.Fatalf("golden table holds %d entries", i)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	p := r.Properties()
	if p.NumEntries != 2 || p.NumDeletions != 1 || p.DataSize != 39 || p.IndexSize != 27 || p.FilterSize != 19 ||
		p.BloomBitsPerKey != 10 || p.FilterKeyCount != 2 || p.BlockSize != 4096 || p.RestartInterval != 16 {
		t.Fatalf("golden properties:\n%s", p)
	}
}
