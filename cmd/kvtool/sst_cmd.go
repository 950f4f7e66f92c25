package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/dustin/go-humanize"
)

// fpProbes is how many absent keys measure a filter's false-positive rate:
// enough for about +-0.1% absolute at a 1% rate.
const fpProbes = 10000

func runSST(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("sst", "[-blocks] FILE", stderr)
	listBlocks := flags.Bool("blocks", false, "also list every block: offset, size, kind, compression, entries")
	path, code, ok := parseFlags(flags, args, "table file", stderr)
	if !ok {
		return code
	}
	r, err := openTable(vfs.Default, path)
	if err != nil {
		fmt.Fprintf(stdout, "ERROR: %v\n", err)
		fmt.Fprintf(stderr, "kvtool: %s cannot be opened\n", path)
		return exitProblems
	}
	defer r.Close()
	if describeTable(stdout, r, *listBlocks) {
		return exitOK
	}
	fmt.Fprintf(stderr, "kvtool: %s has problems\n", path)
	return exitProblems
}

// openTable opens a table file read-only. The file number, which only keys
// caches, comes from the name when it is a table name.
func openTable(fs vfs.FS, path string) (*sstable.Reader, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var num uint64
	if t, n, ok := base.ParseFilename(filepath.Base(path)); ok && t == base.FileTypeTable {
		num = n
	}
	return sstable.Open(f, path, num, info.Size(), sstable.ReaderOptions{})
}

// tableScan is what one pass over a table's entries counts.
type tableScan struct {
	userKeys      uint64
	blockEntries  []uint64 // per data block, in Layout order
	blockRawBytes []uint64 // key and value bytes per data block
	probed        uint64   // user keys probed against the filter
	missing       uint64   // of those, absent from the filter: must be 0
	firstMissing  []byte
	err           error
}

// scanTable walks every entry once, attributing it to its data block by
// the index keys (lastKey(block) <= indexKey < firstKey(next block)), and
// probes a whole-key filter with every distinct user key.
func scanTable(r *sstable.Reader, data []sstable.BlockInfo) tableScan {
	s := tableScan{blockEntries: make([]uint64, len(data)), blockRawBytes: make([]uint64, len(data))}
	_, hasFilter, _ := r.FilterSummary()
	probe := hasFilter && r.FilterUsable() && r.Properties().FilterKeyName == ""
	it := r.NewIter(false)
	defer it.Close()
	var prevUser []byte
	bi := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		for bi < len(data) && base.CompareInternal(k, data[bi].IndexKey) > 0 {
			bi++
		}
		if bi < len(data) {
			s.blockEntries[bi]++
			s.blockRawBytes[bi] += uint64(len(k) + len(it.Value()))
		}
		uk := base.UserKey(k)
		if prevUser != nil && bytes.Equal(uk, prevUser) {
			continue
		}
		s.userKeys++
		prevUser = append(prevUser[:0], uk...)
		if probe {
			s.probed++
			if may, err := r.FilterMayContain(uk, uk); err == nil && !may {
				if s.missing == 0 {
					s.firstMissing = append([]byte(nil), k...)
				}
				s.missing++
			}
		}
	}
	s.err = it.Error()
	return s
}

// measureFPR probes the filter with random keys the table does not hold
// and returns the fraction it wrongly admits. For whole-key filters a
// "maybe" is confirmed absent with a lookup; extractor filters are probed
// with random 16-byte filter keys, which collide with a real one with
// negligible probability.
func measureFPR(r *sstable.Reader) (rate float64, n int, err error) {
	if _, ok, err := r.FilterSummary(); !ok || err != nil {
		return 0, 0, err
	}
	wholeKey := r.Properties().FilterKeyName == ""
	rng := rand.New(rand.NewPCG(0x6b76746f6f6c, 1)) // fixed: runs are repeatable
	key := make([]byte, 16)
	fp := 0
	for n < fpProbes {
		for i := 0; i < len(key); i += 8 {
			v := rng.Uint64()
			for j := 0; j < 8; j++ {
				key[i+j] = byte(v >> (8 * j))
			}
		}
		may, err := r.FilterMayContain(key, key)
		if err != nil {
			return 0, n, err
		}
		if !may {
			n++
			continue
		}
		if wholeKey {
			_, _, found, err := r.Get(key, base.MaxSeq, false, nil)
			if err != nil {
				return 0, n, err
			}
			if found {
				continue // present: not a probe of an absent key
			}
		}
		n++
		fp++
	}
	return float64(fp) / float64(n), n, nil
}

