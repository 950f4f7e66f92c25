package sstable

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// incompressibleEntries returns n random 16-byte user keys, one version
// each, with random 100-byte values, sorted.
func incompressibleEntries(rng *rand.Rand, n int) []refEntry {
	es := make([]refEntry, n)
	vals := make([]byte, 100*n)
	for i := range vals {
		vals[i] = byte(rng.Uint32())
	}
	for i := range es {
		uk := make([]byte, 16)
		binary.BigEndian.PutUint64(uk, rng.Uint64())
		binary.BigEndian.PutUint64(uk[8:], rng.Uint64())
		es[i] = refEntry{kv.MakeInternalKey(uk, uint64(i+1), kv.KindSet), vals[100*i : 100*i+100 : 100*i+100]}
	}
	sortEntries(es)
	return es
}

// indexBytes returns a Reader's decoded index bytes -- the top-level index
// and every index partition, as the block cache would hold them -- and the
// bytes IndexSize says they take in the file (compressed, with trailers).
func indexBytes(t testing.TB, data []byte) (decoded, stored uint64) {
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	decoded = uint64(len(r.index.data))
	for _, b := range r.residentIndex {
		decoded += uint64(len(b.data))
	}
	return decoded, r.props.IndexSize
}

// TestCompactIndexSize measures index bytes per key of one set of entries
// written as version 3 and version 4 (issue 25's shape: 16-byte keys,
// incompressible 100-byte values, 4 KiB blocks, 2 KiB partitions), and
// requires version 4 to take at most 0.35 bytes per key decoded and the
// same partitions (so the same filter partitions) as version 3.
func TestCompactIndexSize(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	es := incompressibleEntries(rand.New(rand.NewPCG(61, 62)), n)
	var perKey [2]float64
	var parts [2]uint64
	for i, format := range []uint32{FormatVersionPartitioned, FormatVersionCompactIndex} {
		data, m := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10, IndexPartitionSize: 2048, PartitionedFormat: format})
		decoded, stored := indexBytes(t, data)
		perKey[i] = float64(decoded) / float64(n)
		parts[i] = m.Props.IndexPartitions
		t.Logf("version %d: %d keys, %d data blocks, %d partitions: index %d bytes decoded (%.3f B/key, %.1f B/block), %d in the file (%.3f B/key)",
			format, n, m.Props.NumDataBlocks, m.Props.IndexPartitions, decoded, perKey[i], float64(decoded)/float64(m.Props.NumDataBlocks), stored, float64(stored)/float64(n))
	}
	if parts[0] != parts[1] {
		t.Errorf("version 3 has %d partitions, version 4 %d: want the same cut points", parts[0], parts[1])
	}
	if perKey[1] > 0.35 || perKey[1] > perKey[0]/2 {
		t.Errorf("version 4 index: %.3f B/key (version 3: %.3f); want at most 0.35 and half of version 3's", perKey[1], perKey[0])
	}
}

// goldenCompactEntries are the entries of TestGoldenCompactIndexTable:
// short keys, then versions of "hot" spread over several blocks (whose
// separators keep their trailers), then more short keys.
func goldenCompactEntries() []refEntry {
	var es []refEntry
	add := func(uk string, seq uint64, v string) {
		es = append(es, refEntry{kv.MakeInternalKey([]byte(uk), seq, kv.KindSet), []byte(v)})
	}
	add("apple", 1, "a")
	add("apricot", 2, "b")
	for s := uint64(9); s >= 5; s-- {
		add("hot", s, fmt.Sprint("v", s))
	}
	add("kiwi", 3, "c")
	add("lime", 4, "d")
	return es
}

