package sstable

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
)

// Partitioned index and filters (FormatVersionPartitioned, and
// FormatVersionCompactIndex, whose index partitions are encoded as
// index_compact.go says; everything else below holds for both).
//
// A table's index holds one entry per data block, and its filter a few bits
// per key: at 10M keys in 4 KiB blocks that is some 9 MiB of index and 12
// MiB of filter. Held whole per table they are memory without bound; read
// whole through the block cache, one Get's probe reads the filter of an
// 8 MiB table (about 90 KB) to test one key. A partitioned table cuts both
// into partitions of about WriterOptions.IndexPartitionSize bytes of index:
// each index partition is an index block over a run of data blocks
// (restarting every 16 entries; compact, every 8, in version 4), and its filter
// partition an ordinary filter block over the keys
// of those data blocks. A small top-level index locates them; a Get reads
// the top-level index (held for the Reader's life), then one filter
// partition and one index partition, each a few KB.
//
// # Layout
//
//	data blocks | filter partition 0 .. n-1 | index partition 0 .. n-1 |
//	[range filter] | top-level index | [range deletions] | properties | footer
//
// The footer's index handle locates the top-level index; its filter handle
// is (0, 0). The top-level index is an index block (restart at every entry)
// with one entry per partition, in order:
//
//	key:   the last key of the index partition (the separator after its
//	       last data block), so lastKey(partition) <= key <
//	       firstKey(next partition)
//	value: index partition handle (offset uvarint | size uvarint), then,
//	       when the table has a filter, the filter partition's handle
//	       (offset uvarint | size uvarint)
//
// Every partition handle lies after the data blocks and before the
// top-level index. Property 29 (IndexPartitions) counts the partitions;
// IndexSize counts the top-level index and every index partition, and
// FilterSize every filter partition, trailers included; FilterKeyCount is
// the sum of the partitions' key counts. Filter partitions are stored
// raw, index partitions compressed as data blocks are.
//
// # Filter keys across partitions
//
// Each key's filter keys go into the partition holding the key's data
// block. Versions of one user key may straddle two partitions (and a row
// of an extractor's filter key, any number): its keys are then in each
// partition that holds one of its entries. A Get for user key k probes the
// first partition whose top-level key's user key is >= k, and the next
// ones while the partition probed ends with k (its top-level key's user
// key is k): only then can k's entries continue past it. A prefix seek
// for prefix p probes from the first partition whose top-level user key
// is >= p while the one probed ends with a key starting with p.

// partition is one entry of a partitioned table's top-level index.
type partition struct {
	key    []byte // internal key: >= every key of the partition, < the next one's
	index  blockHandle
	filter blockHandle // (0, 0) without a filter
}

// userKey returns the user key of the partition's top-level key.
func (p *partition) userKey() []byte { return kv.UserKey(p.key) }

// writerPartition is a partition the Writer has cut and not yet written.
type writerPartition struct {
	key, index, filter []byte
	filterKeys         int
}

// partitionRestartInterval is the restart interval of index partitions.
// An unpartitioned index restarts at every entry: it is searched whole.
// A partition is searched after the top-level index has narrowed the
// search to it; restarting every 16 entries prefix-compresses its keys and
// drops most restart offsets, some 20% of its bytes (and so of the block
// cache it takes), for a scan of at most 15 entries.
const partitionRestartInterval = 16

// cutPartition ends the current index partition, whose last separator is
// sep, with its filter partition, and starts the next.
func (w *Writer) cutPartition(sep []byte) {
	p := writerPartition{key: append([]byte(nil), sep...)}
	switch {
	case w.cindex != nil:
		p.index = append([]byte(nil), w.cindex.finish()...)
		w.cindex.reset()
	case len(w.parts) == 0:
		// The index was built as an unpartitioned one, in case it stayed
		// within one partition; from here on it is a partition.
		var err error
		if w.opts.PartitionedFormat == FormatVersionCompactIndex {
			p.index, err = compactFromBlock(w.index.finish())
			w.cindex = newCompactIndexBuilder()
		} else {
			p.index, err = reencodeBlock(w.index.finish(), partitionRestartInterval)
			w.index = newBlockBuilder(partitionRestartInterval)
		}
		if err != nil {
			w.err = err
			return
		}
		w.index.reset()
	default:
		p.index = append([]byte(nil), w.index.finish()...)
		w.index.reset()
	}
	if w.filter != nil {
		p.filterKeys = w.filter.NumKeys()
		p.filter = w.filter.Finish()
		// The next partition's filter starts empty: a row that continues
		// into it must be added to it too.
		w.haveFilterKey = false
	}
	w.parts = append(w.parts, p)
}

