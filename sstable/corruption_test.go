package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
)

// region is a byte range of a table file and the name its errors carry.
type region struct {
	kind       blockKind
	start, end uint64 // [start, end), trailer included
}

func (g region) label() string { return fmt.Sprintf("%s at offset %d", g.kind, g.start) }

// tableRegions lists every block of a table, and the footer.
func tableRegions(t *testing.T, data []byte) []region {
	t.Helper()
	r := mustOpenBytes(t, data, ReaderOptions{})
	var out []region
	var it blockIter
	it.init(r.index)
	for ok := it.First(); ok; ok = it.Next() {
		h, err := r.dataHandle(&it)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, region{kindData, h.offset, h.end()})
	}
	ft := r.footer
	if ft.hasFilter() {
		out = append(out, region{kindFilter, ft.filter.offset, ft.filter.end()})
	}
	out = append(out, region{kindIndex, ft.index.offset, ft.index.end()},
		region{kindProperties, ft.props.offset, ft.props.end()},
		region{kindFooter, uint64(len(data)) - footerLen, uint64(len(data))})
	covered := uint64(0)
	for _, g := range out {
		covered += g.end - g.start
	}
	if covered != uint64(len(data)) {
		t.Fatalf("regions cover %d of %d bytes", covered, len(data))
	}
	return out
}

// readAll exercises a possibly damaged reader: scans both ways, seeks and
// Gets. Any result it returns must match es; it returns the first error.
func readAll(t *testing.T, r *Reader, es []refEntry) error {
	t.Helper()
	it := r.NewIter(true)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		checkIterAt(t, "scan of damaged table", it, true, es, i)
		i++
	}
	firstErr := it.Error()
	if firstErr == nil && i != len(es) {
		t.Fatalf("scan of damaged table ended early at %d of %d without an error", i, len(es))
	}
	it = r.NewIter(false)
	i = len(es) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		checkIterAt(t, "reverse scan of damaged table", it, true, es, i)
		i--
	}
	if firstErr == nil {
		firstErr = it.Error()
	}
	for _, e := range es {
		uk, seq, _, _ := kv.ParseInternalKey(e.key)
		v, k, found, err := r.Get(uk, seq, true, nil)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		wv, wk, wfound := refGet(es, uk, seq)
		if found != wfound || k != wk || !bytes.Equal(v, wv) {
			t.Fatalf("damaged table: Get(%q, %d) = %q,%v,%v; want %q,%v,%v", uk, seq, v, k, found, wv, wk, wfound)
		}
	}
	return firstErr
}

// expectCorruption checks that err reports corruption of region g.
func expectCorruption(t *testing.T, what string, err error, g region) {
	t.Helper()
	if !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("%s: got %v, want ErrCorruption", what, err)
	}
	want := "bloomkv/sstable: 000007.sst: " + g.label()
	if g.kind == kindFooter {
		want = "bloomkv/sstable: 000007.sst: footer at offset"
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("%s: error %q does not name %q", what, err, want)
	}
}

// TestFlippedByteInEveryBlockKind damages the first, middle and last byte
// of every block (and its trailer) and of the footer, and checks that the
// damage is reported as corruption of that block, and that nothing wrong is
// ever returned.
func TestFlippedByteInEveryBlockKind(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	es := randomEntries(rng, 400, 3)
	for _, o := range []WriterOptions{
		{BlockSize: 512, Compression: NoCompression, BloomBitsPerKey: 10},
		{BlockSize: 512, Compression: SnappyCompression, BloomBitsPerKey: 10},
		{BlockSize: 512, Compression: SnappyCompression, BloomBitsPerKey: 10, FilterVariant: filter.VariantFuse},
	} {
		c := o.Compression
		data, _ := buildTable(t, es, o)
		kinds := map[blockKind]bool{}
		for _, g := range tableRegions(t, data) {
			kinds[g.kind] = true
			for _, pos := range []uint64{g.start, (g.start + g.end) / 2, g.end - 5, g.end - 4, g.end - 1} {
				damaged := append([]byte(nil), data...)
				damaged[pos] ^= 1 << rng.IntN(8)
				what := fmt.Sprintf("%s, %s filter: flip at %d in %s", c, o.FilterVariant, pos, g.label())
				r, err := openBytes(damaged, ReaderOptions{Cache: NewBlockCache(1 << 20)})
				if g.kind != kindData {
					expectCorruption(t, what+": Open", err, g)
					continue
				}
				if err != nil {
					t.Fatalf("%s: Open: %v", what, err)
				}
				expectCorruption(t, what+": reads", readAll(t, r, es), g)
				expectCorruption(t, what+": Check", r.Check(), g)
			}
		}
		if len(kinds) != 5 {
			t.Fatalf("only %d region kinds exercised", len(kinds))
		}
	}
}

