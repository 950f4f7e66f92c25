package sstable

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/rangedel"
)

// buildRangeDelTable writes es and the tombstones ts to an in-memory table.
func buildRangeDelTable(t *testing.T, es []refEntry, ts []rangedel.Tombstone, o WriterOptions) ([]byte, WriterMeta) {
	t.Helper()
	f := &memFile{}
	w := NewWriter(f, o)
	for _, e := range es {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	w.SetRangeDels(rangedel.Fragment(ts).Spans())
	m, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return f.data, m
}

func TestRangeDelBlockRoundTrip(t *testing.T) {
	es := []refEntry{
		{kv.MakeInternalKey([]byte("c"), 3, kv.KindSet), []byte("x")},
		{kv.MakeInternalKey([]byte("m"), 4, kv.KindSet), []byte("y")},
	}
	ts := []rangedel.Tombstone{
		{Start: []byte("a"), End: []byte("e"), Seq: 5},
		{Start: []byte("d"), End: []byte("q\x00"), Seq: 9},
	}
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, meta := buildRangeDelTable(t, es, ts, WriterOptions{Compression: c, BloomBitsPerKey: 10})
		r := mustOpenBytes(t, data, ReaderOptions{})
		p := r.Properties()
		if p.FormatVersion != FormatVersionRangeDels || r.footer.version != FormatVersionRangeDels {
			t.Fatalf("format version %d / footer %d, want %d", p.FormatVersion, r.footer.version, FormatVersionRangeDels)
		}
		// Fragments: [a,d){5} [d,e){9,5} [e,q\x00){9}: four pairs.
		if p.NumRangeDels != 4 || r.RangeDels().Len() != 4 {
			t.Fatalf("NumRangeDels %d, list %d, want 4", p.NumRangeDels, r.RangeDels().Len())
		}
		if got := r.RangeDels().MaxSeq([]byte("d5"), 100); got != 9 {
			t.Fatalf("MaxSeq(d5) = %d, want 9", got)
		}
		// Point properties are unchanged; the bounds cover the tombstones:
		// "a"#5 below "c", and "q" (the inclusive end of q\x00) above "m".
		if !bytes.Equal(kv.UserKey(p.SmallestKey), []byte("c")) || !bytes.Equal(kv.UserKey(p.LargestKey), []byte("m")) {
			t.Fatalf("point range [%s, %s]", formatKey(p.SmallestKey), formatKey(p.LargestKey))
		}
		if string(kv.UserKey(meta.Smallest)) != "a" || string(kv.UserKey(meta.Largest)) != "q" {
			t.Fatalf("bounds [%s, %s], want a..q", formatKey(meta.Smallest), formatKey(meta.Largest))
		}
		if meta.SmallestSeq != 3 || meta.LargestSeq != 9 {
			t.Fatalf("seqs %d-%d, want 3-9", meta.SmallestSeq, meta.LargestSeq)
		}
		if err := r.CheckIdentity(Identity{FileNum: 7, Smallest: meta.Smallest, Largest: meta.Largest,
			SmallestSeq: meta.SmallestSeq, LargestSeq: meta.LargestSeq}); err != nil {
			t.Fatal(err)
		}
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.String(), "range deletions:    4") {
			t.Fatalf("properties do not show the range deletions:\n%s", p)
		}
	}
	// A table without tombstones stays format version 1.
	data, _ := buildTable(t, es, WriterOptions{})
	if r := mustOpenBytes(t, data, ReaderOptions{}); r.Properties().FormatVersion != FormatVersion || r.RangeDels() != nil {
		t.Fatalf("plain table: version %d, range dels %v", r.Properties().FormatVersion, r.RangeDels())
	}
}

// A table of range tombstones alone (a flush of DeleteRanges only).
func TestRangeDelOnlyTable(t *testing.T) {
	data, meta := buildRangeDelTable(t, nil, []rangedel.Tombstone{{Start: []byte("b"), End: []byte("f"), Seq: 2}}, WriterOptions{BloomBitsPerKey: 10})
	r := mustOpenBytes(t, data, ReaderOptions{})
	if string(kv.UserKey(meta.Smallest)) != "b" || string(kv.UserKey(meta.Largest)) != "f" || meta.SmallestSeq != 2 || meta.LargestSeq != 2 {
		t.Fatalf("bounds [%s, %s] seqs %d-%d", formatKey(meta.Smallest), formatKey(meta.Largest), meta.SmallestSeq, meta.LargestSeq)
	}
	if _, _, found, err := r.Get([]byte("c"), 10, true, nil); found || err != nil {
		t.Fatalf("Get: found %v, err %v", found, err)
	}
	if r.RangeDels().MaxSeq([]byte("c"), 10) != 2 || r.RangeDels().MaxSeq([]byte("c"), 1) != 0 {
		t.Fatal("tombstone not found, or found at a sequence that cannot see it")
	}
}

// Damage anywhere in the range-deletion block (contents or trailer) is
// ErrCorruption naming the file and the block, never a panic.
func TestRangeDelBlockCorruption(t *testing.T) {
	es := []refEntry{{kv.MakeInternalKey([]byte("c"), 3, kv.KindSet), []byte("x")}}
	var ts []rangedel.Tombstone
	for i := 0; i < 20; i++ {
		ts = append(ts, rangedel.Tombstone{Start: []byte{'a', byte('a' + i)}, End: []byte{'b', byte('a' + i)}, Seq: uint64(10 + i)})
	}
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, _ := buildRangeDelTable(t, es, ts, WriterOptions{Compression: c})
		p := mustOpenBytes(t, data, ReaderOptions{}).Properties()
		start, end := p.RangeDelOffset, p.RangeDelOffset+p.RangeDelSize+blockTrailerLen
		for off := start; off < end; off++ {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				bad := bytes.Clone(data)
				bad[off] ^= flip
				_, err := openBytes(bad, ReaderOptions{})
				if err == nil {
					t.Fatalf("%v: byte %d ^ %#x: Open succeeded", c, off, flip)
				}
				if !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "000007.sst") ||
					!strings.Contains(err.Error(), "range-deletion block") {
					t.Fatalf("%v: byte %d ^ %#x: %v, want ErrCorruption naming the file and block", c, off, flip, err)
				}
			}
		}
	}
}