// describeTable prints everything kvtool knows about a table and runs its
// full check. It returns false when anything is wrong.
func describeTable(w io.Writer, r *sstable.Reader, listBlocks bool) bool {
	p := r.Properties()
	healthy := true
	fmt.Fprintf(w, "table  %s\nsize   %d bytes (file number %d)\n", r.Name(), r.Size(), r.FileNum())

	fmt.Fprintf(w, "\nproperties:\n")
	renderProperties(w, p)

	fmt.Fprintf(w, "\nkey range:\n")
	t := newTable(w)
	row(t, "  smallest", fmtKey(p.SmallestKey))
	row(t, "  largest", fmtKey(p.LargestKey))
	row(t, "  sequences", fmt.Sprintf("%d-%d", p.SmallestSeq, p.LargestSeq))
	if p.NumRangeDels > 0 {
		lo, hi, loSeq, hiSeq := r.Bounds()
		row(t, "  bounds", fmt.Sprintf("%s - %s, sequences %d-%d (entries and range deletions)", fmtKey(lo), fmtKey(hi), loSeq, hiSeq))
	}
	t.Flush()

	blocks, err := r.Layout()
	if err != nil {
		fmt.Fprintf(w, "\nERROR: layout: %v\n", err)
		return false
	}
	var data []sstable.BlockInfo
	for _, b := range blocks {
		if b.Kind == sstable.DataBlock {
			data = append(data, b)
		}
	}
	scan := scanTable(r, data)
	fmt.Fprintf(w, "  %d entries (%d deletions) over %d user keys\n", p.NumEntries, p.NumDeletions, scan.userKeys)
	if scan.err != nil {
		fmt.Fprintf(w, "ERROR: scan: %v\n", scan.err)
		healthy = false
	}

	if rd := r.RangeDels(); rd != nil {
		fmt.Fprintf(w, "\nrange deletions (fragments: [start, end) and the sequences deleting it, newest first):\n")
		for i, sp := range rd.Spans() {
			if i == 20 && len(rd.Spans()) > 21 {
				fmt.Fprintf(w, "  ... %d more\n", len(rd.Spans())-i)
				break
			}
			fmt.Fprintf(w, "  [%s, %s) %v\n", fmtUserKey(sp.Start), fmtUserKey(sp.End), sp.Seqs)
		}
	}

	fmt.Fprintf(w, "\nblocks:\n")
	printBlockSummary(w, blocks, scan)
	if listBlocks {
		fmt.Fprintln(w)
		printBlockList(w, blocks, scan)
	}

	fmt.Fprintf(w, "\nfilter:\n")
	if !printFilter(w, r, scan) {
		healthy = false
	}

	if err := r.Check(); err != nil {
		fmt.Fprintf(w, "\ncheck: ERROR: %v\n", err)
		return false
	}
	if healthy {
		fmt.Fprintf(w, "\ncheck: ok (every checksum, key order, index, properties and filter verified)\n")
	}
	return healthy
}

