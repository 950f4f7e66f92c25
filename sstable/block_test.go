package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

func buildBlock(es []refEntry, restartInterval int) []byte {
	b := newBlockBuilder(restartInterval)
	for _, e := range es {
		b.add(e.key, e.value)
	}
	return append([]byte(nil), b.finish()...)
}

var testLoc = location{"test.sst", kindData, 0}

// TestBlockRoundTrip builds blocks of random entries at several restart
// intervals and checks every iterator operation against the sorted input.
func TestBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ri := range []int{1, 2, 3, 16, 1000} {
		for _, n := range []int{1, 2, 17, 300} {
			es := randomEntries(rng, n, 3)
			data := buildBlock(es, ri)
			b, err := decodeBlock(data, testLoc)
			if err != nil {
				t.Fatalf("ri=%d n=%d: %v", ri, n, err)
			}
			if b.numEntries != len(es) {
				t.Fatalf("ri=%d n=%d: %d entries decoded", ri, n, b.numEntries)
			}
			if want := (len(es) + ri - 1) / ri; b.numRestarts != want {
				t.Fatalf("ri=%d n=%d: %d restarts, want %d", ri, n, b.numRestarts, want)
			}
			checkBlockIter(t, rng, b, es)
		}
	}
}

func checkBlockIter(t *testing.T, rng *rand.Rand, b *block, es []refEntry) {
	t.Helper()
	var it blockIter
	it.init(b)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value) {
			t.Fatalf("forward %d: got %s", i, kv.FormatInternalKey(it.Key()))
		}
		i++
	}
	if i != len(es) {
		t.Fatalf("forward saw %d of %d", i, len(es))
	}
	i = len(es) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value) {
			t.Fatalf("backward %d: got %s", i, kv.FormatInternalKey(it.Key()))
		}
		i--
	}
	if i != -1 {
		t.Fatalf("backward stopped at %d", i)
	}
	for range 200 {
		k := randomSearchKey(rng, es)
		j := refSeekGE(es, k)
		ok := it.SeekGE(k)
		if ok != (j < len(es)) || (ok && !bytes.Equal(it.Key(), es[j].key)) {
			t.Fatalf("SeekGE(%s): ok=%v key=%s, want index %d", kv.FormatInternalKey(k), ok, kv.FormatInternalKey(it.Key()), j)
		}
		// Walk a few steps in a random direction from there.
		for s := 0; ok && s < 5; s++ {
			if rng.IntN(2) == 0 {
				ok, j = it.Next(), j+1
			} else {
				ok, j = it.Prev(), j-1
			}
			if ok != (j >= 0 && j < len(es)) || (ok && !bytes.Equal(it.Key(), es[j].key)) {
				t.Fatalf("step after SeekGE(%s): ok=%v, want index %d", kv.FormatInternalKey(k), ok, j)
			}
		}
		j = refSeekGE(es, k) - 1
		ok = it.SeekLT(k)
		if ok != (j >= 0) || (ok && !bytes.Equal(it.Key(), es[j].key)) {
			t.Fatalf("SeekLT(%s): ok=%v key=%s, want index %d", kv.FormatInternalKey(k), ok, kv.FormatInternalKey(it.Key()), j)
		}
	}
}

func TestEmptyIndexBlock(t *testing.T) {
	data := buildBlock(nil, 16)
	if want := []byte{0, 0, 0, 0, 1, 0, 0, 0}; !bytes.Equal(data, want) {
		t.Fatalf("empty block = %x, want %x", data, want)
	}
	b, err := decodeBlock(data, location{"t", kindIndex, 0})
	if err != nil {
		t.Fatal(err)
	}
	var it blockIter
	it.init(b)
	if it.First() || it.Last() || it.SeekGE(kv.MakeSearchKey(nil, 0)) || it.SeekLT(kv.MakeSearchKey([]byte("z"), 0)) {
		t.Fatal("empty block iterator found an entry")
	}
	if _, err := decodeBlock(data, testLoc); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("empty data block accepted: %v", err)
	}
}

