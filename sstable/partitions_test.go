package sstable

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/testutil"
	"github.com/bloomkv/bloomkv/kv"
)

// partitionReaderModes are the ways a Reader holds a partitioned table's
// partitions: resident for its life, or through a block cache large enough
// to keep them, or one so small that they are evicted and read again.
func partitionReaderModes() map[string]func() ReaderOptions {
	return map[string]func() ReaderOptions{
		"resident":   func() ReaderOptions { return ReaderOptions{Cache: NewBlockCache(1 << 20)} },
		"cached":     func() ReaderOptions { return ReaderOptions{Cache: NewBlockCache(8 << 20), CacheFilters: true} },
		"tiny-cache": func() ReaderOptions { return ReaderOptions{Cache: NewBlockCache(4 << 10), CacheFilters: true} },
		"mmap-cached": func() ReaderOptions {
			return ReaderOptions{Cache: NewBlockCache(1 << 20), CacheFilters: true, Mmap: true}
		},
	}
}

// checkAgainstReference compares scans, seeks and Gets on r with es.
func checkAgainstReference(t *testing.T, what string, r *Reader, es []refEntry, rng *rand.Rand) {
	t.Helper()
	it := r.NewIter(true)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		checkIterAt(t, what+": forward scan", it, true, es, i)
		i++
	}
	checkIterAt(t, what+": forward scan end", it, false, es, len(es))
	i = len(es) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		checkIterAt(t, what+": reverse scan", it, true, es, i)
		i--
	}
	if i != -1 {
		t.Fatalf("%s: reverse scan stopped at %d", what, i)
	}
	for range 2000 {
		k := randomSearchKey(rng, es)
		j := refSeekGE(es, k)
		checkIterAt(t, label("%s: SeekGE(%s)", what, kv.FormatInternalKey(k)), it, it.SeekGE(k), es, j)
		checkIterAt(t, label("%s: SeekLT(%s)", what, kv.FormatInternalKey(k)), it, it.SeekLT(k), es, j-1)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		uk, seq, _, _ := kv.ParseInternalKey(e.key)
		for _, s := range []uint64{seq, seq - 1, kv.MaxSeq} {
			v, k, found, err := r.Get(uk, s, true, nil)
			if err != nil {
				t.Fatalf("%s: Get(%q, %d): %v", what, uk, s, err)
			}
			wv, wk, wfound := refGet(es, uk, s)
			if found != wfound || found && (k != wk || !bytes.Equal(v, wv)) {
				t.Fatalf("%s: Get(%q, %d) = %q,%v,%v; want %q,%v,%v", what, uk, s, v, k, found, wv, wk, wfound)
			}
		}
	}
}

func TestPartitionedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	es := randomEntries(rng, testScale(6000), 4)
	for _, size := range []int{1, 64, 400} {
		for _, v := range []filter.Variant{filter.VariantStandard, filter.VariantFuse} {
			for _, format := range []uint32{FormatVersionPartitioned, FormatVersionCompactIndex} {
				o := WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, FilterVariant: v, IndexPartitionSize: size, PartitionedFormat: format}
				data, m := buildTable(t, es, o)
				if m.Props.FormatVersion != format || m.Props.IndexPartitions < 2 {
					t.Fatalf("size %d: format version %d, %d partitions; want a partitioned table of version %d", size, m.Props.FormatVersion, m.Props.IndexPartitions, format)
				}
				checkPartitionedModes(t, fmt.Sprintf("version %d, partition size %d, %s filter", format, size, v), data, es, rng)
			}
		}
	}
}

