package sstable

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestLayoutGolden pins Layout on the worked example of doc.go, whose
// offsets and sizes the package doc lists block by block.
func TestLayoutGolden(t *testing.T) {
	data, _ := buildTable(t, goldenEntries(), goldenOptions)
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	got, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	want := []BlockInfo{
		{Kind: DataBlock, Offset: 0, Size: 34, Compression: NoCompression, IndexKey: kv.MakeInternalKey([]byte("b"), kv.MaxSeq, kv.KindSeek)},
		{Kind: FilterBlock, Offset: 39, Size: 14, Compression: NoCompression},
		{Kind: IndexBlock, Offset: 58, Size: 22, Compression: NoCompression},
		{Kind: PropertiesBlock, Offset: 85, Size: 78, Compression: NoCompression},
		{Kind: FooterBlock, Offset: 168, Size: 64, Compression: NoCompression},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d blocks %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Offset != w.Offset || g.Size != w.Size ||
			g.Compression != w.Compression || !bytes.Equal(g.IndexKey, w.IndexKey) {
			t.Errorf("block %d: got %v at %d size %d %s key %q; want %v at %d size %d %s key %q", i,
				g.Kind, g.Offset, g.Size, g.Compression, g.IndexKey, w.Kind, w.Offset, w.Size, w.Compression, w.IndexKey)
		}
	}
	if got[len(got)-1].End() != uint64(len(data)) {
		t.Errorf("footer ends at %d, file is %d bytes", got[len(got)-1].End(), len(data))
	}
	if s := DataBlock.String(); s != "data block" {
		t.Errorf("DataBlock.String() = %q", s)
	}
}

// TestLayoutTilesFile checks, on random tables with and without filters
// and compression, that the blocks tile the whole file in order, that the
// data blocks match the properties, and that the compression types match
// what the trailers say.
func TestLayoutTilesFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for iter := 0; iter < testScale(20); iter++ {
		o := WriterOptions{BlockSize: 64 + rng.IntN(512), Compression: NoCompression}
		if rng.IntN(2) == 0 {
			o.BloomBitsPerKey = 1 + rng.IntN(16)
		}
		if rng.IntN(2) == 0 {
			o.Compression = SnappyCompression
		}
		es := randomEntries(rng, 1+rng.IntN(500), 3)
		data, _ := buildTable(t, es, o)
		r := mustOpenBytes(t, data, ReaderOptions{})
		blocks, err := r.Layout()
		if err != nil {
			t.Fatal(err)
		}
		var pos uint64
		counts := map[BlockKind]int{}
		var dataBytes uint64
		for i, b := range blocks {
			if b.Offset != pos {
				t.Fatalf("iter %d: block %d (%v) at %d, previous ended at %d", iter, i, b.Kind, b.Offset, pos)
			}
			pos = b.End()
			counts[b.Kind]++
			if b.Kind == DataBlock {
				dataBytes += b.Size + BlockTrailerLen
				if b.IndexKey == nil {
					t.Fatalf("iter %d: data block %d has no index key", iter, i)
				}
			} else if b.IndexKey != nil {
				t.Fatalf("iter %d: %v has an index key", iter, b.Kind)
			}
			if b.Kind != FooterBlock {
				typ := data[b.Offset+b.Size]
				if c, ok := compressionFromBlockType(typ); !ok || c != b.Compression {
					t.Fatalf("iter %d: %v at %d: compression %v, trailer says type %d", iter, b.Kind, b.Offset, b.Compression, typ)
				}
			} else if b.Compression != NoCompression {
				t.Fatalf("iter %d: footer reported as %v", iter, b.Compression)
			}
			if o.Compression == NoCompression && b.Compression != NoCompression {
				t.Fatalf("iter %d: %v compressed with compression off", iter, b.Kind)
			}
		}
		p := r.Properties()
		switch {
		case pos != uint64(len(data)):
			t.Fatalf("iter %d: blocks end at %d, file is %d bytes", iter, pos, len(data))
		case uint64(counts[DataBlock]) != p.NumDataBlocks || dataBytes != p.DataSize:
			t.Fatalf("iter %d: %d data blocks of %d bytes, properties say %d of %d", iter, counts[DataBlock], dataBytes, p.NumDataBlocks, p.DataSize)
		case counts[FilterBlock] != map[bool]int{true: 1}[o.BloomBitsPerKey > 0]:
			t.Fatalf("iter %d: %d filter blocks with BloomBitsPerKey %d", iter, counts[FilterBlock], o.BloomBitsPerKey)
		case counts[IndexBlock] != 1 || counts[PropertiesBlock] != 1 || counts[FooterBlock] != 1:
			t.Fatalf("iter %d: block counts %v", iter, counts)
		}
		r.Close()
	}
}

