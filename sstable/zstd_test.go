package sstable

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// withTrailer returns stored followed by a valid trailer of type typ: a
// block whose checksum passes, so that what follows is the decoder's test.
func withTrailer(stored []byte, typ byte) []byte {
	buf := append(bytes.Clone(stored), typ, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(buf[len(stored)+1:], blockChecksum(stored, typ))
	return buf
}

// goldenZstd is a zstd block as this package writes it: one single-segment
// frame that declares its content size (0x50 = 80 bytes), no frame
// checksum. zstd is a standard format (RFC 8878): whatever encoder wrote
// it, a reader must decode it to goldenZstdContent forever.
const (
	goldenZstdHex     = "28b52ffd20502d0100c401626c6f6f6d6b76207a73746420676f6c64656e20626c6f636b3a20210154140426c703"
	goldenZstdContent = "bloomkv zstd golden block: bloomkv zstd golden block: bloomkv zstd golden block!"
)

func TestZstdGoldenBlock(t *testing.T) {
	stored, _ := hex.DecodeString(goldenZstdHex)
	out, err := decodeBlockContents(withTrailer(stored, blockTypeZstd), testLoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != goldenZstdContent {
		t.Fatalf("decoded %q", out)
	}
	// What this version writes: the same frame (the encoder is pinned in
	// go.mod; a new encoder version may write other bytes, which the test
	// above keeps readable).
	enc, _ := zstdCodecs()
	if got := hex.EncodeToString(enc.EncodeAll([]byte(goldenZstdContent), nil)); got != goldenZstdHex {
		t.Logf("the encoder now writes %s (readable either way)", got)
	}
}

// TestZstdRoundTrip writes tables with zstd blocks and reads every entry
// back; zstd blocks are said so in the trailers (Layout) and properties,
// and the table is smaller than with snappy.
func TestZstdRoundTrip(t *testing.T) {
	es := seqEntries(5000)
	data, m := buildTable(t, es, WriterOptions{Compression: ZstdCompression, BlockSize: 4096, BloomBitsPerKey: 10})
	if m.Props.Compression != ZstdCompression {
		t.Fatalf("properties say %v", m.Props.Compression)
	}
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	if r.Properties().Compression != ZstdCompression {
		t.Fatalf("read back properties say %v", r.Properties().Compression)
	}
	blocks, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	zstdBlocks := map[BlockKind]int{}
	for _, b := range blocks {
		if b.Compression == ZstdCompression {
			zstdBlocks[b.Kind]++
		}
	}
	if zstdBlocks[DataBlock] == 0 || zstdBlocks[IndexBlock] != 1 {
		t.Fatalf("zstd blocks by kind: %v", zstdBlocks)
	}
	it := r.NewIter(true)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value) {
			t.Fatalf("entry %d differs", i)
		}
		i++
	}
	if err := it.Close(); err != nil || i != len(es) {
		t.Fatalf("read %d of %d entries: %v", i, len(es), err)
	}
	for j := 0; j < len(es); j += 97 {
		uk, seq, _, _ := kv.ParseInternalKey(es[j].key)
		v, _, ok, err := r.Get(uk, seq, true, nil)
		if err != nil || !ok || !bytes.Equal(v, es[j].value) {
			t.Fatalf("Get %q: %q %v %v", uk, v, ok, err)
		}
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	snappyData, _ := buildTable(t, es, WriterOptions{Compression: SnappyCompression, BlockSize: 4096, BloomBitsPerKey: 10})
	t.Logf("5000 entries: zstd %d bytes, snappy %d bytes", len(data), len(snappyData))
	if len(data) >= len(snappyData) {
		t.Errorf("zstd table (%d bytes) is not smaller than snappy's (%d)", len(data), len(snappyData))
	}

	// Incompressible blocks are stored raw.
	rnd := make([]refEntry, 200)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		rnd[i] = refEntry{kv.MakeInternalKey([]byte{byte(i >> 8), byte(i)}, 1, kv.KindSet), v}
	}
	data, _ = buildTable(t, rnd, WriterOptions{Compression: ZstdCompression})
	r2 := mustOpenBytes(t, data, ReaderOptions{})
	defer r2.Close()
	blocks, _ = r2.Layout()
	for _, b := range blocks {
		if b.Kind == DataBlock && b.Compression != NoCompression {
			t.Fatalf("an incompressible data block was stored as %v", b.Compression)
		}
	}
}

// TestZstdDamage: damage to a zstd block is ErrCorruption naming the
// block, never a panic. The block trailer's crc32c catches every flipped
// byte and every cut; behind a forged checksum, the frame's own structure
// (its declared size, one frame only) still catches cuts, lies about the
// size, extra frames and skippable frames, and a flipped byte either fails
// to decode or decodes without a panic (zstd frames carry no checksum of
// their own here: the trailer's is the guard).
func TestZstdDamage(t *testing.T) {
	good, _ := hex.DecodeString(goldenZstdHex)
	block := withTrailer(good, blockTypeZstd)
	check := func(what string, buf []byte, mustFail bool) {
		t.Helper()
		out, err := decodeBlockContents(buf, testLoc)
		if err == nil {
			if mustFail {
				t.Fatalf("%s: decoded %q without an error", what, out)
			}
			return
		}
		if !errors.Is(err, kv.ErrCorruption) || !bytes.Contains([]byte(err.Error()), []byte("test.sst")) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for i := range good {
		for _, bit := range []byte{0x01, 0x10, 0x80} {
			b := bytes.Clone(good)
			b[i] ^= bit
			// As found on disk: the trailer no longer matches.
			check(label("flip %#x at %d", bit, i), append(b, block[len(good):]...), true)
			check(label("flip %#x at %d, checksum forged", bit, i), withTrailer(b, blockTypeZstd), false)
		}
	}
	for n := range len(good) {
		check(label("cut to %d", n), append(bytes.Clone(good[:n]), block[len(good):]...), true)
		check(label("cut to %d, checksum forged", n), withTrailer(good[:n], blockTypeZstd), true)
	}
	huge := append(bytes.Clone(good[:4]), 0xe0, 0, 0, 0, 0, 0, 0, 0, 0x10) // single segment, 2^60 bytes
	huge = append(huge, good[6:]...)
	for what, stored := range map[string][]byte{
		"a size of 2^60":    huge,
		"two frames":        append(bytes.Clone(good), good...),
		"a skippable frame": {0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4},
		"no frame at all":   {},
		"a snappy block":    {0x50, 0x00, 0x61},
	} {
		check(what, withTrailer(stored, blockTypeZstd), true)
	}
}

// FuzzZstdBlock decodes arbitrary bytes as a zstd block with a valid
// checksum: no panic, and an error always wraps ErrCorruption.
func FuzzZstdBlock(f *testing.F) {
	good, _ := hex.DecodeString(goldenZstdHex)
	f.Add(good)
	enc, _ := zstdCodecs()
	f.Add(enc.EncodeAll(bytes.Repeat([]byte("abcdefgh"), 1000), nil))
	f.Add(enc.EncodeAll(nil, nil))
	f.Fuzz(func(t *testing.T, stored []byte) {
		if _, err := decodeBlockContents(withTrailer(stored, blockTypeZstd), testLoc); err != nil && !errors.Is(err, kv.ErrCorruption) {
			t.Fatalf("error does not wrap ErrCorruption: %v", err)
		}
	})
}