// checkPartitionedModes checks the table data against es in every
// partitionReaderModes mode.
func checkPartitionedModes(t *testing.T, what string, data []byte, es []refEntry, rng *rand.Rand) {
	t.Helper()
	for name, ro := range partitionReaderModes() {
		what := what + ", " + name
		r := mustOpenBytes(t, data, ro())
		if err := r.Check(); err != nil {
			t.Fatalf("%s: Check: %v", what, err)
		}
		checkAgainstReference(t, what, r, es, rng)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPartitionedSmallIndexStaysUnpartitioned: a table whose index does
// not fill a partition is written as before, byte for byte.
func TestPartitionedSmallIndexStaysUnpartitioned(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(33, 34)), 300, 2)
	plain, _ := buildTable(t, es, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10})
	big, m := buildTable(t, es, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, IndexPartitionSize: 1 << 20})
	if !bytes.Equal(plain, big) || m.Props.FormatVersion != FormatVersion || m.Props.IndexPartitions != 0 {
		t.Fatalf("a table whose index fits one partition changed (version %d, %d partitions)", m.Props.FormatVersion, m.Props.IndexPartitions)
	}
}

// TestPartitionedVersionsStraddlePartitions puts hundreds of versions of
// one user key (and a row of one filter key) across many partitions, one
// data block each: every version must be found, and the filter must never
// rule out a key whose entries continue into a later partition.
func TestPartitionedVersionsStraddlePartitions(t *testing.T) {
	var es []refEntry
	val := bytes.Repeat([]byte("v"), 60)
	add := func(uk string, seq uint64) {
		es = append(es, refEntry{kv.MakeInternalKey([]byte(uk), seq, kv.KindSet), append([]byte(fmt.Sprint(seq)), val...)})
	}
	for i := range 20 {
		add(fmt.Sprintf("a%03d", i), 1)
	}
	for s := uint64(600); s >= 100; s-- {
		add("hot", s)
	}
	for i := range 300 {
		add(fmt.Sprintf("row1/%04d", i), 2)
	}
	for i := range 20 {
		add(fmt.Sprintf("z%03d", i), 1)
	}
	sortEntries(es)
	prefix := func(k []byte) []byte {
		if i := bytes.IndexByte(k, '/'); i >= 0 {
			return k[:i+1]
		}
		return k
	}
	var opts []WriterOptions
	for _, format := range []uint32{FormatVersionPartitioned, FormatVersionCompactIndex} {
		// One data block per partition, and (300) many: a compact
		// partition then holds runs of "hot" entries with stored trailers
		// and delta-encoded handles.
		for _, size := range []int{1, 300} {
			opts = append(opts,
				WriterOptions{BlockSize: 200, BloomBitsPerKey: 10, IndexPartitionSize: size, PartitionedFormat: format},
				WriterOptions{BlockSize: 200, BloomBitsPerKey: 10, IndexPartitionSize: size, PartitionedFormat: format, FilterKey: prefix, FilterKeyName: "row"},
				WriterOptions{BlockSize: 200, BloomBitsPerKey: 10, IndexPartitionSize: size, PartitionedFormat: format, FilterKey: prefix, FilterKeyName: "row", FilterWholeKey: true})
		}
	}
	for _, o := range opts {
		data, m := buildTable(t, es, o)
		if o.IndexPartitionSize == 1 && m.Props.IndexPartitions < 100 || m.Props.IndexPartitions < 5 || m.Props.FormatVersion != o.PartitionedFormat {
			t.Fatalf("version %d: %d partitions for %d data blocks", m.Props.FormatVersion, m.Props.IndexPartitions, m.Props.NumDataBlocks)
		}
		for name, ro := range partitionReaderModes() {
			ropts := ro()
			ropts.FilterKey, ropts.FilterKeyName = o.FilterKey, o.FilterKeyName
			r := mustOpenBytes(t, data, ropts)
			what := fmt.Sprintf("version %d, partition size %d, %s, filter key %q, whole %v", o.PartitionedFormat, o.IndexPartitionSize, name, o.FilterKeyName, o.FilterWholeKey)
			if err := r.Check(); err != nil {
				t.Fatalf("%s: Check: %v", what, err)
			}
			var stats ReadStats
			for s := uint64(600); s >= 100; s-- {
				v, _, found, err := r.Get([]byte("hot"), s, true, &stats)
				if err != nil || !found || !bytes.HasPrefix(v, []byte(fmt.Sprint(s))) {
					t.Fatalf("%s: Get(hot, %d) = %q, %v, %v", what, s, v, found, err)
				}
			}
			for i := range 300 {
				k := []byte(fmt.Sprintf("row1/%04d", i))
				if _, _, found, err := r.Get(k, kv.MaxSeq, true, &stats); err != nil || !found {
					t.Fatalf("%s: Get(%s) = %v, %v", what, k, found, err)
				}
			}
			if n := stats.FilterNegatives.Load(); n != 0 {
				t.Fatalf("%s: %d filter negatives for present keys", what, n)
			}
			if o.FilterKey != nil {
				if may, filtered := r.PrefixMayMatch([]byte("row1/"), nil); !may || !filtered {
					t.Fatalf("%s: PrefixMayMatch(row1/) = %v, %v", what, may, filtered)
				}
			}
			checkAgainstReference(t, what, r, es, rand.New(rand.NewPCG(35, 36)))
			r.Close()
		}
	}
}