// reencodeBlock returns the entries of the encoded block raw, which the
// Writer built, encoded again with restartInterval.
func reencodeBlock(raw []byte, restartInterval int) ([]byte, error) {
	b, err := decodeBlock(raw, location{file: "the writer's index", kind: kindIndexPartition})
	if err != nil {
		return nil, fmt.Errorf("bloomkv/sstable: re-encoding the first index partition: %w", err)
	}
	out := newBlockBuilder(restartInterval)
	var it blockIter
	it.init(b)
	for ok := it.First(); ok; ok = it.Next() {
		out.add(it.Key(), it.Value())
	}
	return append([]byte(nil), out.finish()...), nil
}

// writePartitions writes the filter partitions, the index partitions, the
// range filter and the top-level index, and returns the footer locating
// the top-level index.
func (w *Writer) writePartitions() footer {
	ft := footer{version: w.opts.PartitionedFormat}
	fltHandles := make([]blockHandle, len(w.parts))
	if w.filter != nil {
		w.props.FilterVariant = uint8(w.filter.Variant())
		w.props.FilterKeyCount = 0
		w.props.FilterSize = 0
		for i, p := range w.parts {
			fltHandles[i] = w.writeBlock(p.filter, NoCompression)
			w.props.FilterKeyCount += uint64(p.filterKeys)
			w.props.FilterSize += fltHandles[i].size + blockTrailerLen
		}
	}
	top := newBlockBuilder(1)
	w.props.IndexSize = 0
	for i, p := range w.parts {
		h := w.writeBlock(p.index, w.opts.Compression)
		w.props.IndexSize += h.size + blockTrailerLen
		v := appendHandle(w.handleScratch[:0], h)
		if w.filter != nil {
			v = appendHandle(v, fltHandles[i])
		}
		w.handleScratch = v
		top.add(p.key, v)
	}
	w.writeRangeFilter()
	ft.index = w.writeBlock(top.finish(), w.opts.Compression)
	w.props.IndexSize += ft.index.size + blockTrailerLen
	w.props.IndexPartitions = uint64(len(w.parts))
	w.parts = nil
	return ft
}

// decodePartitions decodes a partitioned table's top-level index and
// checks its handles: every partition lies among the metadata blocks
// ([DataSize, top-level index)), and the table has a filter partition
// for each partition exactly when its properties describe a filter.
func (r *Reader) decodePartitions() error {
	loc := location{r.name, kindIndex, r.footer.index.offset}
	n := uint64(r.index.numEntries)
	if n == 0 || n != r.props.IndexPartitions {
		return loc.corruptf("%d partitions in the top-level index, the properties say %d", n, r.props.IndexPartitions)
	}
	hasFilter := r.props.FilterVariant != 0
	lo, hi := r.props.DataSize, r.footer.index.offset
	inMeta := func(h blockHandle) bool {
		return h.offset >= lo && h.offset <= hi && h.size <= hi-h.offset && blockTrailerLen <= hi-h.offset-h.size
	}
	r.parts = make([]partition, 0, n)
	var it blockIter
	it.init(r.index)
	var idxBytes, fltBytes uint64
	for ok := it.First(); ok; ok = it.Next() {
		p := partition{key: append([]byte(nil), it.Key()...)}
		v := it.Value()
		var ok1, ok2 bool
		var m int
		p.index, m, ok1 = decodeHandlePrefix(v)
		switch {
		case !ok1:
		case hasFilter:
			p.filter, ok2 = decodeHandle(v[m:])
		default:
			ok2 = m == len(v)
		}
		if !ok1 || !ok2 || !inMeta(p.index) || hasFilter && (p.filter.size == 0 || !inMeta(p.filter)) {
			return loc.corruptf("entry %s: bad partition handles %x (metadata lies in [%d, %d))", formatKey(p.key), v, lo, hi)
		}
		idxBytes += p.index.size + blockTrailerLen
		if hasFilter {
			fltBytes += p.filter.size + blockTrailerLen
		}
		r.parts = append(r.parts, p)
	}
	if r.index.numRestarts != len(r.parts) {
		return loc.corruptf("%d restarts for %d entries (the top-level index restarts at every entry)", r.index.numRestarts, len(r.parts))
	}
	r.index.buildRestartPrefixes()
	if want := r.props.IndexSize; idxBytes+r.footer.index.size+blockTrailerLen != want {
		return loc.corruptf("partitions and top-level index take %d bytes, the properties say %d", idxBytes+r.footer.index.size+blockTrailerLen, want)
	}
	if fltBytes != r.props.FilterSize {
		return loc.corruptf("filter partitions take %d bytes, the properties say %d", fltBytes, r.props.FilterSize)
	}
	return nil
}