// TestRandomDamageAlwaysDetected flips random bits anywhere: Open plus
// Check must report corruption every time (every byte is covered by a
// checksum), and reads must never return wrong data.
func TestRandomDamageAlwaysDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	es := randomEntries(rng, 300, 2)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 256, Compression: SnappyCompression, BloomBitsPerKey: 8})
	fuse, _ := buildTable(t, es, WriterOptions{BlockSize: 256, Compression: SnappyCompression, BloomBitsPerKey: 8, FilterVariant: filter.VariantFuse})
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := range 2 * n {
		data := data
		if i%2 == 1 {
			data = fuse
		}
		damaged := append([]byte(nil), data...)
		for range 1 + rng.IntN(3) {
			damaged[rng.IntN(len(damaged))] ^= byte(1 + rng.IntN(255))
		}
		r, err := openBytes(damaged, ReaderOptions{})
		if err == nil {
			readErr := readAll(t, r, es)
			err = r.Check()
			if readErr != nil && !errors.Is(readErr, kv.ErrCorruption) {
				t.Fatalf("read error is not corruption: %v", readErr)
			}
		}
		if !errors.Is(err, kv.ErrCorruption) {
			t.Fatalf("damage not reported as corruption: %v", err)
		}
	}
}

// TestTruncation opens every prefix of a table (and the whole table with a
// size larger than the file) and expects corruption.
func TestTruncation(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(25, 26)), 200, 2)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10})
	for n := 0; n < len(data); n++ {
		_, err := openBytes(data[:n], ReaderOptions{})
		if !errors.Is(err, kv.ErrCorruption) || !strings.HasPrefix(err.Error(), "bloomkv/sstable: 000007.sst: ") {
			t.Fatalf("prefix of %d bytes: %v", n, err)
		}
	}
	// The file lost its tail but the caller believes the full size.
	_, err := Open(&memFile{data: data[:len(data)-10]}, "000007.sst", 7, int64(len(data)), ReaderOptions{})
	if !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("short file: %v", err)
	}
}

// TestFooterValidation damages footer fields with a correct checksum, so
// that the field checks themselves are exercised.
func TestFooterValidation(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(27, 28)), 50, 1)
	data, _ := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10})
	r := mustOpenBytes(t, data, ReaderOptions{})
	good := r.footer
	size := uint64(len(data))
	cases := map[string]func(f *footer){
		"version":            func(f *footer) { f.version = 2 },
		"index past end":     func(f *footer) { f.index.offset = size },
		"index size huge":    func(f *footer) { f.index.size = 1 << 63 },
		"props overflow":     func(f *footer) { f.props.offset, f.props.size = 1<<64-1, 10 },
		"filter into footer": func(f *footer) { f.filter.size += 3 },
		"filter zero size":   func(f *footer) { f.filter.size = 0 },
		"index wrong place":  func(f *footer) { f.index.offset++ },
	}
	for name, mutate := range cases {
		f := good
		mutate(&f)
		damaged := append(append([]byte(nil), data[:size-footerLen]...), f.encode()...)
		_, err := openBytes(damaged, ReaderOptions{})
		if !errors.Is(err, kv.ErrCorruption) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := append([]byte(nil), data...)
	copy(bad[len(bad)-8:], "NOTATABL")
	if _, err := openBytes(bad, ReaderOptions{}); !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), "magic") {
		t.Errorf("bad magic: %v", err)
	}
}

// FuzzOpen opens arbitrary bytes as a table and, when that succeeds, reads
// everything: no panic, and any error wraps ErrCorruption.
func FuzzOpen(f *testing.F) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, o := range []WriterOptions{
		{BlockSize: 64, Compression: NoCompression, BloomBitsPerKey: 10},
		{BlockSize: 64, Compression: NoCompression, BloomBitsPerKey: 10, FilterVariant: filter.VariantFuse},
		{BlockSize: 128, Compression: SnappyCompression},
		{BlockSize: 128, Compression: ZstdCompression},
		{Compression: NoCompression},
		// Partitioned, version 3: one partition per data block.
		{BlockSize: 64, Compression: NoCompression, BloomBitsPerKey: 10, IndexPartitionSize: 1, PartitionedFormat: FormatVersionPartitioned},
		// Version 4: compact partitions of a few data blocks each.
		{BlockSize: 64, Compression: NoCompression, BloomBitsPerKey: 10, IndexPartitionSize: 100},
	} {
		data, _ := buildTable(f, randomEntries(rng, 30, 2), o)
		f.Add(data)
	}
	empty, _ := buildTable(f, nil, WriterOptions{})
	f.Add(empty)
	f.Add([]byte(tableMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := openBytes(data, ReaderOptions{Cache: NewBlockCache(1 << 20)})
		if err != nil {
			if !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("Open error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		it := r.NewIter(true)
		var keys [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			keys = append(keys, append([]byte(nil), it.Key()...))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
		}
		for _, k := range keys {
			uk, seq, _, _ := kv.ParseInternalKey(k)
			if _, _, _, err := r.Get(uk, seq, true, nil); err != nil && !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("Get error does not wrap ErrCorruption: %v", err)
			}
		}
		for _, err := range []error{it.Error(), r.Check()} {
			if err != nil && !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
		}
	})
}
