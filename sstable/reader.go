package sstable

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/golang/snappy"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/rangedel"
	"github.com/bloomkv/bloomkv/vfs"
)

// Reader reads one table. Its footer, properties, index block and filter
// block are read at Open and stay in memory; data blocks are read on demand
// through the block cache (with ReaderOptions.CacheFilters the filter block
// too). A Reader is safe for concurrent use; all fields but the pinned
// filter are constant after Open.
type Reader struct {
	file    vfs.File
	name    string
	fileNum uint64
	size    int64
	cache   *BlockCache
	footer  footer
	props   Properties
	index   *block

	// rangeDels are the table's range tombstones (nil: none), decoded at
	// Open and held for the Reader's life: Get consults them whatever the
	// filter says.
	rangeDels *rangedel.List
	// rangeFilter is the table's range filter (nil: none), decoded at Open
	// and held for the Reader's life (rangefilter.go).
	rangeFilter *filter.RangeFilter

	// parts is a partitioned table's top-level index, decoded
	// (partitions.go); nil for any other table. residentIndex and
	// residentFilters hold its partitions when the Reader keeps them for
	// its life (without CacheFilters); filterBytes is the resident filter
	// partitions' size; pinnedParts the filter partitions PinFilter pins.
	parts           []partition
	residentIndex   []*block
	residentFilters []filter.Block
	filterBytes     int
	pinnedParts     atomic.Pointer[[]*residentFilter]

	filterData []byte
	filter     filter.Block
	// cacheFilter: the filter is not held from Open but found through the
	// block cache, or pinned (filter_cache.go).
	cacheFilter  bool
	pinnedFilter atomic.Pointer[residentFilter]
	filterMode   filterMode
	filterKey    func([]byte) []byte // the reader's extractor, when the table's filter keys are its
	// getProbe and prefixProbe say what Get and a prefix seek may probe the
	// filter with (see chooseProbes).
	getProbe, prefixProbe probe

	// mapped is the file mapped read-only (ReaderOptions.Mmap), nil when
	// blocks are read with pread; unmap releases it at Close.
	mapped []byte
	unmap  func() error

	closed atomic.Bool

	// pre holds, during Open only, the blocks an earlier Reader of the
	// table read; kept the blocks this Open read (or took from pre), for
	// the next Reader; openRead the bytes Open read from the file.
	pre      *openBlocks
	kept     openBlocks
	openRead uint64
}

// filterMode says what a table's filter holds that the reader can name.
type filterMode uint8

const (
	filterNone        filterMode = iota // no filter, or one built with an extractor we lack
	filterByUserKey                     // built over whole user keys
	filterByExtractor                   // built over FilterKey(userKey) with our extractor's name
)

// probe is what a lookup may probe a table's filter with, never risking a
// false negative.
type probe uint8

const (
	probeNone      probe = iota // the filter cannot answer: read the table
	probeWholeKey               // the user key (Get), or the prefix given as a whole key
	probeFilterKey              // the reader's FilterKey of the user key (Get), or the prefix
)

// Open reads a table's footer, properties, index and filter blocks. name
// labels errors; fileNum keys the block cache; size is the file size. On
// error Open closes f.
func Open(f vfs.File, name string, fileNum uint64, size int64, o ReaderOptions) (*Reader, error) {
	return openWith(f, name, fileNum, size, o, nil)
}