// printBlockSummary prints per-kind counts and sizes, and per-data-block
// averages.
func printBlockSummary(w io.Writer, blocks []sstable.BlockInfo, scan tableScan) {
	type agg struct {
		count, snappy        int
		onDisk, minSz, maxSz uint64
		stored               uint64
	}
	kinds := []sstable.BlockKind{sstable.DataBlock, sstable.FilterBlock, sstable.IndexBlock, sstable.PropertiesBlock, sstable.RangeDelBlock, sstable.FooterBlock}
	aggs := map[sstable.BlockKind]*agg{}
	for _, b := range blocks {
		a := aggs[b.Kind]
		if a == nil {
			a = &agg{minSz: b.Size}
			aggs[b.Kind] = a
		}
		a.count++
		a.onDisk += b.End() - b.Offset
		a.stored += b.Size
		a.minSz, a.maxSz = min(a.minSz, b.Size), max(a.maxSz, b.Size)
		if b.Compression == sstable.SnappyCompression {
			a.snappy++
		}
	}
	t := newTable(w)
	row(t, "  KIND", "COUNT", "ON DISK", "MIN", "AVG", "MAX", "SNAPPY", "RAW")
	for _, k := range kinds {
		a := aggs[k]
		if a == nil {
			continue
		}
		raw := a.count - a.snappy
		if k == sstable.FooterBlock {
			raw = 0
		}
		row(t, "  "+k.String(), a.count, a.onDisk, a.minSz, fmt.Sprintf("%.0f", float64(a.stored)/float64(a.count)), a.maxSz, a.snappy, raw)
	}
	t.Flush()
	fmt.Fprintln(w, "  (ON DISK includes the 5-byte trailers; MIN/AVG/MAX are stored block sizes without them)")
	if d := aggs[sstable.DataBlock]; d != nil && len(scan.blockEntries) > 0 {
		lo, hi, sum, raw := scan.blockEntries[0], scan.blockEntries[0], uint64(0), uint64(0)
		for i, n := range scan.blockEntries {
			lo, hi, sum = min(lo, n), max(hi, n), sum+n
			raw += scan.blockRawBytes[i]
		}
		fmt.Fprintf(w, "  data: %.1f entries per block (min %d, max %d); %s of keys and values stored in %s (%.2fx)\n",
			float64(sum)/float64(len(scan.blockEntries)), lo, hi, humanize.IBytes(raw), humanize.IBytes(d.stored),
			float64(raw)/float64(max(d.stored, 1)))
	}
}

// printBlockList prints one line per block.
func printBlockList(w io.Writer, blocks []sstable.BlockInfo, scan tableScan) {
	t := newTable(w)
	row(t, "  OFFSET", "SIZE", "KIND", "COMPRESSION", "ENTRIES", "INDEX KEY")
	di := 0
	for _, b := range blocks {
		entries, key, comp := "-", "", b.Compression.String()
		if b.Kind == sstable.FooterBlock {
			comp = "-"
		}
		if b.Kind == sstable.DataBlock {
			entries = fmt.Sprint(scan.blockEntries[di])
			key = shorten(fmtKey(b.IndexKey))
			di++
		}
		row(t, fmt.Sprintf("  %d", b.Offset), b.Size, b.Kind, comp, entries, key)
	}
	t.Flush()
}

// printFilter prints the filter's shape, its theoretical and measured
// false-positive rates, and the membership probe. It returns false when
// a key of the table is missing from its filter.
func printFilter(w io.Writer, r *sstable.Reader, scan tableScan) bool {
	fb, ok, err := r.FilterSummary()
	p := r.Properties()
	if err != nil {
		fmt.Fprintf(w, "  unreadable: %v\n", err)
		return false
	}
	if !ok {
		fmt.Fprintf(w, "  none (written with BloomBitsPerKey %d): every Get reads a data block\n", p.BloomBitsPerKey)
		return true
	}
	variant := variantWords(fb.Variant)
	builtOver := filterKeyWords(p)
	t := newTable(w)
	row(t, "  variant", variant)
	row(t, "  bits", fmt.Sprintf("%d (%s in memory)", fb.Bits, humanize.IBytes(uint64(r.FilterMemory()))))
	row(t, "  keys", fmt.Sprintf("%d distinct, %.2f bits/key (configured %g)", fb.Keys, fb.BitsPerKey(), p.BitsPerKey()))
	row(t, "  probes (k)", fb.NumProbes)
	if fb.Partitions > 0 {
		row(t, "  partitions", fb.Partitions)
	}
	row(t, "  built over", builtOver)
	rate, n, err := measureFPR(r)
	if err != nil {
		row(t, "  false positives", fmt.Sprintf("theory %.3f%%, measurement failed: %v", 100*fb.TheoreticalFPR, err))
	} else {
		row(t, "  false positives", fmt.Sprintf("theory %.3f%%, measured %.3f%% over %d absent keys", 100*fb.TheoreticalFPR, 100*rate, n))
	}
	healthy := true
	switch {
	case scan.probed == 0 && p.FilterKeyName != "":
		row(t, "  membership", "not verified: kvtool does not know the extractor")
	case scan.missing > 0:
		row(t, "  membership", fmt.Sprintf("ERROR: %d of %d user keys absent from the filter (first %s): Gets would miss them",
			scan.missing, scan.probed, fmtKey(scan.firstMissing)))
		healthy = false
	default:
		row(t, "  membership", fmt.Sprintf("every user key present (%d probed)", scan.probed))
	}
	t.Flush()
	return healthy
}