// decodeIndexPartition validates an index partition read from the table:
// compact in a version 4 table, an ordinary index block in version 3.
func (r *Reader) decodeIndexPartition(raw []byte, loc location) (*block, error) {
	if r.footer.version == FormatVersionCompactIndex {
		return decodeCompactIndex(raw, loc)
	}
	return decodeBlock(raw, loc)
}

// partitioned reports whether the table's index and filter are partitioned.
func (r *Reader) partitioned() bool { return r.parts != nil }

// hasFilter reports whether the table has a filter: one block, or one
// partition per index partition.
func (r *Reader) hasFilter() bool {
	return r.footer.hasFilter() || r.partitioned() && r.props.FilterVariant != 0
}

// findPartition returns the first partition whose top-level key's user
// key is >= ukey (len(r.parts) when there is none): the first that can
// hold an entry of ukey, or of a key after it.
func (r *Reader) findPartition(ukey []byte) int {
	return sort.Search(len(r.parts), func(i int) bool {
		return bytes.Compare(r.parts[i].userKey(), ukey) >= 0
	})
}

// findPartitionInternal returns the first partition whose top-level key is
// >= ikey: the one holding the first index entry >= ikey, if any. The
// top-level index restarts at every entry, so its restart i is partition
// i, and its restart prefixes speed the search.
func (r *Reader) findPartitionInternal(ikey []byte) int {
	return r.index.searchRestarts(ikey)
}

// indexPartition returns index partition i: resident when the Reader
// holds its partitions, else from the block cache, read (and cached, with
// fill) on a miss, counted in stats (may be nil).
func (r *Reader) indexPartition(i int, fill bool, stats *ReadStats) (*block, error) {
	if r.residentIndex != nil {
		return r.residentIndex[i], nil
	}
	h := r.parts[i].index
	if b := r.cache.acquire(r.fileNum, h.offset, false); b != nil {
		return b, nil
	}
	raw, err := r.readBlock(h, kindIndexPartition)
	if stats != nil {
		stats.BytesRead.Add(h.size + blockTrailerLen)
		stats.IndexBlockReads.Add(1)
	}
	if err != nil {
		return nil, err
	}
	b, err := r.decodeIndexPartition(raw, location{r.name, kindIndexPartition, h.offset})
	if err != nil {
		return nil, err
	}
	if fill {
		r.cache.setIndex(r.fileNum, h.offset, b)
	}
	return b, nil
}

// filterPartition returns filter partition i: resident, pinned, or from
// the block cache, read and cached on a miss (counted in stats, which may
// be nil).
func (r *Reader) filterPartition(i int, ifCached bool, stats *ReadStats) (*filter.Block, error) {
	if r.residentFilters != nil {
		return &r.residentFilters[i], nil
	}
	if p := r.pinnedParts.Load(); p != nil {
		return &(*p)[i].Block, nil
	}
	h := r.parts[i].filter
	if b := r.cache.getFilter(r.fileNum, h.offset); b != nil {
		return &b.Block, nil
	}
	if ifCached {
		return nil, nil
	}
	b, err := r.readFilterAt(h, kindFilterPartition, stats)
	if err != nil {
		return nil, err
	}
	r.cache.setFilter(r.fileNum, h.offset, b)
	return &b.Block, nil
}

// loadResidentPartitions reads every index partition and, without
// CacheFilters, every filter partition at Open, for a Reader that holds
// them for its life as it holds an unpartitioned table's index and filter.
func (r *Reader) loadResidentPartitions(cacheMeta bool) error {
	if cacheMeta {
		return nil
	}
	r.residentIndex = make([]*block, len(r.parts))
	for i, p := range r.parts {
		raw, err := r.readOpenBlock(p.index, kindIndexPartition)
		if err != nil {
			return err
		}
		b, err := r.decodeIndexPartition(raw, location{r.name, kindIndexPartition, p.index.offset})
		if err != nil {
			return err
		}
		b.buildRestartPrefixes()
		r.residentIndex[i] = b
	}
	if r.props.FilterVariant == 0 {
		return nil
	}
	r.residentFilters = make([]filter.Block, len(r.parts))
	for i, p := range r.parts {
		raw, err := r.readOpenBlock(p.filter, kindFilterPartition)
		if err != nil {
			return err
		}
		if r.residentFilters[i], err = filter.DecodeBlock(raw); err != nil {
			return location{r.name, kindFilterPartition, p.filter.offset}.wrapCorruption(err)
		}
		r.filterBytes += len(raw)
	}
	return nil
}