// openWith is Open taking what it can of the footer and the blocks it reads
// from pre, the blocks an earlier Reader of the table read
// (open_blocks.go), instead of from the file.
func openWith(f vfs.File, name string, fileNum uint64, size int64, o ReaderOptions, pre *openBlocks) (*Reader, error) {
	r := &Reader{file: f, name: name, fileNum: fileNum, size: size, cache: o.Cache, pre: pre}
	if o.Mmap {
		r.mapFile()
	}
	err := r.open(o)
	r.pre = nil
	if err != nil {
		r.unmapFile()
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) open(o ReaderOptions) error {
	if r.size < footerLen {
		return location{r.name, kindFooter, 0}.corruptf("file of %d bytes is shorter than the %d-byte footer", r.size, footerLen)
	}
	loc := location{r.name, kindFooter, uint64(r.size) - footerLen}
	buf, ok := r.pre.find(loc.offset)
	if !ok || len(buf) != footerLen {
		buf = make([]byte, footerLen)
		if err := r.readAt(buf, loc); err != nil {
			return err
		}
		r.openRead += footerLen
	}
	if r.cache != nil {
		r.kept.keep(loc.offset, buf)
	}
	ft, err := decodeFooter(buf, uint64(r.size), loc)
	if err != nil {
		return err
	}
	r.footer = ft

	raw, err := r.readOpenBlock(ft.props, kindProperties)
	if err != nil {
		return err
	}
	propsLoc := location{r.name, kindProperties, ft.props.offset}
	if r.props, err = decodeProperties(raw, propsLoc); err != nil {
		return err
	}
	if err := r.checkPropertiesAgainstFooter(propsLoc); err != nil {
		return err
	}

	if raw, err = r.readOpenBlock(ft.index, kindIndex); err != nil {
		return err
	}
	indexLoc := location{r.name, kindIndex, ft.index.offset}
	if r.index, err = decodeBlock(raw, indexLoc); err != nil {
		return err
	}
	cacheMeta := o.CacheFilters && o.Cache != nil
	if ft.partitioned() {
		if err := r.decodePartitions(); err != nil {
			return err
		}
		if err := r.loadResidentPartitions(cacheMeta); err != nil {
			return err
		}
	} else if uint64(r.index.numEntries) != r.props.NumDataBlocks {
		return indexLoc.corruptf("%d entries for %d data blocks", r.index.numEntries, r.props.NumDataBlocks)
	} else {
		r.index.buildRestartPrefixes()
	}

	if r.props.NumRangeDels > 0 {
		h := blockHandle{r.props.RangeDelOffset, r.props.RangeDelSize}
		if raw, err = r.readOpenBlock(h, kindRangeDel); err != nil {
			return err
		}
		loc := location{r.name, kindRangeDel, h.offset}
		if r.rangeDels, err = rangedel.Decode(raw, maxRangeDelKey); err != nil {
			return loc.corruptf("%v", err)
		}
		if n := uint64(r.rangeDels.Len()); n != r.props.NumRangeDels {
			return loc.corruptf("%d range deletions, the properties say %d", n, r.props.NumRangeDels)
		}
	}

	if err := r.openRangeFilter(); err != nil {
		return err
	}

	if r.hasFilter() {
		r.cacheFilter = cacheMeta
		if !r.cacheFilter && !r.partitioned() {
			if r.filterData, err = r.readOpenBlock(ft.filter, kindFilter); err != nil {
				return err
			}
			if r.filter, err = filter.DecodeBlock(r.filterData); err != nil {
				return location{r.name, kindFilter, ft.filter.offset}.wrapCorruption(err)
			}
		}
		r.filterMode = chooseFilterMode(r.props.FilterKeyName, o)
		if r.filterMode == filterByExtractor {
			r.filterKey = o.FilterKey
		}
		r.getProbe, r.prefixProbe = chooseProbes(&r.props, r.filterMode, o)
	}
	return nil
}

// readOpenBlock is readBlock for the blocks Open reads: taken from the
// blocks an earlier Reader read when they are there, and kept for a later
// one (open_blocks.go).
func (r *Reader) readOpenBlock(h blockHandle, kind blockKind) ([]byte, error) {
	data, ok := r.pre.find(h.offset)
	if !ok {
		var err error
		if data, err = r.readBlock(h, kind); err != nil {
			return nil, err
		}
		r.openRead += h.size + blockTrailerLen
	}
	if r.cache != nil {
		r.kept.keep(h.offset, data)
	}
	return data, nil
}

// keptOpenBlocks returns the blocks Open read, for the next Reader of the
// table; nil without a block cache to keep them in.
func (r *Reader) keptOpenBlocks() *openBlocks {
	if r.cache == nil {
		return nil
	}
	return &r.kept
}

// chooseFilterMode decides how a table's filter may be probed without ever
// risking a false negative.
func chooseFilterMode(tableKeyName string, o ReaderOptions) filterMode {
	switch {
	case tableKeyName == "":
		return filterByUserKey
	case o.FilterKey != nil && o.FilterKeyName == tableKeyName:
		return filterByExtractor
	}
	return filterNone
}

// chooseProbes decides what Get and prefix seeks may probe the filter
// with. A filter that holds whole keys (one without a FilterKeyName, or
// with FilterWholeKeys) answers Get for the user key even when the reader
// lacks its extractor; otherwise a filter built with the reader's extractor
// answers for FilterKey(key). A prefix seek probes the prefix when the
// filter keys are the reader's; a reader without an extractor seeks whole
// keys, which a whole-key filter answers.
func chooseProbes(p *Properties, mode filterMode, o ReaderOptions) (get, prefix probe) {
	wholeKeys := p.FilterKeyName == "" || p.FilterWholeKeys
	switch {
	case wholeKeys:
		get = probeWholeKey
	case mode == filterByExtractor:
		get = probeFilterKey
	}
	switch {
	case p.FilterKeyName != "" && mode == filterByExtractor:
		prefix = probeFilterKey
	case wholeKeys && o.FilterKey == nil:
		prefix = probeWholeKey
	}
	return get, prefix
}

// checkPropertiesAgainstFooter cross-checks the properties the reader
// relies on for bounds.
func (r *Reader) checkPropertiesAgainstFooter(loc location) error {
	p, ft := &r.props, r.footer
	if p.FormatVersion != ft.version {
		return loc.corruptf("format version %d disagrees with the footer's %d", p.FormatVersion, ft.version)
	}
	partitioned := ft.partitioned()
	if (p.IndexPartitions > 0) != partitioned {
		return loc.corruptf("%d index partitions in a table of format version %d", p.IndexPartitions, ft.version)
	}
	if partitioned {
		// decodePartitions checks the sizes against the partitions.
		if ft.hasFilter() {
			return loc.corruptf("a partitioned table with a whole filter block at %d", ft.filter.offset)
		}
		if p.IndexSize < ft.index.size+blockTrailerLen {
			return loc.corruptf("index size %d is less than the top-level index's %d + trailer", p.IndexSize, ft.index.size)
		}
		if (p.FilterSize > 0) != (p.FilterVariant != 0) {
			return loc.corruptf("filter size %d with filter variant %d", p.FilterSize, p.FilterVariant)
		}
	} else {
		if p.IndexSize != ft.index.size+blockTrailerLen {
			return loc.corruptf("index size %d disagrees with the footer's handle (%d + trailer)", p.IndexSize, ft.index.size)
		}
		wantFilter := uint64(0)
		if ft.hasFilter() {
			wantFilter = ft.filter.size + blockTrailerLen
		}
		if p.FilterSize != wantFilter {
			return loc.corruptf("filter size %d disagrees with the footer's %d", p.FilterSize, wantFilter)
		}
	}
	if !partitioned && (p.NumRangeDels > 0) != (ft.version == FormatVersionRangeDels) {
		return loc.corruptf("%d range deletions in a table of format version %d", p.NumRangeDels, ft.version)
	}
	// Data blocks come first, so every metadata block starts at or after
	// DataSize; this bounds every data block handle read from the index.
	metaStart := min(ft.index.offset, ft.props.offset)
	if p.NumRangeDels > 0 {
		limit := uint64(r.size) - footerLen
		h := blockHandle{p.RangeDelOffset, p.RangeDelSize}
		if h.offset > limit || h.size > limit-h.offset || blockTrailerLen > limit-h.offset-h.size {
			return loc.corruptf("range-deletion block handle (offset %d, size %d) lies outside the %d bytes before the footer", h.offset, h.size, limit)
		}
		metaStart = min(metaStart, h.offset)
	}
	if ft.hasFilter() {
		metaStart = min(metaStart, ft.filter.offset)
	}
	if p.DataSize > metaStart {
		return loc.corruptf("data size %d overlaps metadata starting at %d", p.DataSize, metaStart)
	}
	return nil
}

// readAt fills buf from the file at loc.offset; a short read means the file
// is truncated.
func (r *Reader) readAt(buf []byte, loc location) error {
	if r.mapped != nil {
		return r.readMapped(buf, loc)
	}
	return r.preadAt(buf, loc)
}

// preadAt is readAt through the file, mapped or not. Compaction inputs
// read this way (readahead.go): a copy out of the mapping would touch, and
// so map into the process, every page of every table compacted, and the
// process's RSS grew by the tables it merged (kvbench, a 10M-key fill with
// dynamic level sizes: peak RSS 397 MiB, 209 MiB with pread); a pread of
// the same 256 KiB window costs the same copy and one system call, and
// leaves the pages to the page cache.
func (r *Reader) preadAt(buf []byte, loc location) error {
	n, err := r.file.ReadAt(buf, int64(loc.offset))
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return loc.corruptf("truncated: read %d of %d bytes", n, len(buf))
	}
	return fmt.Errorf("bloomkv/sstable: %s: reading %s at offset %d: %w", r.name, loc.kind, loc.offset, err)
}