func TestLayoutAfterClose(t *testing.T) {
	data, _ := buildTable(t, goldenEntries(), goldenOptions)
	r := mustOpenBytes(t, data, ReaderOptions{})
	r.Close()
	if _, err := r.Layout(); err == nil {
		t.Fatal("Layout after Close succeeded")
	}
}

// TestLayoutTruncatedTrailer: a file that passes Open but whose bytes
// cannot be read where a trailer should be is reported, not guessed at.
func TestLayoutTruncatedTrailer(t *testing.T) {
	data, _ := buildTable(t, goldenEntries(), goldenOptions)
	f := &truncatingFile{memFile: memFile{data: data}}
	r, err := Open(f, "000009.sst", 9, int64(len(data)), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.limit = 30 // the data block's trailer starts at 34
	_, err = r.Layout()
	if !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("Layout on a truncated file: %v, want ErrCorruption", err)
	}
}

// truncatingFile serves reads only below limit once limit is set.
type truncatingFile struct {
	memFile
	limit int64
}

func (f *truncatingFile) ReadAt(p []byte, off int64) (int, error) {
	if f.limit > 0 && off+int64(len(p)) > f.limit {
		n := max(0, int(f.limit-off))
		copy(p, f.data[off:off+int64(n)])
		return n, io.EOF
	}
	return f.memFile.ReadAt(p, off)
}

// FuzzLayout damages the bytes of a table: whenever Open accepts them,
// Layout must not panic and must return blocks that lie inside the file.
func FuzzLayout(f *testing.F) {
	golden, _ := buildTable(f, goldenEntries(), goldenOptions)
	big, _ := buildTable(f, randomEntries(rand.New(rand.NewPCG(83, 84)), 200, 2),
		WriterOptions{BlockSize: 128, BloomBitsPerKey: 10, Compression: SnappyCompression})
	f.Add(golden, uint16(0), byte(0))
	f.Add(golden, uint16(60), byte(0x10))
	f.Add(big, uint16(3), byte(0xff))
	f.Add(big, uint16(len(big)-40), byte(1))
	f.Fuzz(func(t *testing.T, data []byte, at uint16, xor byte) {
		data = bytes.Clone(data)
		if len(data) > 0 {
			data[int(at)%len(data)] ^= xor
		}
		r, err := openBytes(data, ReaderOptions{})
		if err != nil {
			return
		}
		defer r.Close()
		blocks, err := r.Layout()
		if err != nil {
			if !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("Layout error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		for _, b := range blocks {
			if b.End() > uint64(len(data)) || b.End() < b.Offset {
				t.Fatalf("%v at %d size %d lies outside the %d-byte file", b.Kind, b.Offset, b.Size, len(data))
			}
		}
	})
}

func BenchmarkLayout(b *testing.B) {
	data, _ := buildTable(b, randomEntries(rand.New(rand.NewPCG(85, 86)), 20000, 2),
		WriterOptions{BloomBitsPerKey: 10, Compression: SnappyCompression})
	r := mustOpenBytes(b, data, ReaderOptions{})
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Layout(); err != nil {
			b.Fatal(err)
		}
	}
}