// randomKeyEntries returns n random 16-byte user keys, one version each,
// sorted.
func randomKeyEntries(rng *rand.Rand, n int) []refEntry {
	es := make([]refEntry, n)
	for i := range es {
		uk := make([]byte, 16)
		binary.BigEndian.PutUint64(uk, rng.Uint64())
		binary.BigEndian.PutUint64(uk[8:], rng.Uint64())
		es[i] = refEntry{kv.MakeInternalKey(uk, uint64(i+1), kv.KindSet), make([]byte, 100)}
	}
	sortEntries(es)
	return es
}

// TestPartitionedFilterFPR checks the partitions' false-positive rate on
// absent keys against the theory FilterSummary gives, and that an absent
// Get through a cold cache reads one filter partition and no index
// partition, a few KB, not the table's whole filter.
func TestPartitionedFilterFPR(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	es := randomKeyEntries(rng, testScale(40000))
	data, m := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10, IndexPartitionSize: 1024, Compression: NoCompression})
	r := mustOpenBytes(t, data, ReaderOptions{Cache: NewBlockCache(64 << 20), CacheFilters: true})
	defer r.Close()
	sum, ok, err := r.FilterSummary()
	if err != nil || !ok || sum.Partitions != int(m.Props.IndexPartitions) || sum.Keys != uint64(len(es)) {
		t.Fatalf("FilterSummary = %+v, %v, %v; want %d partitions over %d keys", sum, ok, err, m.Props.IndexPartitions, len(es))
	}
	probes := testScale(200000)
	var stats ReadStats
	for range probes {
		uk := make([]byte, 16)
		binary.BigEndian.PutUint64(uk, rng.Uint64())
		binary.BigEndian.PutUint64(uk[8:], rng.Uint64())
		if _, _, found, err := r.Get(uk, kv.MaxSeq, true, &stats); err != nil || found {
			t.Fatalf("Get(absent %x) = %v, %v", uk, found, err)
		}
	}
	fp := int(stats.FilterFalsePositives.Load())
	lo, hi := testutil.BinomialBounds(probes, sum.TheoreticalFPR, testutil.FPRAlpha)
	if float64(fp) < lo || float64(fp) > hi {
		t.Fatalf("%d false positives in %d probes; theory %.4f%% allows [%.0f, %.0f]", fp, probes, 100*sum.TheoreticalFPR, lo, hi)
	}
	t.Logf("%d partitions, %.2f bits/key: %d false positives in %d probes (%.3f%%, theory %.3f%%)",
		sum.Partitions, sum.BitsPerKey(), fp, probes, 100*float64(fp)/float64(probes), 100*sum.TheoreticalFPR)

	// A cold cache: one absent Get reads one filter partition.
	cold := mustOpenBytes(t, data, ReaderOptions{Cache: NewBlockCache(64 << 20), CacheFilters: true})
	defer cold.Close()
	var one ReadStats
	absent := kv.UserKey(es[len(es)/2].key)
	absent = append(append([]byte(nil), absent...), 0)
	if _, _, _, err := cold.Get(absent, kv.MaxSeq, true, &one); err != nil {
		t.Fatal(err)
	}
	if f, ix := one.FilterBlockReads.Load(), one.IndexBlockReads.Load(); f != 1 || ix > 1 {
		t.Fatalf("an absent Get read %d filter partitions and %d index partitions, want 1 and at most 1", f, ix)
	}
	if got, whole, n := one.BytesRead.Load(), m.Props.FilterSize, m.Props.IndexPartitions; one.FilterFalsePositives.Load() == 0 && got > 2*whole/n {
		t.Fatalf("an absent Get read %d bytes; the whole filter is %d in %d partitions", got, whole, n)
	}
}