// maxSnappyExpansion bounds how much larger than its compressed form a
// block may claim to be. Snappy's densest element (a 3-byte copy of 64
// bytes) expands about 21x, so a larger claim is damage, and rejecting it
// keeps bad bytes from provoking huge allocations.
const maxSnappyExpansion = 24

// readBlock reads a block and its trailer, verifies the checksum and
// returns the uncompressed contents (a fresh buffer the caller owns).
func (r *Reader) readBlock(h blockHandle, kind blockKind) ([]byte, error) {
	return r.readBlockInto(nil, h, kind)
}

// readBlockInto is readBlock putting the contents in dst when it has the
// capacity (a recycled data-block buffer, block_recycle.go), else in a
// fresh buffer. The result never aliases the file's mapping or a pooled
// read buffer.
//
// A mapped table's blocks are decoded in place (reader_mmap.go). Otherwise
// the stored bytes are read into a pooled buffer: a compressed block is
// decompressed into another buffer anyway, so the read buffer is garbage
// the moment it is decoded (a profile of random Gets spent 16% of the read
// path allocating and zeroing it). A block stored raw is copied out of the
// pool.
func (r *Reader) readBlockInto(dst []byte, h blockHandle, kind blockKind) ([]byte, error) {
	loc := location{r.name, kind, h.offset}
	n := h.size + blockTrailerLen
	if r.mapped != nil {
		return r.readBlockMapped(dst, loc, n)
	}
	if n > maxPooledRead {
		buf := make([]byte, n)
		if err := r.readAt(buf, loc); err != nil {
			return nil, err
		}
		return decodeBlockContentsInto(dst, buf, loc) // buf is fresh: raw may alias it
	}
	scratch := getReadBuffer(int(n))
	defer putReadBuffer(scratch)
	buf := *scratch
	if err := r.readAt(buf, loc); err != nil {
		return nil, err
	}
	out, err := decodeBlockContentsInto(dst, buf, loc)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 && &out[0] == &buf[0] { // stored raw: out aliases the pooled buffer
		out = append(dst[:0], out...)
	}
	return out, nil
}

