package sstable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// readaheadSizes are the windows the tests read with: smaller than one
// block (each refill reads just the block), a few blocks, and the size
// compactions use.
var readaheadSizes = []int{1, 3000, 16 << 10, compactionReadahead}

// readaheadTable builds a table of many small blocks, with values long
// enough that raw and snappy blocks both occur under SnappyCompression.
func readaheadTable(t *testing.T, c Compression) ([]byte, []refEntry) {
	t.Helper()
	rng := rand.New(rand.NewPCG(13, 13))
	es := randomEntries(rng, testScale(6000), 3)
	for i := range es {
		if kv.Kind(kv.Trailer(es[i].key)&0xFF) != kv.KindSet {
			continue
		}
		v := make([]byte, rng.IntN(200))
		for j := range v {
			if rng.IntN(2) == 0 {
				v[j] = byte(rng.Uint32()) // incompressible half
			} else {
				v[j] = 'x'
			}
		}
		es[i].value = v
	}
	data, _ := buildTable(t, es, WriterOptions{Compression: c, BlockSize: 512})
	return data, es
}

// TestReadaheadIterMatchesEntries walks a table through the readahead in
// both directions and with seeks, at every window size, and checks it
// against the entries written.
func TestReadaheadIterMatchesEntries(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, es := readaheadTable(t, c)
		r := mustOpenBytes(t, data, ReaderOptions{})
		if r.props.NumDataBlocks < 20 {
			t.Fatalf("%d data blocks: the test needs many", r.props.NumDataBlocks)
		}
		for _, size := range readaheadSizes {
			what := fmt.Sprintf("%s/window %d", c, size)
			it := r.newReadaheadIter(size)
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				checkIterAt(t, what+" forward", it, true, es, i)
				i++
			}
			checkIterAt(t, what+" forward end", it, false, es, i)
			i = len(es) - 1
			for ok := it.Last(); ok; ok = it.Prev() {
				checkIterAt(t, what+" backward", it, true, es, i)
				i--
			}
			checkIterAt(t, what+" backward end", it, false, es, -1)
			rng := rand.New(rand.NewPCG(uint64(size), 5))
			for range 200 {
				k := randomSearchKey(rng, es)
				checkIterAt(t, what+" SeekGE", it, it.SeekGE(k), es, refSeekGE(es, k))
				if it.Valid() {
					j := refSeekGE(es, k)
					checkIterAt(t, what+" SeekGE+Next", it, it.Next(), es, j+1)
				}
			}
			if err := it.Close(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if it.First() {
				t.Fatalf("%s: iterator usable after Close", what)
			}
		}
		r.Close()
	}
}

// TestReadaheadCorruption damages one data block in the middle of a
// readahead window (and, separately, its trailer): the scan must return
// every entry before it, then stop with an error wrapping ErrCorruption
// that names the file and the damaged block's offset. It must never panic
// nor return a wrong entry.
func TestReadaheadCorruption(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, es := readaheadTable(t, c)
		var blocks []region
		for _, g := range tableRegions(t, data) {
			if g.kind == kindData {
				blocks = append(blocks, g)
			}
		}
		for _, size := range readaheadSizes {
			// A block that is neither the first of its window nor the
			// last of the table (with size 1 every block starts one).
			g := blocks[len(blocks)/2+1]
			for _, pos := range []uint64{g.start + (g.end-g.start)/2, g.end - 1} {
				what := fmt.Sprintf("%s/window %d/byte %d of block at %d", c, size, pos-g.start, g.start)
				bad := append([]byte(nil), data...)
				bad[pos] ^= 0x40
				r := mustOpenBytes(t, bad, ReaderOptions{})
				it := r.newReadaheadIter(size)
				i := 0
				for ok := it.First(); ok; ok = it.Next() {
					checkIterAt(t, what, it, true, es, i)
					i++
				}
				err := it.Error()
				if err == nil {
					t.Fatalf("%s: scan of %d entries ended without an error", what, i)
				}
				if !errors.Is(err, kv.ErrCorruption) {
					t.Fatalf("%s: %v does not wrap ErrCorruption", what, err)
				}
				if want := g.label(); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "000007.sst") {
					t.Fatalf("%s: %q does not name the file and %q", what, err, want)
				}
				_ = it.Close()
				r.Close()
			}
		}
	}
}