// partitionsMayContain probes the filter partitions that can hold entries
// of user key ukey with fk (ukey, or its filter key) and reports whether
// one says "maybe".
//
// first is findPartition(ukey), which the caller has found.
func (r *Reader) partitionsMayContain(ukey, fk []byte, first int, ifCached bool, stats *ReadStats) (may, skipped bool, err error) {
	for i := first; i < len(r.parts); i++ {
		flt, err := r.filterPartition(i, ifCached, stats)
		if err != nil {
			return false, false, err
		}
		if flt == nil {
			return true, true, nil
		}
		if flt.MayContain(fk) {
			return true, false, nil
		}
		if !bytes.Equal(r.parts[i].userKey(), ukey) {
			break
		}
	}
	return false, false, nil
}

// partitionsMayContainPrefix is partitionsMayContain for the filter key
// prefix of a prefix seek: the partitions from the first that can hold a
// key starting with prefix while the one probed ends with such a key.
func (r *Reader) partitionsMayContainPrefix(prefix []byte, stats *ReadStats) (bool, error) {
	for i := r.findPartition(prefix); i < len(r.parts); i++ {
		flt, err := r.filterPartition(i, false, stats)
		if err != nil {
			return false, err
		}
		if flt.MayContain(prefix) {
			return true, nil
		}
		if !bytes.HasPrefix(r.parts[i].userKey(), prefix) {
			break
		}
	}
	return false, nil
}

// pinPartitions is PinFilter for a partitioned table: every filter
// partition, held together.
func (r *Reader) pinPartitions(stats *ReadStats) error {
	pinned := make([]*residentFilter, len(r.parts))
	for i, p := range r.parts {
		b := r.cache.getFilter(r.fileNum, p.filter.offset)
		if b == nil {
			var err error
			if b, err = r.readFilterAt(p.filter, kindFilterPartition, stats); err != nil {
				return err
			}
		}
		pinned[i] = b
	}
	if !r.pinnedParts.CompareAndSwap(nil, &pinned) {
		return nil // another Get pinned them first
	}
	r.cache.pin(pinnedSize(pinned))
	if r.closed.Load() {
		r.unpinFilter()
	}
	return nil
}

// pinnedSize sums the charges of pinned filter partitions.
func pinnedSize(parts []*residentFilter) (n int64) {
	for _, p := range parts {
		n += p.size
	}
	return n
}

// FilterSummary describes a table's filter as a whole: its one block, or
// its partitions together.
type FilterSummary struct {
	Variant    filter.Variant
	Keys       uint64 // distinct keys the filter was built from (summed over partitions)
	Bits       uint64 // bits of its arrays or fingerprints
	NumProbes  int    // hash functions per key (of the first partition)
	Partitions int    // 0 for a filter block
	// TheoreticalFPR is the false-positive rate theory gives an absent key
	// probing the filter: for partitions, their rates weighted by their
	// keys (a uniformly random absent key probes the partition whose key
	// range it falls in, about in proportion to its keys).
	TheoreticalFPR float64
}

// BitsPerKey returns the filter's bits per distinct key (0 when empty).
func (s FilterSummary) BitsPerKey() float64 {
	if s.Keys == 0 {
		return 0
	}
	return float64(s.Bits) / float64(s.Keys)
}

// FilterSummary returns the table's filter described as a whole; ok is
// false when the table has none. A partition that cannot be read is an
// error.
func (r *Reader) FilterSummary() (s FilterSummary, ok bool, err error) {
	if !r.hasFilter() {
		return FilterSummary{}, false, nil
	}
	add := func(b *filter.Block) {
		if s.Keys == 0 && s.Bits == 0 {
			s.Variant, s.NumProbes = b.Variant(), b.NumProbes()
		}
		s.Keys += uint64(b.NumKeys())
		s.Bits += b.Bits()
		s.TheoreticalFPR += b.TheoreticalFPR() * float64(b.NumKeys())
	}
	if !r.partitioned() {
		b, err := r.filterBlock(false, nil)
		if err != nil {
			return FilterSummary{}, false, err
		}
		add(b)
	} else {
		s.Partitions = len(r.parts)
		for i := range r.parts {
			b, err := r.filterPartition(i, false, nil)
			if err != nil {
				return FilterSummary{}, false, err
			}
			add(b)
		}
	}
	if s.Keys > 0 {
		s.TheoreticalFPR /= float64(s.Keys)
	}
	return s, true, nil
}

// FilterMayContain probes the table's filter for user key ukey with fk
// (ukey itself for a filter over whole keys, or its filter key): the
// filter block, or the partitions that can hold ukey. A table without a
// filter may contain anything.
func (r *Reader) FilterMayContain(ukey, fk []byte) (bool, error) {
	if !r.hasFilter() {
		return true, nil
	}
	first := -1
	if r.partitioned() {
		first = r.findPartition(ukey)
	}
	may, _, err := r.mayContain(ukey, fk, first, false, nil)
	return may, err
}