// decodeBlockContents checks a stored block with its trailer and returns
// the uncompressed bytes (aliasing buf when the block is stored raw).
func decodeBlockContents(buf []byte, loc location) ([]byte, error) {
	return decodeBlockContentsInto(nil, buf, loc)
}

// decodeBlockContentsInto is decodeBlockContents decompressing a snappy
// block into dst when dst has the capacity (compaction reads reuse one
// buffer from block to block; see readahead.go).
func decodeBlockContentsInto(dst, buf []byte, loc location) ([]byte, error) {
	if len(buf) < blockTrailerLen {
		return nil, loc.corruptf("%d bytes cannot hold a block trailer", len(buf))
	}
	n := len(buf) - blockTrailerLen
	stored, typ := buf[:n], buf[n]
	want := uint32(buf[n+1]) | uint32(buf[n+2])<<8 | uint32(buf[n+3])<<16 | uint32(buf[n+4])<<24
	if got := blockChecksum(stored, typ); got != want {
		return nil, loc.corruptf("checksum mismatch (computed %#08x, stored %#08x)", got, want)
	}
	switch typ {
	case blockTypeRaw:
		return stored, nil
	case blockTypeSnappy:
		dlen, err := snappy.DecodedLen(stored)
		if err != nil {
			return nil, loc.corruptf("snappy header: %v", err)
		}
		if dlen > maxSnappyExpansion*len(stored)+64 {
			return nil, loc.corruptf("snappy block of %d bytes claims %d uncompressed", len(stored), dlen)
		}
		if cap(dst) < dlen {
			// Grow rounds the capacity up to the allocator's size class
			// (memory the allocation takes anyway), so that a recycled
			// buffer fits a later block a little larger than this one.
			dst = slices.Grow(dst[:0], dlen)
		}
		out, err := snappy.Decode(dst[:dlen], stored)
		if err != nil {
			return nil, loc.corruptf("snappy: %v", err)
		}
		return out, nil
	case blockTypeZstd:
		return zstdDecode(stored, loc)
	}
	return nil, loc.corruptf("unknown compression type %d", typ)
}