// TestReadaheadWindowReuse checks that a window returned to the pool by
// one iterator serves another table correctly, and that a closed reader
// refuses blocks.
func TestReadaheadWindowReuse(t *testing.T) {
	dataA, esA := readaheadTable(t, SnappyCompression)
	dataB, esB := readaheadTable(t, NoCompression)
	for round := range 3 {
		for _, tc := range []struct {
			data []byte
			es   []refEntry
		}{{dataA, esA}, {dataB, esB}} {
			r := mustOpenBytes(t, tc.data, ReaderOptions{})
			it := r.NewCompactionIter()
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				checkIterAt(t, fmt.Sprintf("round %d", round), it, true, tc.es, i)
				i++
			}
			if err := it.Close(); err != nil || i != len(tc.es) {
				t.Fatalf("round %d: %d of %d entries, %v", round, i, len(tc.es), err)
			}
			r.Close()
		}
	}
	r := mustOpenBytes(t, dataA, ReaderOptions{})
	it := r.NewCompactionIter()
	r.Close()
	if it.First() || it.Error() == nil {
		t.Fatal("an iterator over a closed reader read a block")
	}
	_ = it.Close()
}

// TestReadaheadWindowGrowth: an input positioned but not yet read holds a
// small window (a compaction positions all its inputs at once), the
// window doubles as the scan goes on up to the full size, and an input
// scanned to its end holds none.
func TestReadaheadWindowGrowth(t *testing.T) {
	_, es := readaheadTable(t, SnappyCompression)
	big := make([]refEntry, 0, 4*len(es))
	for i := 0; i < 4; i++ {
		big = append(big, es...)
	}
	// Make the table larger than a full window: distinct keys per copy.
	for i := range big {
		k := append([]byte{byte(i / len(es))}, big[i].key...)
		big[i] = refEntry{k, big[i].value}
	}
	sortEntries(big)
	data, _ := buildTable(t, big, WriterOptions{Compression: SnappyCompression, BlockSize: 512})
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	if r.props.DataSize < 2*compactionReadahead {
		t.Fatalf("data of %d bytes: the test needs more than two full windows", r.props.DataSize)
	}
	it := r.newReadaheadIter(compactionReadahead)
	if !it.First() {
		t.Fatal(it.Error())
	}
	if n := len(*it.ra.window); n > initialReadahead {
		t.Fatalf("first window %d bytes, want at most %d", n, initialReadahead)
	}
	largest := 0
	n := 1
	for it.Next() {
		largest = max(largest, len(*it.ra.window))
		n++
	}
	if err := it.Error(); err != nil || n != len(big) {
		t.Fatalf("scanned %d of %d entries: %v", n, len(big), err)
	}
	if largest != compactionReadahead {
		t.Fatalf("largest window %d bytes, want %d", largest, compactionReadahead)
	}
	if it.ra.window != nil {
		t.Fatal("an input scanned to its end still holds its window")
	}
	// Repositioned after the end, it reads again.
	if !it.Last() || it.Key() == nil {
		t.Fatalf("Last after the end: %v", it.Error())
	}
	_ = it.Close()
}

// TestReadaheadPositionedHoldsLittle: inputs positioned but not yet read
// hold windows of their first read's size, even when the pool has
// full-size windows to give (a compaction positions all its inputs at
// once, and dozens of them holding 256 KiB each made a fill's peak heap).
func TestReadaheadPositionedHoldsLittle(t *testing.T) {
	_, es := readaheadTable(t, SnappyCompression)
	big := make([]refEntry, 0, 4*len(es))
	for i := 0; i < 4; i++ {
		for _, e := range es {
			big = append(big, refEntry{append([]byte{byte(i)}, e.key...), e.value})
		}
	}
	sortEntries(big)
	data, _ := buildTable(t, big, WriterOptions{Compression: SnappyCompression, BlockSize: 512})
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	for round := range 3 {
		// Scans to the end return full-size windows to the pool.
		var scans []*tableIter
		for range 4 {
			it := r.newReadaheadIter(compactionReadahead)
			scans = append(scans, it)
			for ok := it.First(); ok; ok = it.Next() {
			}
		}
		for _, it := range scans {
			_ = it.Close()
		}
		var held int
		for i := range 16 {
			it := r.newReadaheadIter(compactionReadahead)
			if !it.First() {
				t.Fatal(it.Error())
			}
			if c := cap(*it.ra.window); c > initialReadahead {
				t.Fatalf("round %d: positioned input %d holds a window of %d bytes, want at most %d", round, i, c, initialReadahead)
			}
			held += cap(*it.ra.window)
			defer it.Close()
		}
		t.Logf("round %d: 16 positioned inputs hold %d bytes of windows", round, held)
	}
}