// TestPartitionedPinAndMemory: pinning holds every filter partition and
// charges them to the cache; resident partitions count in FilterMemory
// and IndexMemory; Close releases the pinned charge.
func TestPartitionedPinAndMemory(t *testing.T) {
	es := randomKeyEntries(rand.New(rand.NewPCG(39, 40)), 5000)
	data, m := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10, IndexPartitionSize: 512})
	cache := NewBlockCache(8 << 20)
	r := mustOpenBytes(t, data, ReaderOptions{Cache: cache, CacheFilters: true})
	if r.FilterMemory() != 0 || r.FilterPinned() {
		t.Fatalf("cached partitions held by the reader: %d bytes", r.FilterMemory())
	}
	if err := r.PinFilter(nil); err != nil {
		t.Fatal(err)
	}
	want := int(m.Props.FilterSize) - blockTrailerLen*int(m.Props.IndexPartitions)
	if !r.FilterPinned() || r.FilterMemory() != want {
		t.Fatalf("pinned %v, %d bytes; want %d", r.FilterPinned(), r.FilterMemory(), want)
	}
	if _, pinned := cache.FilterBytes(); pinned != int64(want) {
		t.Fatalf("cache charged %d pinned bytes, want %d", pinned, want)
	}
	checkAgainstReference(t, "pinned", r, es, rand.New(rand.NewPCG(41, 42)))
	r.Close()
	if _, pinned := cache.FilterBytes(); pinned != 0 {
		t.Fatalf("%d pinned bytes after Close", pinned)
	}
	res := mustOpenBytes(t, data, ReaderOptions{})
	defer res.Close()
	if res.FilterMemory() != want || res.FilterSize() != want {
		t.Fatalf("resident filter memory %d, size %d; want %d", res.FilterMemory(), res.FilterSize(), want)
	}
	if got, min := res.IndexMemory(), int(m.Props.IndexSize)/2; got < min {
		t.Fatalf("resident index memory %d, want at least %d", got, min)
	}
}

// TestPartitionedLayout: Layout lists every block of a partitioned table,
// and they tile the file.
func TestPartitionedLayout(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(43, 44)), 2000, 3)
	data, m := buildTable(t, es, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, IndexPartitionSize: 128, RangeFilterBitsPerKey: 16})
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	blocks, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[BlockKind]int{}
	next := uint64(0)
	for _, b := range blocks {
		if b.Offset != next {
			t.Fatalf("%s at %d, the previous block ended at %d", b.Kind, b.Offset, next)
		}
		next = b.End()
		counts[b.Kind]++
	}
	if next != uint64(len(data)) {
		t.Fatalf("blocks end at %d of %d bytes", next, len(data))
	}
	n := int(m.Props.IndexPartitions)
	if counts[IndexPartitionBlock] != n || counts[FilterPartitionBlock] != n || counts[IndexBlock] != 1 ||
		counts[DataBlock] != int(m.Props.NumDataBlocks) || counts[RangeFilterBlock] != 1 {
		t.Fatalf("layout counts %v for %d partitions", counts, n)
	}
}

// partitionedRegions lists every block of a partitioned table.
func partitionedRegions(t *testing.T, data []byte) []region {
	t.Helper()
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	blocks, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var out []region
	for _, b := range blocks {
		out = append(out, region{blockKind(b.Kind), b.Offset, b.End()})
	}
	return out
}