// dataBlock returns the data block at h, from the cache when it holds it.
// fill says whether a block read from the file enters the cache. stats,
// when not nil, counts the work. The block is never recycled: it stays
// valid for as long as the caller holds it.
func (r *Reader) dataBlock(h blockHandle, fill bool, stats *ReadStats) (*block, error) {
	return r.loadDataBlock(h, fill, stats, false)
}

// loadDataBlock is dataBlock with the caller's reference counted (to be
// released with block.release, letting the buffer be recycled) or kept
// (never recycled).
func (r *Reader) loadDataBlock(h blockHandle, fill bool, stats *ReadStats, counted bool) (*block, error) {
	if r.closed.Load() {
		return nil, fmt.Errorf("bloomkv/sstable: %s: reader is closed", r.name)
	}
	if stats != nil {
		stats.DataBlockReads.Add(1)
	}
	if r.cache != nil {
		if b := r.cache.acquire(r.fileNum, h.offset, counted); b != nil {
			if stats != nil {
				stats.BlockCacheHits.Add(1)
			}
			return b, nil
		}
		if stats != nil {
			stats.BlockCacheMisses.Add(1)
		}
	}
	p := getBlockBuffer()
	raw, err := r.readBlockInto(*p, h, kindData)
	if stats != nil {
		stats.BytesRead.Add(h.size + blockTrailerLen)
	}
	if err != nil {
		putBlockBuffer(p)
		return nil, err
	}
	b, err := decodeBlock(raw, location{r.name, kindData, h.offset})
	if err != nil {
		putBlockBuffer(p)
		return nil, err
	}
	b.adoptBuffer(p, counted)
	if r.cache != nil && fill {
		r.cache.set(r.fileNum, h.offset, b)
	}
	return b, nil
}

// dataHandle returns the block handle of the index entry idx is on (its
// value decoded, or in a compact partition the handle decodeAt rebuilt)
// and checks that it lies among the data blocks.
func (r *Reader) dataHandle(idx *blockIter) (blockHandle, error) {
	h, ok := idx.h, true
	if !idx.b.compact {
		h, ok = decodeHandle(idx.value)
	}
	if !ok || h.offset > r.props.DataSize || h.size > r.props.DataSize-h.offset ||
		blockTrailerLen > r.props.DataSize-h.offset-h.size {
		return blockHandle{}, location{r.name, kindIndex, r.footer.index.offset}.corruptf(
			"entry %s: bad data block handle %x = (%d, %d) (data blocks end at %d)", formatKey(idx.key), idx.value, h.offset, h.size, r.props.DataSize)
	}
	return h, nil
}

