package sstable

import (
	"fmt"
	"math"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
)

// seqEntries returns n single-version entries "key000000".. at seq i+1.
func seqEntries(n int) []refEntry {
	es := make([]refEntry, n)
	for i := range es {
		es[i] = refEntry{kv.MakeInternalKey(fmt.Appendf(nil, "key%06d", i*2), uint64(i+1), kv.KindSet), fmt.Appendf(nil, "value%d", i)}
	}
	return es
}

// absentKey lies inside the key range but is never written.
func absentKey(i int) []byte { return fmt.Appendf(nil, "key%06d", i*2+1) }

// TestReadStatsCounts checks every ReadStats counter against what the
// lookups must have cost.
func TestReadStatsCounts(t *testing.T) {
	const n = 5000
	es := seqEntries(n)
	data, m := buildTable(t, es, WriterOptions{BloomBitsPerKey: 4})
	cache := NewBlockCache(1 << 20)
	r := mustOpenBytes(t, data, ReaderOptions{Cache: cache})

	// Present keys: one block each, the first touch of a block misses.
	var st ReadStats
	for _, e := range es {
		uk, _, _, _ := kv.ParseInternalKey(e.key)
		if _, _, found, err := r.Get(uk, kv.MaxSeq, true, &st); !found || err != nil {
			t.Fatalf("Get(%q): %v %v", uk, found, err)
		}
	}
	nb := m.Props.NumDataBlocks
	expectStats(t, "present keys", &st, 0, 0, n, n-nb, nb, m.Props.DataSize)
	if cache.Misses() != nb || cache.Hits() != n-nb {
		t.Fatalf("cache counters %d hits %d misses", cache.Hits(), cache.Misses())
	}

	// Absent keys: each is a filter negative or a false positive; false
	// positives read one or two blocks (the separator may point into a block
	// whose keys all sort before the absent key), all cached by now.
	st = ReadStats{}
	const probes = 20000
	for i := range probes {
		if _, _, found, err := r.Get(absentKey(i%n), kv.MaxSeq, true, &st); found || err != nil {
			t.Fatalf("absent key found: %v %v", found, err)
		}
	}
	neg, fp := st.FilterNegatives.Load(), st.FilterFalsePositives.Load()
	if neg+fp != probes {
		t.Fatalf("negatives %d + false positives %d != %d probes", neg, fp, probes)
	}
	reads := st.DataBlockReads.Load()
	if reads < fp || reads > 2*fp || st.BlockCacheHits.Load() != reads || st.BlockCacheMisses.Load() != 0 || st.BytesRead.Load() != 0 {
		t.Fatalf("false positives %d: block reads %d, hits %d, misses %d, bytes %d",
			fp, reads, st.BlockCacheHits.Load(), st.BlockCacheMisses.Load(), st.BytesRead.Load())
	}
	blk, _ := r.Filter()
	theory := blk.TheoreticalFPR()
	// The probed keys are 5000 distinct keys, 4 times each: the measured
	// rate is that of 5000 samples, so allow 4 standard deviations.
	rate := float64(fp) / probes
	sd := math.Sqrt(theory * (1 - theory) / n)
	if math.Abs(rate-theory) > 4*sd {
		t.Fatalf("false-positive rate %.4f, theory %.4f (sd %.4f)", rate, theory, sd)
	}

	// Without the filter nothing filter-related is counted.
	st = ReadStats{}
	for i := range 100 {
		r.Get(absentKey(i), kv.MaxSeq, false, &st)
	}
	if st.FilterNegatives.Load() != 0 || st.FilterFalsePositives.Load() != 0 || st.DataBlockReads.Load() < 100 {
		t.Fatalf("useFilter=false: %d negatives %d FPs %d reads", st.FilterNegatives.Load(), st.FilterFalsePositives.Load(), st.DataBlockReads.Load())
	}

	// Without a cache every block comes from the file.
	r2 := mustOpenBytes(t, data, ReaderOptions{})
	st = ReadStats{}
	for _, e := range es[:100] {
		r2.Get(kv.UserKey(e.key), kv.MaxSeq, true, &st)
	}
	if st.BlockCacheHits.Load()+st.BlockCacheMisses.Load() != 0 || st.DataBlockReads.Load() != 100 || st.BytesRead.Load() < 100*blockTrailerLen {
		t.Fatalf("no cache: hits %d misses %d reads %d bytes %d", st.BlockCacheHits.Load(), st.BlockCacheMisses.Load(), st.DataBlockReads.Load(), st.BytesRead.Load())
	}
	// stats may be nil.
	if _, _, found, err := r2.Get(kv.UserKey(es[0].key), kv.MaxSeq, true, nil); !found || err != nil {
		t.Fatal(found, err)
	}
}

