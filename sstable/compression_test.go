package sstable

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestBlockTypes pins the on-disk codes: tables written before
// Compression's zero value became snappy say 0 for raw and 1 for snappy,
// in their trailers and in their properties, and must read the same; zstd
// took the next code, 2.
func TestBlockTypes(t *testing.T) {
	var zero Compression
	if zero != SnappyCompression {
		t.Fatalf("zero Compression is %v, want snappy", zero)
	}
	for _, tc := range []struct {
		c    Compression
		typ  byte
		name string
	}{{NoCompression, 0, "none"}, {SnappyCompression, 1, "snappy"}, {ZstdCompression, 2, "zstd"}} {
		if typ, ok := blockType(tc.c); !ok || typ != tc.typ {
			t.Errorf("blockType(%v) = %d, %v; want %d", tc.c, typ, ok, tc.typ)
		}
		if c, ok := compressionFromBlockType(tc.typ); !ok || c != tc.c {
			t.Errorf("compressionFromBlockType(%d) = %v, %v; want %v", tc.typ, c, ok, tc.c)
		}
		if tc.c.String() != tc.name || !tc.c.Valid() {
			t.Errorf("%v: name %q, valid %v", tc.c, tc.c.String(), tc.c.Valid())
		}
	}
	for _, c := range []Compression{-1, 3, 7} {
		if _, ok := blockType(c); ok || c.Valid() {
			t.Errorf("blockType accepts %v", c)
		}
	}
	if s := Compression(7).String(); s != "Compression(7)" {
		t.Errorf("Compression(7).String() = %q", s)
	}
	for typ := 3; typ < 256; typ++ {
		if c, ok := compressionFromBlockType(byte(typ)); ok {
			t.Errorf("block type %d read as %v", typ, c)
		}
	}
}

// TestZeroWriterOptionsCompress: a Writer left at the zero value writes
// snappy blocks and records that as block type 1.
func TestZeroWriterOptionsCompress(t *testing.T) {
	es := seqEntries(2000)
	data, m := buildTable(t, es, WriterOptions{})
	if m.Props.Compression != SnappyCompression {
		t.Fatalf("properties say %v", m.Props.Compression)
	}
	if !bytes.Contains(m.Props.encode(), []byte{byte(tagCompression), 1, blockTypeSnappy}) {
		t.Fatal("properties do not record block type 1")
	}
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	blocks, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	snappy := 0
	for _, b := range blocks {
		if b.Kind == DataBlock && b.Compression == SnappyCompression {
			snappy++
		}
	}
	if snappy == 0 {
		t.Fatal("no data block of a compressible table was compressed")
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownCompressionIsCorruption: a block type this version does not
// know, in the properties or a trailer, is reported where it is.
func TestUnknownCompressionIsCorruption(t *testing.T) {
	p := Properties{FormatVersion: 1, Compression: NoCompression}
	enc := p.encode()
	// FilterKeyName (tag 17) is empty, Compression (tag 18) follows it.
	at := bytes.Index(enc, []byte{byte(tagFilterKeyName), 0, byte(tagCompression), 1, blockTypeRaw})
	if at < 0 {
		t.Fatalf("no Compression record in %x", enc)
	}
	enc[at+4] = 9
	if _, err := decodeProperties(enc, testLoc); !errors.Is(err, kv.ErrCorruption) ||
		!strings.Contains(err.Error(), "unknown compression type 9") {
		t.Fatalf("properties with block type 9: %v", err)
	}

	// Layout reads trailers without checking them.
	data, _ := buildTable(t, goldenEntries(), goldenOptions)
	data = bytes.Clone(data)
	data[34] = 9 // the data block's trailer (see doc.go)
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	if _, err := r.Layout(); !errors.Is(err, kv.ErrCorruption) ||
		!strings.Contains(err.Error(), "unknown compression type 9") || !strings.Contains(err.Error(), "offset 34") {
		t.Fatalf("Layout with block type 9: %v", err)
	}
}