// RangeDels returns the table's range tombstones, fragmented, or nil when
// it has none. The list is immutable and lives as long as the Reader's
// callers hold it (it does not alias the file).
func (r *Reader) RangeDels() *rangedel.List { return r.rangeDels }

// Bounds returns the table's key and sequence bounds as the manifest
// records them: its entries' range widened to cover its range tombstones.
func (r *Reader) Bounds() (smallest, largest []byte, smallestSeq, largestSeq uint64) {
	return tableBounds(&r.props, r.rangeDels.Spans())
}

// Properties returns the table's properties; the caller must not modify them.
func (r *Reader) Properties() *Properties { return &r.props }

// Filter returns the table's filter block, if it has one. With
// CacheFilters it is found in the block cache or read (then cached); a
// read error returns an empty Block and false.
func (r *Reader) Filter() (filter.Block, bool) {
	if !r.footer.hasFilter() { // none, or partitioned: see FilterSummary
		return filter.Block{}, false
	}
	b, err := r.filterBlock(false, nil)
	if err != nil {
		return filter.Block{}, false
	}
	return *b, true
}

// FilterSize returns the bytes of the table's filter block (0 without
// one), whether or not they are in memory.
func (r *Reader) FilterSize() int {
	switch {
	case r.footer.hasFilter():
		return int(r.footer.filter.size)
	case r.hasFilter():
		return int(r.props.FilterSize) - blockTrailerLen*len(r.parts)
	}
	return 0
}

// FilterUsable reports whether Get can probe the filter with this reader's
// options (see ReaderOptions.FilterKey).
func (r *Reader) FilterUsable() bool { return r.getProbe != probeNone }

// FilterMemory returns the bytes the Reader holds in memory for the
// filter block: all of it without CacheFilters, the pinned filter's with
// it (a cached filter is the block cache's, not the Reader's).
func (r *Reader) FilterMemory() int {
	if b := r.pinnedFilter.Load(); b != nil {
		return int(b.size)
	}
	if p := r.pinnedParts.Load(); p != nil {
		return int(pinnedSize(*p))
	}
	return len(r.filterData) + r.filterBytes
}

// OpenBytes returns the bytes Open read from the file: the footer and the
// properties, index, range-deletion and filter blocks with their trailers,
// less what a re-open found in the block cache (open_blocks.go).
func (r *Reader) OpenBytes() uint64 { return r.openRead }

// IndexMemory returns the bytes held in memory for the index block.
// For a partitioned table: the top-level index, and the index
// partitions the Reader holds (without CacheFilters; with it they live in
// the block cache).
func (r *Reader) IndexMemory() int {
	n := len(r.index.data) + r.index.prefixesMemory()
	for i := range r.parts {
		n += int(partitionOverhead) + len(r.parts[i].key)
	}
	for _, b := range r.residentIndex {
		n += len(b.data) + b.prefixesMemory()
	}
	return n
}

// partitionOverhead is the memory of a decoded top-level index entry
// beyond its key: the partition struct.
const partitionOverhead = unsafe.Sizeof(partition{})

// FileNum returns the table's file number.
func (r *Reader) FileNum() uint64 { return r.fileNum }

// Name returns the name used in errors.
func (r *Reader) Name() string { return r.name }

// Size returns the table's file size.
func (r *Reader) Size() int64 { return r.size }

// Close closes the file. Iterators and Gets started afterwards fail.
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		return fmt.Errorf("bloomkv/sstable: %s: reader already closed", r.name)
	}
	r.unpinFilter()
	r.unmapFile()
	return r.file.Close()
}