func expectStats(t *testing.T, what string, st *ReadStats, neg, fp, reads, hits, misses, bytes uint64) {
	t.Helper()
	got := []uint64{st.FilterNegatives.Load(), st.FilterFalsePositives.Load(), st.DataBlockReads.Load(),
		st.BlockCacheHits.Load(), st.BlockCacheMisses.Load(), st.BytesRead.Load()}
	want := []uint64{neg, fp, reads, hits, misses, bytes}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: stats (neg, fp, reads, hits, misses, bytes) = %v, want %v", what, got, want)
		}
	}
}

// rowKey is a ROW-style extractor: the part of "row/column" before '/'.
func rowKey(k []byte) []byte {
	for i, c := range k {
		if c == '/' {
			return k[:i]
		}
	}
	return k
}

// TestFilterKeyExtractor checks that a table's filter is probed with the
// right key, and never when the reader cannot reproduce the table's keys.
func TestFilterKeyExtractor(t *testing.T) {
	var es []refEntry
	seq := uint64(1)
	for row := range 500 {
		for col := range 4 {
			es = append(es, refEntry{kv.MakeInternalKey(fmt.Appendf(nil, "r%04d/c%d", row*2, col), seq, kv.KindSet), []byte("v")})
			seq++
		}
	}
	rowTable, _ := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10, FilterKey: rowKey, FilterKeyName: "row"})
	wholeTable, _ := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10})

	count := func(r *Reader, keys func(i int) []byte) (neg, fp uint64) {
		var st ReadStats
		for i := range 500 {
			if _, _, found, err := r.Get(keys(i), kv.MaxSeq, true, &st); found || err != nil {
				t.Fatalf("absent key %q: %v %v", keys(i), found, err)
			}
		}
		return st.FilterNegatives.Load(), st.FilterFalsePositives.Load()
	}
	absentRow := func(i int) []byte { return fmt.Appendf(nil, "r%04d/c1", i*2+1) }
	absentCol := func(i int) []byte { return fmt.Appendf(nil, "r%04d/c9", i*2) }

	// Same extractor name: absent rows are negatives; absent columns of
	// present rows pass the filter and count as false positives.
	r := mustOpenBytes(t, rowTable, ReaderOptions{FilterKey: rowKey, FilterKeyName: "row"})
	if !r.FilterUsable() || r.Properties().FilterKeyName != "row" || r.Properties().FilterKeyCount != 500 {
		t.Fatalf("row filter: usable %v, props %+v", r.FilterUsable(), r.Properties())
	}
	if neg, fp := count(r, absentRow); neg < 480 || neg+fp != 500 {
		t.Fatalf("absent rows: %d negatives, %d FPs", neg, fp)
	}
	if neg, fp := count(r, absentCol); neg != 0 || fp != 500 {
		t.Fatalf("absent columns: %d negatives, %d FPs", neg, fp)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}

	// Reader without the extractor, or with another one: filter unused.
	for _, o := range []ReaderOptions{{}, {FilterKey: rowKey, FilterKeyName: "other"}} {
		r := mustOpenBytes(t, rowTable, o)
		if r.FilterUsable() {
			t.Fatalf("options %q: row filter usable", o.FilterKeyName)
		}
		if neg, fp := count(r, absentRow); neg != 0 || fp != 0 {
			t.Fatalf("options %q: %d negatives, %d FPs", o.FilterKeyName, neg, fp)
		}
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
	}

	// A whole-key table is probed with the whole key by any reader.
	r = mustOpenBytes(t, wholeTable, ReaderOptions{FilterKey: rowKey, FilterKeyName: "row"})
	if neg, fp := count(r, absentCol); !r.FilterUsable() || neg < 480 || neg+fp != 500 {
		t.Fatalf("whole-key table: %d negatives, %d FPs", neg, fp)
	}
	if blk, ok := r.Filter(); !ok || blk.NumKeys() != len(es) || blk.Variant() != filter.VariantStandard || r.FilterMemory() == 0 {
		t.Fatalf("whole-key filter: %v %v", blk, ok)
	}
}

