package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// appendRawBlock appends an uncompressed block with a valid trailer.
func appendRawBlock(dst, raw []byte) ([]byte, blockHandle) {
	h := blockHandle{offset: uint64(len(dst)), size: uint64(len(raw))}
	dst = append(dst, raw...)
	dst = append(dst, blockTypeRaw)
	return binary.LittleEndian.AppendUint32(dst, blockChecksum(raw, blockTypeRaw)), h
}

// rewriteTail re-encodes a table's index and properties blocks and footer
// with valid checksums after letting the test tamper with them, so that the
// checks behind the checksums are what catches the lie.
func rewriteTail(t *testing.T, data []byte, index func([]byte) []byte, props func(*Properties)) []byte {
	t.Helper()
	r := mustOpenBytes(t, data, ReaderOptions{})
	out := append([]byte(nil), data[:r.footer.index.offset]...)
	ft := r.footer
	idx := append([]byte(nil), r.index.data...)
	if index != nil {
		idx = index(idx)
	}
	out, ft.index = appendRawBlock(out, idx)
	p := r.props
	p.IndexSize = ft.index.size + blockTrailerLen
	if props != nil {
		props(&p)
	}
	out, ft.props = appendRawBlock(out, p.encode())
	return append(out, ft.encode()...)
}

func TestCheckCatchesInconsistentProperties(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(31, 32)), 300, 3)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 256, Compression: SnappyCompression, BloomBitsPerKey: 10})
	if err := mustOpenBytes(t, rewriteTail(t, data, nil, nil), ReaderOptions{}).Check(); err != nil {
		t.Fatalf("untampered rewrite: %v", err)
	}
	checkFails := map[string]func(p *Properties){
		"NumEntries":     func(p *Properties) { p.NumEntries++ },
		"NumDeletions":   func(p *Properties) { p.NumDeletions-- },
		"RawKeyBytes":    func(p *Properties) { p.RawKeyBytes++ },
		"RawValueBytes":  func(p *Properties) { p.RawValueBytes-- },
		"key range":      func(p *Properties) { p.LargestKey = kv.MakeInternalKey([]byte("zzz"), 1, kv.KindSet) },
		"SmallestSeq":    func(p *Properties) { p.SmallestSeq++ },
		"LargestSeq":     func(p *Properties) { p.LargestSeq++ },
		"filter variant": func(p *Properties) { p.FilterVariant = 2 },
		"filter keys":    func(p *Properties) { p.FilterKeyCount++ },
		"bits per key":   func(p *Properties) { p.BloomBitsPerKey = 0 },
		"DataSize":       func(p *Properties) { p.DataSize -= 10 },
	}
	for name, mutate := range checkFails {
		r, err := openBytes(rewriteTail(t, data, nil, mutate), ReaderOptions{})
		if err == nil {
			err = r.Check()
		}
		if !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "block at offset") {
			t.Errorf("%s: %v", name, err)
		}
	}
	openFails := map[string]func(p *Properties){
		"IndexSize":     func(p *Properties) { p.IndexSize++ },
		"FilterSize":    func(p *Properties) { p.FilterSize = 0 },
		"NumDataBlocks": func(p *Properties) { p.NumDataBlocks++ },
		"DataSize":      func(p *Properties) { p.DataSize = 1 << 40 },
		"FormatVersion": func(p *Properties) { p.FormatVersion = 9 },
	}
	for name, mutate := range openFails {
		if _, err := openBytes(rewriteTail(t, data, nil, mutate), ReaderOptions{}); !errors.Is(err, kv.ErrCorruption) {
			t.Errorf("%s: Open = %v", name, err)
		}
	}
}

// TestCheckCatchesBadIndex replaces each index key with its block's first
// key (which sorts before the block's last key): lookups could miss keys,
// and Check must say so.
func TestCheckCatchesBadIndex(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(33, 34)), 300, 1)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 256})
	r := mustOpenBytes(t, data, ReaderOptions{})
	var firstKeys [][]byte
	var handles [][]byte
	var it blockIter
	it.init(r.index)
	for ok := it.First(); ok; ok = it.Next() {
		h, _ := r.dataHandle(&it)
		b, err := r.dataBlock(h, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var bi blockIter
		bi.init(b)
		bi.First()
		firstKeys = append(firstKeys, append([]byte(nil), bi.Key()...))
		handles = append(handles, append([]byte(nil), it.Value()...))
	}
	bad := rewriteTail(t, data, func([]byte) []byte {
		bb := newBlockBuilder(1)
		for i := range firstKeys {
			bb.add(firstKeys[i], handles[i])
		}
		return bb.finish()
	}, nil)
	err := mustOpenBytes(t, bad, ReaderOptions{}).Check()
	if !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "index block") {
		t.Fatalf("Check = %v", err)
	}
}