// TestGoldenCompactIndexTable pins a version 4 table: its layout, its
// bytes' hash, and the bytes of its index partitions, decoded by hand
// below (index_compact.go has the layout).
func TestGoldenCompactIndexTable(t *testing.T) {
	es := goldenCompactEntries()
	data, m := buildTable(t, es, WriterOptions{BlockSize: 30, BloomBitsPerKey: 10, IndexPartitionSize: 60, Compression: NoCompression})
	if m.Props.FormatVersion != FormatVersionCompactIndex {
		t.Fatalf("format version %d", m.Props.FormatVersion)
	}
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	blocks, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var sb bytes.Buffer
	fmt.Fprintf(&sb, "%d partitions, %d bytes, sha256 %x\n", m.Props.IndexPartitions, len(data), sha256.Sum256(data))
	for _, b := range blocks {
		fmt.Fprintf(&sb, "%s@%d+%d", b.Kind, b.Offset, b.Size)
		if b.Kind == IndexPartitionBlock {
			fmt.Fprintf(&sb, " % x", data[b.Offset:b.Offset+b.Size])
		}
		if b.Kind == DataBlock {
			fmt.Fprintf(&sb, " %s", kv.FormatInternalKey(b.IndexKey))
		}
		sb.WriteByte('\n')
	}
	got := sb.String()
	// Partition 0: "b" -> (0, 42); "hot" -> (47, 36) with trailer
	// #8,SET; "hot" again (shares 3 bytes, so no offset: 47+36+5 = 88),
	// size 36, trailer #6,SET. Partition 1: "l" and "m" share nothing,
	// so both store their offsets (129, 174).
	const want = `2 partitions, 526 bytes, sha256 d28f995986bd2003f44d32be9627a5cc0a3a77840910dbd4cc88d2acae4d323f
data block@0+42 "b"#72057594037927935,SEEK
data block@47+36 "hot"#8,SET
data block@88+36 "hot"#6,SET
data block@129+40 "l"#72057594037927935,SEEK
data block@174+24 "m"#72057594037927935,SEEK
filter partition@203+14
filter partition@222+14
index partition@241+42 00 01 02 62 00 54 00 03 0a 68 6f 74 2f 49 01 08 00 00 00 00 00 00 03 00 09 49 01 06 00 00 00 00 00 00 00 00 00 00 01 00 00 00
index partition@288+22 00 01 03 6c 81 01 50 00 01 03 6d ae 01 30 00 00 00 00 01 00 00 00
index block@315+50
properties block@370+87
footer@462+64
`
	if got != want {
		t.Fatalf("version 4 table changed:\n%s\nwant\n%s", got, want)
	}
	checkPartitionedModes(t, "golden", data, es, rand.New(rand.NewPCG(63, 64)))
}

// resealBlock recomputes the trailer checksum of the stored block at h in
// data, so that damage inside it reaches the block's decoder.
func resealBlock(data []byte, h blockHandle) {
	end := h.offset + h.size
	binary.LittleEndian.PutUint32(data[end+1:], blockChecksum(data[h.offset:end], data[end]))
}

// readsBackOrFails opens data and reads it whole (Check, scans, Gets of
// every key): it must never panic, every error must wrap ErrCorruption,
// and a table that passes Check must read back es exactly.
func readsBackOrFails(t *testing.T, what string, data []byte, es []refEntry) {
	t.Helper()
	for name, ro := range partitionReaderModes() {
		r, err := openBytes(data, ro())
		if err != nil {
			if !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("%s, %s: Open error does not wrap ErrCorruption: %v", what, name, err)
			}
			continue
		}
		checkErr := r.Check()
		if checkErr != nil && !errors.Is(checkErr, kv.ErrCorruption) {
			t.Fatalf("%s, %s: Check error does not wrap ErrCorruption: %v", what, name, checkErr)
		}
		it := r.NewIter(true)
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			if checkErr == nil && (i >= len(es) || !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value)) {
				t.Fatalf("%s, %s: entry %d is %s after a clean Check", what, name, i, kv.FormatInternalKey(it.Key()))
			}
			i++
		}
		for ok := it.Last(); ok; ok = it.Prev() {
		}
		if err := it.Close(); err != nil && !errors.Is(err, kv.ErrCorruption) {
			t.Fatalf("%s, %s: iterator error does not wrap ErrCorruption: %v", what, name, err)
		} else if checkErr == nil && (err != nil || i != len(es)) {
			t.Fatalf("%s, %s: a scan after a clean Check read %d of %d entries: %v", what, name, i, len(es), err)
		}
		for _, e := range es {
			uk, seq, _, _ := kv.ParseInternalKey(e.key)
			v, _, found, err := r.Get(uk, seq, true, nil)
			if err != nil && !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("%s, %s: Get error does not wrap ErrCorruption: %v", what, name, err)
			}
			if checkErr == nil && (err != nil || !found || !bytes.Equal(v, e.value)) {
				t.Fatalf("%s, %s: Get(%s) = %q, %v, %v after a clean Check", what, name, kv.FormatInternalKey(e.key), v, found, err)
			}
		}
		r.Close()
	}
}