// TestPartitionedFlippedBytes damages bytes of every block of a
// partitioned table: Open (partitions held) or the reads (partitions
// cached) report corruption of that block, and nothing wrong is returned.
func TestPartitionedFlippedBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	es := randomEntries(rng, 600, 3)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, IndexPartitionSize: 96})
	kinds := map[blockKind]bool{}
	for _, g := range partitionedRegions(t, data) {
		kinds[g.kind] = true
		for _, pos := range []uint64{g.start, (g.start + g.end) / 2, g.end - 5, g.end - 1} {
			damaged := append([]byte(nil), data...)
			damaged[pos] ^= 1 << rng.IntN(8)
			what := fmt.Sprintf("flip at %d in %s", pos, g.label())
			r, err := openBytes(damaged, ReaderOptions{Cache: NewBlockCache(1 << 20)})
			if g.kind != kindData {
				expectCorruption(t, what+": Open", err, g)
			} else {
				if err != nil {
					t.Fatalf("%s: Open: %v", what, err)
				}
				expectCorruption(t, what+": reads", readAll(t, r, es), g)
				expectCorruption(t, what+": Check", r.Check(), g)
			}
			if g.kind == kindIndexPartition || g.kind == kindFilterPartition || g.kind == kindData {
				// Partitions in the cache: found by the reads.
				r, err := openBytes(damaged, ReaderOptions{Cache: NewBlockCache(1 << 20), CacheFilters: true})
				if err != nil {
					t.Fatalf("%s: Open with cached partitions: %v", what, err)
				}
				err = readAll(t, r, es)
				if err == nil {
					err = r.Check()
				}
				expectCorruption(t, what+": cached partitions", err, g)
			}
		}
	}
	for _, k := range []blockKind{kindData, kindIndex, kindIndexPartition, kindFilterPartition, kindProperties, kindFooter} {
		if !kinds[k] {
			t.Fatalf("no %s damaged", k)
		}
	}
}

// TestPartitionedEveryByte flips every byte of a small partitioned table:
// Open, reads and Check never panic, and Open plus Check report
// corruption every time.
func TestPartitionedEveryByte(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(47, 48)), 60, 2)
	data, m := buildTable(t, es, WriterOptions{BlockSize: 128, BloomBitsPerKey: 8, IndexPartitionSize: 1})
	if m.Props.IndexPartitions < 3 {
		t.Fatalf("%d partitions", m.Props.IndexPartitions)
	}
	for pos := range data {
		damaged := append([]byte(nil), data...)
		damaged[pos] ^= 0x5a
		for _, cached := range []bool{false, true} {
			r, err := openBytes(damaged, ReaderOptions{Cache: NewBlockCache(1 << 20), CacheFilters: cached})
			if err == nil {
				readErr := readAll(t, r, es)
				err = r.Check()
				if readErr != nil && !errors.Is(readErr, kv.ErrCorruption) {
					t.Fatalf("byte %d: read error is not corruption: %v", pos, readErr)
				}
			}
			if !errors.Is(err, kv.ErrCorruption) {
				t.Fatalf("byte %d (cached %v): damage not reported as corruption: %v", pos, cached, err)
			}
		}
	}
}

// TestGoldenPartitionedTable pins a partitioned table's bytes: a change to
// the layout (partitions.go) shows here.
func TestGoldenPartitionedTable(t *testing.T) {
	var es []refEntry
	for i := range 6 {
		uk := []byte(fmt.Sprintf("key%d", i))
		es = append(es, refEntry{kv.MakeInternalKey(uk, uint64(10-i), kv.KindSet), []byte("value-" + fmt.Sprint(i))})
	}
	data, m := buildTable(t, es, WriterOptions{BlockSize: 40, BloomBitsPerKey: 10, IndexPartitionSize: 1, Compression: NoCompression, PartitionedFormat: FormatVersionPartitioned})
	r := mustOpenBytes(t, data, ReaderOptions{})
	defer r.Close()
	var layout []string
	blocks, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		layout = append(layout, fmt.Sprintf("%s@%d+%d", b.Kind, b.Offset, b.Size))
	}
	got := fmt.Sprintf("%d partitions, %d bytes, sha256 %x\n%v", m.Props.IndexPartitions, len(data), sha256.Sum256(data), layout)
	const want = `3 partitions, 542 bytes, sha256 9981115354597b8635557cc36b4cccf4554be00e706cd05ff162e91b5f65cd6b
[data block@0+49 data block@54+49 data block@108+49 filter partition@162+14 filter partition@181+14 filter partition@200+14 index partition@219+25 index partition@249+25 index partition@279+22 index block@306+76 properties block@387+86 footer@478+64]`
	if got != want {
		t.Fatalf("partitioned table changed:\n%s\nwant\n%s", got, want)
	}
}