// TestDecodeBlockRejects hand-crafts malformed blocks.
func TestDecodeBlockRejects(t *testing.T) {
	good := buildBlock([]refEntry{
		{kv.MakeInternalKey([]byte("apple"), 2, kv.KindSet), []byte("1")},
		{kv.MakeInternalKey([]byte("apricot"), 1, kv.KindSet), []byte("2")},
		{kv.MakeInternalKey([]byte("banana"), 3, kv.KindDelete), nil},
	}, 2)
	if _, err := decodeBlock(good, testLoc); err != nil {
		t.Fatal(err)
	}
	restartsOff := len(good) - 4 - 8
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string][]byte{
		"short":              {1, 0, 0},
		"zero restarts":      {0, 0, 0, 0},
		"too many restarts":  mutate(func(b []byte) []byte { b[len(b)-4] = 200; return b }),
		"first restart != 0": mutate(func(b []byte) []byte { b[restartsOff] = 1; return b }),
		"restart mid-entry":  mutate(func(b []byte) []byte { b[restartsOff+4]++; return b }),
		"restart past end":   mutate(func(b []byte) []byte { b[restartsOff+5] = 0x10; return b }),
		"restarts unordered": mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[restartsOff+4:], 0); return b }),
		"shared at restart":  mutate(func(b []byte) []byte { b[0] = 1; return b }),
		"overlong value":     mutate(func(b []byte) []byte { b[2] = 0x7f; return b }),
		"bad varint":         mutate(func(b []byte) []byte { b[1] = 0xff; b[2] = 0xff; return b }),
		"keys out of order": mutate(func(b []byte) []byte {
			i := bytes.Index(b, []byte("banana"))
			b[i] = 'a'
			b[i+1] = 'a'
			return b
		}),
		"bad kind": mutate(func(b []byte) []byte {
			i := bytes.Index(b, []byte("banana"))
			b[i+6] = 7
			return b
		}),
		"short key": buildBlock([]refEntry{{[]byte("abc"), nil}}, 16),
		"duplicate key": buildBlock([]refEntry{
			{kv.MakeInternalKey([]byte("a"), 1, kv.KindSet), nil},
			{kv.MakeInternalKey([]byte("a"), 1, kv.KindSet), nil},
		}, 16),
		"trailing garbage": mutate(func(b []byte) []byte {
			return append(append(b[:restartsOff:restartsOff], 0), b[restartsOff:]...)
		}),
	}
	for name, data := range cases {
		_, err := decodeBlock(data, testLoc)
		if !errors.Is(err, kv.ErrCorruption) {
			t.Errorf("%s: got %v, want corruption", name, err)
			continue
		}
		if msg := err.Error(); !bytes.HasPrefix([]byte(msg), []byte("bloomkv/sstable: test.sst: data block at offset 0: ")) {
			t.Errorf("%s: message %q lacks the location", name, msg)
		}
	}
}

// FuzzDecodeBlock feeds arbitrary bytes to the block decoder; whatever it
// accepts must iterate without panicking, consistently in both directions.
func FuzzDecodeBlock(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	f.Add(buildBlock(randomEntries(rng, 20, 2), 4), false)
	f.Add(buildBlock(randomEntries(rng, 3, 1), 1), true)
	f.Add(buildBlock(nil, 16), true)
	f.Add([]byte{0, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, data []byte, index bool) {
		loc := testLoc
		if index {
			loc.kind = kindIndex
		}
		b, err := decodeBlock(data, loc)
		if err != nil {
			if !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		var it blockIter
		it.init(b)
		var fwd [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			fwd = append(fwd, append([]byte(nil), it.Key()...))
		}
		if len(fwd) != b.numEntries {
			t.Fatalf("iterated %d of %d entries", len(fwd), b.numEntries)
		}
		n := len(fwd)
		for ok := it.Last(); ok; ok = it.Prev() {
			n--
			if n < 0 || !bytes.Equal(it.Key(), fwd[n]) {
				t.Fatalf("backward iteration disagrees at %d", n)
			}
		}
		for i, k := range fwd {
			if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
				t.Fatalf("SeekGE of entry %d failed", i)
			}
		}
	})
}

// TestDecodeBlockContents checks the trailer: checksum, compression type
// and the snappy size bound.
func TestDecodeBlockContents(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f, WriterOptions{Compression: SnappyCompression})
	raw := bytes.Repeat([]byte("abcdefgh"), 100)
	h := w.writeBlock(raw, SnappyCompression)
	if err := w.bw.Flush(); err != nil {
		t.Fatal(err)
	}
	stored := f.data[:h.end()]
	if stored[h.size] != blockTypeSnappy {
		t.Fatalf("a block of repeated bytes was not compressed")
	}
	got, err := decodeBlockContents(stored, testLoc)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("round trip: %v", err)
	}
	bad := append([]byte(nil), stored...)
	bad[h.size] = 9
	binary.LittleEndian.PutUint32(bad[h.size+1:], blockChecksum(bad[:h.size], 9))
	if _, err := decodeBlockContents(bad, testLoc); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("unknown type accepted: %v", err)
	}
	// A snappy header claiming a huge size must be refused before allocating.
	huge := binary.AppendUvarint(nil, 1<<40)
	huge = append(huge, 0, 0)
	huge = append(huge, blockTypeSnappy)
	huge = binary.LittleEndian.AppendUint32(huge, blockChecksum(huge[:len(huge)-1], blockTypeSnappy))
	if _, err := decodeBlockContents(huge, testLoc); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("huge snappy claim accepted: %v", err)
	}
	// Incompressible blocks stay raw.
	rng := rand.New(rand.NewPCG(5, 6))
	noise := make([]byte, 1000)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	h = w.writeBlock(noise, SnappyCompression)
	if err := w.bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if f.data[h.offset+h.size] != blockTypeRaw {
		t.Fatal("random bytes were stored compressed")
	}
}