// TestCompactIndexDamage flips every byte of a small version 4 table (the
// checksums catch it), and every byte of its index partitions with their
// checksums recomputed, so that the compact decoder and the checks after
// it see the damage: an error wrapping ErrCorruption, never a panic, never
// a wrong answer from a table that passes Check.
func TestCompactIndexDamage(t *testing.T) {
	es := goldenCompactEntries()
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 30, BloomBitsPerKey: 10, IndexPartitionSize: 60, Compression: NoCompression})
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x5a
		r, err := openBytes(bad, ReaderOptions{})
		if err == nil {
			err = r.Check()
			r.Close()
		}
		if !errors.Is(err, kv.ErrCorruption) {
			t.Fatalf("byte %d flipped: %v, want corruption", i, err)
		}
	}
	r := mustOpenBytes(t, data, ReaderOptions{})
	parts := append([]partition(nil), r.parts...)
	r.Close()
	for _, p := range parts {
		for i := p.index.offset; i < p.index.offset+p.index.size; i++ {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				bad := bytes.Clone(data)
				bad[i] ^= x
				resealBlock(bad, p.index)
				readsBackOrFails(t, fmt.Sprintf("index partition at %d, byte %d ^ %#x", p.index.offset, i, x), bad, es)
			}
		}
	}
}

// compactBlock assembles a compact index partition from raw entries
// (shared, key bytes, value) with a restart at entry 0 only.
func compactBlock(entries ...any) []byte {
	var out []byte
	for i := 0; i < len(entries); i += 3 {
		shared, key, value := entries[i].(int), entries[i+1].(string), entries[i+2].([]byte)
		out = binary.AppendUvarint(out, uint64(shared))
		out = binary.AppendUvarint(out, uint64(len(key)))
		out = binary.AppendUvarint(out, uint64(len(value)))
		out = append(append(out, key...), value...)
	}
	return append(out, 0, 0, 0, 0, 1, 0, 0, 0)
}

// TestCompactIndexDecoderRejects feeds the decoder partitions that are
// well formed as blocks but not as compact indexes: each is an error
// naming the file, the index partition and its offset.
func TestCompactIndexDecoderRejects(t *testing.T) {
	set := func(seq uint64) []byte { return binary.LittleEndian.AppendUint64(nil, kv.MakeTrailer(seq, kv.KindSet)) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	good := compactBlock(0, "a", []byte{0, 8}, 1, "b", []byte{8})
	if _, err := decodeCompactIndex(good, testLoc); err != nil {
		t.Fatalf("good block: %v", err)
	}
	for _, c := range []struct {
		name, want string
		data       []byte
	}{
		{"descending user keys", "does not sort after", compactBlock(0, "b", []byte{0, 8}, 0, "a", []byte{0, 8})},
		{"equal implicit keys", "does not sort after", compactBlock(0, "a", []byte{0, 8}, 1, "", []byte{8})},
		{"versions out of order", "does not sort after", compactBlock(0, "a", cat([]byte{0, 9}, set(3)), 1, "", cat([]byte{9}, set(4)))},
		{"implicit after a stored trailer", "does not sort after", compactBlock(0, "a", cat([]byte{0, 9}, set(3)), 1, "", []byte{8})},
		{"stored implicit trailer", "trailer", compactBlock(0, "a", cat([]byte{0, 9}, implicitTrailer[:]))},
		{"kind 0xfe", "trailer", compactBlock(0, "a", []byte{0, 9, 0xfe, 1, 0, 0, 0, 0, 0, 0})},
		{"short trailer", "cannot hold a trailer", compactBlock(0, "a", []byte{0, 9, 1, 1, 0})},
		{"bytes after the value", "after the value", compactBlock(0, "a", []byte{0, 8, 0})},
		{"no size", "bad block size", compactBlock(0, "a", []byte{0})},
		{"bad offset", "bad block offset", compactBlock(0, "a", []byte{0xff})},
		{"shares more than the key", "shares 2 bytes", compactBlock(0, "a", []byte{0, 8}, 2, "b", []byte{8})},
		{"offset overflow", "overflows", compactBlock(0, "a", cat(binary.AppendUvarint(nil, 1<<64-3), []byte{8}))},
		{"chained overflow", "overflows", compactBlock(0, "a", cat(binary.AppendUvarint(nil, 1<<63), binary.AppendUvarint(nil, 1<<64-12)), 1, "b", []byte{8})},
	} {
		_, err := decodeCompactIndex(c.data, location{"000007.sst", kindIndexPartition, 1234})
		if !errors.Is(err, kv.ErrCorruption) {
			t.Errorf("%s: got %v, want corruption", c.name, err)
			continue
		}
		for _, s := range []string{"000007.sst", "index partition", "1234", c.want} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, s)
			}
		}
	}
}