// TestFilterWholeKeysAndRows: a table whose filter holds whole keys and
// rows answers Get with the whole key (absent columns of present rows are
// negatives) for any reader, prefix seeks with the row for readers with the
// extractor, and Check recounts exactly what the writer added; a byte flip
// in the filter that loses a key is found.
func TestFilterWholeKeysAndRows(t *testing.T) {
	var es []refEntry
	seq := uint64(1)
	for row := range 500 {
		for col := range 4 {
			es = append(es, refEntry{kv.MakeInternalKey(fmt.Appendf(nil, "r%04d/c%d", row*2, col), seq, kv.KindSet), []byte("v")})
			seq++
		}
	}
	data, _ := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10, FilterKey: rowKey, FilterKeyName: "row", FilterWholeKey: true})
	r := mustOpenBytes(t, data, ReaderOptions{FilterKey: rowKey, FilterKeyName: "row"})
	p := r.Properties()
	if !p.FilterWholeKeys || p.FilterKeyCount != 500+2000 {
		t.Fatalf("properties: whole keys %v, %d filter keys (want 2500)", p.FilterWholeKeys, p.FilterKeyCount)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	var st ReadStats
	for i := range 500 {
		if _, _, found, err := r.Get(fmt.Appendf(nil, "r%04d/c9", i*2), kv.MaxSeq, true, &st); found || err != nil {
			t.Fatal(found, err)
		}
	}
	if neg := st.FilterNegatives.Load(); neg < 480 {
		t.Fatalf("absent columns: %d filter negatives of 500", neg)
	}
	negRows := 0
	for i := range 500 {
		if may, filtered := r.PrefixMayMatch(fmt.Appendf(nil, "r%04d", i*2+1), nil); !may && filtered {
			negRows++
		}
		if may, _ := r.PrefixMayMatch(fmt.Appendf(nil, "r%04d", i*2), nil); !may {
			t.Fatalf("present row %d: filter says absent", i*2)
		}
	}
	if negRows < 480 {
		t.Fatalf("absent rows: %d prefix negatives of 500", negRows)
	}
	// Readers without the extractor (or with another) still use the whole keys.
	for _, o := range []ReaderOptions{{}, {FilterKey: rowKey, FilterKeyName: "other"}} {
		r := mustOpenBytes(t, data, o)
		var st ReadStats
		if _, _, found, _ := r.Get([]byte("r0002/c9"), kv.MaxSeq, true, &st); found || !r.FilterUsable() {
			t.Fatalf("%q: found %v, usable %v", o.FilterKeyName, found, r.FilterUsable())
		}
		if o.FilterKey != nil {
			if may, filtered := r.PrefixMayMatch([]byte("r0003"), nil); !may || filtered {
				t.Fatalf("%q: a row probe answered without the table's extractor", o.FilterKeyName)
			}
		} else if may, _ := r.PrefixMayMatch([]byte("r0002/c1"), nil); !may {
			// Without an extractor a prefix is a whole key.
			t.Fatal("a present whole key probed as a prefix: absent")
		}
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