// BenchmarkPartitionedGet compares Gets on one set of keys written whole
// and partitioned (version 4, and version 3 as "partitioned-v3"), held by
// the Reader or in the block cache.
func BenchmarkPartitionedGet(b *testing.B) {
	es := randomKeyEntries(rand.New(rand.NewPCG(49, 50)), 200000)
	for _, layout := range []struct {
		name   string
		size   int
		format uint32
	}{{"whole", 0, 0}, {"partitioned-v3", 4096, FormatVersionPartitioned}, {"partitioned", 4096, FormatVersionCompactIndex}} {
		data, _ := buildTable(b, es, WriterOptions{BloomBitsPerKey: 10, IndexPartitionSize: layout.size, PartitionedFormat: layout.format})
		for _, mode := range []struct {
			name   string
			cached bool
		}{{"held", false}, {"cached", true}} {
			r := mustOpenBytes(b, data, ReaderOptions{Cache: NewBlockCache(256 << 20), CacheFilters: mode.cached})
			rng := rand.New(rand.NewPCG(51, 52))
			b.Run(layout.name+"/"+mode.name+"/present", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					uk := kv.UserKey(es[rng.IntN(len(es))].key)
					if _, _, found, err := r.Get(uk, kv.MaxSeq, true, nil); err != nil || !found {
						b.Fatal(found, err)
					}
				}
			})
			b.Run(layout.name+"/"+mode.name+"/absent", func(b *testing.B) {
				b.ReportAllocs()
				var uk [16]byte
				for b.Loop() {
					binary.BigEndian.PutUint64(uk[:], rng.Uint64())
					binary.BigEndian.PutUint64(uk[8:], rng.Uint64())
					if _, _, found, err := r.Get(uk[:], kv.MaxSeq, true, nil); err != nil || found {
						b.Fatal(found, err)
					}
				}
			})
			r.Close()
		}
	}
}

// TestPartitionedConcurrent runs Gets, prefix probes, scans and pins of
// one partitioned table at once through a cache small enough to evict
// partitions while others read them (run it under -race): every answer
// stays right, exactly one pin wins, and Close releases its charge once.
func TestPartitionedConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	es := randomEntries(rng, testScale(4000), 3)
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, IndexPartitionSize: 128})
	cache := NewBlockCache(16 << 10)
	r := mustOpenBytes(t, data, ReaderOptions{Cache: cache, CacheFilters: true})
	const workers = 4
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			rng := rand.New(rand.NewPCG(55, uint64(w)))
			for i := range 400 {
				e := es[rng.IntN(len(es))]
				uk, seq, _, _ := kv.ParseInternalKey(e.key)
				v, k, found, err := r.Get(uk, seq, true, nil)
				wv, wk, wfound := refGet(es, uk, seq)
				if err != nil || found != wfound || found && (k != wk || !bytes.Equal(v, wv)) {
					errs <- fmt.Errorf("Get(%q, %d) = %q,%v,%v,%v; want %q,%v,%v", uk, seq, v, k, found, err, wv, wk, wfound)
					return
				}
				if i%50 == w {
					if err := r.PinFilter(nil); err != nil {
						errs <- err
						return
					}
				}
				if i%100 == 0 {
					it := r.NewIter(true)
					n := 0
					for ok := it.SeekGE(e.key); ok && n < 30; ok = it.Next() {
						n++
					}
					if err := it.Close(); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, pinned := cache.FilterBytes(); !r.FilterPinned() || pinned != int64(r.FilterMemory()) {
		t.Fatalf("pinned %v: %d bytes charged, the reader holds %d", r.FilterPinned(), pinned, r.FilterMemory())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, pinned := cache.FilterBytes(); pinned != 0 {
		t.Fatalf("%d pinned bytes after Close", pinned)
	}
}