// FuzzDecodeCompactIndex decodes arbitrary bytes as a compact index
// partition and, when that succeeds, walks and seeks it: no panic, keys
// strictly increasing, handles chained as the layout says.
func FuzzDecodeCompactIndex(f *testing.F) {
	es := goldenCompactEntries()
	data, _ := buildTable(f, es, WriterOptions{BlockSize: 30, BloomBitsPerKey: 10, IndexPartitionSize: 60, Compression: NoCompression})
	r := mustOpenBytes(f, data, ReaderOptions{})
	for _, p := range r.parts {
		f.Add(data[p.index.offset : p.index.offset+p.index.size])
	}
	r.Close()
	big := incompressibleEntries(rand.New(rand.NewPCG(65, 66)), 2000)
	data, _ = buildTable(f, big, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, IndexPartitionSize: 512, Compression: NoCompression})
	r = mustOpenBytes(f, data, ReaderOptions{})
	f.Add(data[r.parts[1].index.offset : r.parts[1].index.offset+r.parts[1].index.size])
	r.Close()
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := decodeCompactIndex(raw, testLoc)
		if err != nil {
			if !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		var keys [][]byte
		var it blockIter
		it.init(b)
		var prev blockHandle
		for ok := it.First(); ok; ok = it.Next() {
			if n := len(keys); n > 0 && kv.CompareInternal(keys[n-1], it.Key()) >= 0 {
				t.Fatalf("key %s after %s", kv.FormatInternalKey(it.Key()), kv.FormatInternalKey(keys[n-1]))
			}
			// Only an entry storing its offset (sharing no key bytes) may
			// leave the chain of blocks.
			if e, _ := b.entryAt(it.off); e.shared != 0 && it.h.offset != prev.end() {
				t.Fatalf("entry at %d: handle %v does not follow %v", it.off, it.h, prev)
			}
			prev = it.h
			keys = append(keys, bytes.Clone(it.Key()))
		}
		if len(keys) != b.numEntries {
			t.Fatalf("walked %d of %d entries", len(keys), b.numEntries)
		}
		for i := len(keys) - 1; i >= 0; i-- {
			if ok := i == len(keys)-1 && it.Last() || i < len(keys)-1 && it.Prev(); !ok || !bytes.Equal(it.Key(), keys[i]) {
				t.Fatalf("backwards, entry %d: %v %s", i, ok, kv.FormatInternalKey(it.Key()))
			}
		}
		b.buildRestartPrefixes()
		for i, k := range keys {
			if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
				t.Fatalf("SeekGE(key %d %s) = %s", i, kv.FormatInternalKey(k), kv.FormatInternalKey(it.Key()))
			}
		}
	})
}

// BenchmarkIndexPartitionSeek times what a Get does in an index
// partition -- SeekGE, then the entry's block handle -- in a version 3
// and a version 4 partition of the same entries, held resident.
func BenchmarkIndexPartitionSeek(b *testing.B) {
	es := incompressibleEntries(rand.New(rand.NewPCG(67, 68)), 100_000)
	for _, format := range []uint32{FormatVersionPartitioned, FormatVersionCompactIndex} {
		data, _ := buildTable(b, es, WriterOptions{BloomBitsPerKey: 10, IndexPartitionSize: 2048, PartitionedFormat: format})
		r := mustOpenBytes(b, data, ReaderOptions{})
		part := r.residentIndex[1]
		lo := r.parts[0].key
		hi := r.parts[1].key
		var keys [][]byte
		for _, e := range es {
			if kv.CompareInternal(e.key, lo) > 0 && kv.CompareInternal(e.key, hi) <= 0 {
				keys = append(keys, kv.MakeSearchKey(kv.UserKey(e.key), kv.MaxSeq))
			}
		}
		b.Run(fmt.Sprintf("v%d", format), func(b *testing.B) {
			var it blockIter
			it.init(part)
			i := 0
			for b.Loop() {
				if !it.SeekGE(keys[i]) {
					b.Fatal("not found")
				}
				if _, err := r.dataHandle(&it); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
		r.Close()
	}
}

// BenchmarkDecodeCompactIndex times what a Get pays for an index
// partition read from a file once its checksum is verified: the walk
// that validates a version 4 partition's entries.
func BenchmarkDecodeCompactIndex(b *testing.B) {
	es := incompressibleEntries(rand.New(rand.NewPCG(67, 68)), 100_000)
	data, _ := buildTable(b, es, WriterOptions{BloomBitsPerKey: 10, IndexPartitionSize: 2048})
	r := mustOpenBytes(b, data, ReaderOptions{})
	defer r.Close()
	raw := r.residentIndex[1].data
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeCompactIndex(raw, testLoc); err != nil {
			b.Fatal(err)
		}
	}
}