func TestPropertiesRoundTrip(t *testing.T) {
	p := Properties{
		FormatVersion: 1, NumEntries: 10, NumDeletions: 2, NumDataBlocks: 3, RawKeyBytes: 100, RawValueBytes: 1 << 40,
		DataSize: 5, IndexSize: 6, FilterSize: 7, SmallestKey: []byte("a\x00\x00\x00\x00\x00\x00\x00\x01"),
		LargestKey: []byte("b\x00\x00\x00\x00\x00\x00\x00\x01"), SmallestSeq: 1, LargestSeq: kv.MaxSeq,
		FilterVariant: 1, BloomBitsPerKey: -3, FilterKeyCount: 9, FilterKeyName: "row", Compression: SnappyCompression,
		BlockSize: 4096, RestartInterval: 16, FileNum: 77, DBID: []byte("0123abcd"),
	}
	got, err := decodeProperties(p.encode(), testLoc)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != p.String() {
		t.Fatalf("round trip:\n%s\nwant\n%s", got.String(), p.String())
	}
	// An unknown later tag is skipped; a repeated or missing tag is not.
	withExtra := binary.AppendUvarint(p.encode(), 99)
	withExtra = append(binary.AppendUvarint(withExtra, 3), "xyz"...)
	if _, err := decodeProperties(withExtra, testLoc); err != nil {
		t.Fatalf("unknown tag: %v", err)
	}
	enc := p.encode()
	if _, err := decodeProperties(append(enc, enc[:3]...), testLoc); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("repeated tag: %v", err)
	}
	if _, err := decodeProperties(enc[:len(enc)-3], testLoc); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("cut short: %v", err)
	}
}

// FuzzDecodeProperties: arbitrary bytes never panic and errors wrap
// ErrCorruption; whatever decodes re-encodes to the same properties.
func FuzzDecodeProperties(f *testing.F) {
	es := randomEntries(rand.New(rand.NewPCG(35, 36)), 10, 1)
	_, m := buildTable(f, es, WriterOptions{BloomBitsPerKey: 10, FilterKey: rowKey, FilterKeyName: "row"})
	f.Add(m.Props.encode())
	f.Add([]byte{1, 1, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeProperties(data, testLoc)
		if err != nil {
			if !errors.Is(err, kv.ErrCorruption) {
				t.Fatal(err)
			}
			return
		}
		q, err := decodeProperties(p.encode(), testLoc)
		if err != nil || q.String() != p.String() {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

// TestPropertiesOptionalTagsGolden pins the encoding of the optional
// properties: FileNum (tag 21), DBID (22) and FilterWholeKeys (23) follow
// the required ones as tag uvarint | length uvarint | value, and are left
// out when unset.
func TestPropertiesOptionalTagsGolden(t *testing.T) {
	p := Properties{FormatVersion: 1, FilterKeyName: "row"}
	base := p.encode()
	p.FileNum, p.DBID, p.FilterWholeKeys = 7, []byte("ab"), true
	got := p.encode()
	want := append(append([]byte(nil), base...),
		0x15, 0x01, 0x07, // 21 FileNum: 7
		0x16, 0x02, 'a', 'b', // 22 DBID: "ab"
		0x17, 0x01, 0x01, // 23 FilterWholeKeys: 1
	)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding:\n got % x\nwant % x", got, want)
	}
	back, err := decodeProperties(got, testLoc)
	if err != nil || !back.FilterWholeKeys || back.FileNum != 7 || string(back.DBID) != "ab" {
		t.Fatalf("decode: %+v, %v", back, err)
	}
	bad := append(append([]byte(nil), base...), 0x17, 0x01, 0x02)
	if _, err := decodeProperties(bad, testLoc); err == nil {
		t.Fatal("FilterWholeKeys 2 accepted")
	}
}
