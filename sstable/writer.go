package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/golang/snappy"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/rangedel"
	"github.com/bloomkv/bloomkv/vfs"
)

// writeBufferSize batches block writes into fewer, larger file writes.
const writeBufferSize = 256 << 10

// writeBuffers recycles the write buffers of finished Writers: a random
// fill of 1M keys wrote some 160 tables (flushes and compaction outputs),
// each allocating a fresh 256 KiB buffer that became garbage at Finish.
var writeBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBufferSize) }}

// Writer builds one table. Entries are added in increasing internal-key
// order; Finish writes the filter, index and properties blocks and the
// footer. A Writer is not safe for concurrent use.
type Writer struct {
	f    vfs.File
	bw   *bufio.Writer
	opts WriterOptions
	err  error // sticky I/O error
	done bool  // Finish or Abort was called

	offset uint64 // bytes handed to bw so far
	data   blockBuilder
	index  blockBuilder
	filter *filter.BlockBuilder // nil without a filter (no bits per key)
	// lastFilterKey is the filter key last added, with FilterWholeKey.
	lastFilterKey []byte
	haveFilterKey bool
	// rangeFilter collects every user key for the range-filter block (nil
	// without one).
	rangeFilter *filter.RangeFilterBuilder

	// The index entry for the last flushed data block waits for the next
	// key, so that its separator can be shortened against it.
	pending       blockHandle
	pendingIndex  bool
	lastKey       []byte
	smallest      []byte
	props         Properties
	rangeDels     []rangedel.Span // copied by SetRangeDels
	compressed    []byte          // reused snappy output buffer
	scratch       []byte          // separators and handles
	handleScratch []byte
	// parts are the partitions cut so far (WriterOptions.IndexPartitionSize;
	// partitions.go): index and filter hold the current one. Finish
	// writes them after the data blocks.
	parts []writerPartition
	// cindex builds the current partition in place of index once the
	// first has been cut, in a version 4 table (index_compact.go).
	cindex *compactIndexBuilder
}

// NewWriter returns a Writer that writes a table to f. Option errors are
// reported by the first Add or by Finish.
func NewWriter(f vfs.File, o WriterOptions) *Writer {
	o = o.withDefaults()
	bw := writeBuffers.Get().(*bufio.Writer)
	bw.Reset(&writebackFile{f: f})
	w := &Writer{
		f:     f,
		bw:    bw,
		opts:  o,
		data:  newBlockBuilder(o.RestartInterval),
		index: newBlockBuilder(1), // every index key whole: index keys are short and few
		err:   o.validate(),
	}
	if w.err == nil && o.filterBits() > 0 {
		w.filter, w.err = w.newFilterBuilder()
	}
	if w.err == nil && o.RangeFilterBitsPerKey > 0 {
		w.rangeFilter, w.err = filter.NewRangeFilterBuilder(o.RangeFilterBitsPerKey, true)
	}
	w.props = Properties{
		FormatVersion:   FormatVersion,
		BloomBitsPerKey: int64(o.BloomBitsPerKey),
		FilterKeyName:   o.FilterKeyName,
		FilterWholeKeys: o.FilterKey != nil && o.FilterWholeKey && o.BloomBitsPerKey > 0,
		Compression:     o.Compression,
		BlockSize:       uint64(o.BlockSize),
		RestartInterval: uint64(o.RestartInterval),
		FileNum:         o.FileNum,
		DBID:            append([]byte(nil), o.DBID...),
	}
	if o.FilterBitsPerKey > 0 {
		// The exact setting in its own property; BloomBitsPerKey keeps a
		// whole approximation (at least 1: a filter is present) for readers
		// that know only that one.
		w.props.FilterBitsPerKey = o.FilterBitsPerKey
		w.props.BloomBitsPerKey = max(1, int64(math.Round(o.FilterBitsPerKey)))
	}
	return w
}

// newFilterBuilder returns a builder for the table's filter block, or for
// its next filter partition.
func (w *Writer) newFilterBuilder() (*filter.BlockBuilder, error) {
	variant := w.opts.FilterVariant
	if variant == 0 {
		variant = filter.VariantStandard
	}
	fb, err := filter.NewBlockBuilderBits(w.opts.filterBits(), variant)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/sstable: %w", err)
	}
	return fb, nil
}

// errFinished is returned by calls after Finish or Abort.
var errFinished = errors.New("bloomkv/sstable: writer already finished")

// Add appends an entry. ikey must be a valid internal key (stored kind) that
// sorts strictly after the previous one. The Writer copies what it keeps.
func (w *Writer) Add(ikey, value []byte) error {
	if w.done {
		return errFinished
	}
	if w.err != nil {
		return w.err
	}
	ukey, seq, kind, ok := kv.ParseInternalKey(ikey)
	if !ok {
		return fmt.Errorf("bloomkv/sstable: Add: invalid internal key %s", kv.FormatInternalKey(ikey))
	}
	if w.props.NumEntries > 0 && kv.CompareInternal(ikey, w.lastKey) <= 0 {
		return fmt.Errorf("bloomkv/sstable: Add: key %s does not sort after %s",
			kv.FormatInternalKey(ikey), kv.FormatInternalKey(w.lastKey))
	}
	if w.pendingIndex {
		w.scratch = appendSeparator(w.scratch[:0], w.lastKey, ikey)
		w.addIndexEntry(w.scratch)
	}
	if w.filter != nil {
		w.addFilterKeys(ukey)
	}
	if w.rangeFilter != nil {
		// Tombstones too: a scan that skipped a table holding one would
		// show the older value it deletes.
		w.rangeFilter.AddKey(ukey)
	}
	w.data.add(ikey, value)
	w.noteEntry(ikey, seq, kind, len(value))
	if w.data.estimatedSize() >= w.opts.BlockSize {
		w.flushDataBlock()
	}
	return w.err
}

// SetRangeDels gives the table the range tombstones spans (fragmented:
// in key order, not overlapping, as a rangedel.List holds them), written
// to its range-deletion block by Finish. The Writer copies them. A table
// with range tombstones is written as FormatVersionRangeDels, and its
// bounds (WriterMeta) cover them.
func (w *Writer) SetRangeDels(spans []rangedel.Span) {
	w.rangeDels = w.rangeDels[:0]
	for _, s := range spans {
		w.rangeDels = append(w.rangeDels, rangedel.Span{
			Start: append([]byte(nil), s.Start...),
			End:   append([]byte(nil), s.End...),
			Seqs:  append([]uint64(nil), s.Seqs...),
		})
	}
}

// noteEntry updates the properties for one added entry.
func (w *Writer) noteEntry(ikey []byte, seq uint64, kind kv.Kind, valueLen int) {
	p := &w.props
	if p.NumEntries == 0 {
		w.smallest = append(w.smallest[:0], ikey...)
		p.SmallestSeq, p.LargestSeq = seq, seq
	}
	p.SmallestSeq = min(p.SmallestSeq, seq)
	p.LargestSeq = max(p.LargestSeq, seq)
	p.NumEntries++
	if kind == kv.KindDelete {
		p.NumDeletions++
	}
	p.RawKeyBytes += uint64(len(ikey))
	p.RawValueBytes += uint64(valueLen)
	w.lastKey = append(w.lastKey[:0], ikey...)
}

func (w *Writer) addIndexEntry(sep []byte) {
	var size int
	if w.cindex != nil {
		if err := w.cindex.add(sep, w.pending); err != nil {
			w.err = err
		}
		size = w.cindex.v3EstimatedSize()
	} else {
		w.handleScratch = appendHandle(w.handleScratch[:0], w.pending)
		w.index.add(sep, w.handleScratch)
		size = w.index.estimatedSize()
	}
	w.pendingIndex = false
	if w.opts.IndexPartitionSize > 0 && size >= w.opts.IndexPartitionSize {
		w.cutPartition(sep)
	}
}

// indexEmpty reports whether the current index (or partition) is empty.
func (w *Writer) indexEmpty() bool {
	if w.cindex != nil {
		return w.cindex.empty()
	}
	return w.index.empty()
}

func (w *Writer) flushDataBlock() {
	h := w.writeBlock(w.data.finish(), w.opts.Compression)
	w.data.reset()
	w.pending, w.pendingIndex = h, true
	w.props.NumDataBlocks++
	w.props.DataSize += h.size + blockTrailerLen
}

// writeBlock writes a block and its trailer, compressing it when asked and
// worthwhile, and returns its handle. Errors are sticky in w.err.
func (w *Writer) writeBlock(raw []byte, c Compression) blockHandle {
	stored, typ := raw, blockTypeRaw
	switch c {
	case SnappyCompression:
		n := snappy.MaxEncodedLen(len(raw))
		if cap(w.compressed) < n {
			w.compressed = make([]byte, n)
		}
		enc := snappy.Encode(w.compressed[:n], raw)
		// Compressed blocks cost CPU on every read: keep them only when they
		// save at least 1/8 of the space.
		if len(enc) <= len(raw)-len(raw)/8 {
			stored, typ = enc, blockTypeSnappy
		}
	case ZstdCompression:
		enc, _ := zstdCodecs()
		w.compressed = enc.EncodeAll(raw, w.compressed[:0])
		if len(w.compressed) <= len(raw)-len(raw)/8 {
			stored, typ = w.compressed, blockTypeZstd
		}
	}
	var trailer [blockTrailerLen]byte
	trailer[0] = typ
	binary.LittleEndian.PutUint32(trailer[1:], blockChecksum(stored, typ))
	h := blockHandle{offset: w.offset, size: uint64(len(stored))}
	w.write(stored)
	w.write(trailer[:])
	return h
}

func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.bw.Write(p); err != nil {
		w.err = fmt.Errorf("bloomkv/sstable: writing table: %w", err)
		return
	}
	w.offset += uint64(len(p))
}

// EstimatedSize returns the bytes written so far plus those buffered in the
// current data block: what the file would hold if Finish ran now, less the
// metadata blocks.
func (w *Writer) EstimatedSize() uint64 {
	if w.data.empty() {
		return w.offset
	}
	return w.offset + uint64(w.data.estimatedSize()) + blockTrailerLen
}

// WriterMeta describes a finished table.
type WriterMeta struct {
	Size                    uint64 // file size in bytes
	Smallest, Largest       []byte // internal keys; nil for an empty table
	SmallestSeq, LargestSeq uint64
	NumEntries              uint64
	Props                   Properties
}

// Finish writes the remaining data block, the filter, index and properties
// blocks and the footer, then syncs and closes the file. It closes the file
// on error too.
func (w *Writer) Finish() (WriterMeta, error) {
	if w.done {
		return WriterMeta{}, errFinished
	}
	w.done = true
	if w.err == nil {
		w.writeMeta()
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("bloomkv/sstable: writing table: %w", err)
		}
	}
	if w.err == nil {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("bloomkv/sstable: syncing table: %w", err)
		}
	}
	w.releaseBuffer()
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("bloomkv/sstable: closing table: %w", err)
	}
	if w.err != nil {
		return WriterMeta{}, w.err
	}
	m := WriterMeta{
		Size:       w.offset,
		NumEntries: w.props.NumEntries,
		Props:      w.props,
	}
	m.Smallest, m.Largest, m.SmallestSeq, m.LargestSeq = tableBounds(&w.props, w.rangeDels)
	return m, nil
}

// writeMeta writes everything after the data blocks.
func (w *Writer) writeMeta() {
	if !w.data.empty() {
		w.flushDataBlock()
	}
	if w.pendingIndex {
		w.scratch = appendSuccessor(w.scratch[:0], w.lastKey)
		w.addIndexEntry(w.scratch)
	}
	if len(w.parts) > 0 {
		if !w.indexEmpty() {
			w.cutPartition(w.scratch)
		}
		w.writeTail(w.writePartitions())
		return
	}
	var ft footer
	ft.version = FormatVersion
	if w.filter != nil {
		w.props.FilterKeyCount = uint64(w.filter.NumKeys())
		w.props.FilterVariant = uint8(w.filter.Variant())
		// Filter bits look random: compressing them would only cost CPU.
		ft.filter = w.writeBlock(w.filter.Finish(), NoCompression)
		w.props.FilterSize = ft.filter.size + blockTrailerLen
	}
	w.writeRangeFilter()
	ft.index = w.writeBlock(w.index.finish(), w.opts.Compression)
	w.props.IndexSize = ft.index.size + blockTrailerLen
	w.writeTail(ft)
}

// writeTail writes what follows the index and filter blocks: the
// range-deletion block, the properties and the footer ft, whose index and
// filter handles are set.
func (w *Writer) writeTail(ft footer) {
	if w.props.NumEntries > 0 {
		w.props.SmallestKey = append([]byte(nil), w.smallest...)
		w.props.LargestKey = append([]byte(nil), w.lastKey...)
	}
	if len(w.rangeDels) > 0 {
		h := w.writeBlock(rangedel.Encode(nil, w.rangeDels), w.opts.Compression)
		w.props.RangeDelOffset, w.props.RangeDelSize = h.offset, h.size
		w.props.NumRangeDels = uint64(rangedel.NewList(w.rangeDels).Len())
		if ft.version == FormatVersion {
			ft.version = FormatVersionRangeDels
		}
	}
	w.props.FormatVersion = ft.version
	ft.props = w.writeBlock(w.props.encode(), NoCompression)
	w.write(ft.encode())
}

// tableBounds returns a table's bounds for the manifest: its first and
// last internal keys and sequence range, widened to cover its range
// tombstones. A span [s, e)#q widens them to s#q,RANGEDEL and
// InclusiveEnd(e)#0,RANGEDEL (the bounds are inclusive; see
// rangedel.InclusiveEnd). Nil keys: the table holds nothing.
func tableBounds(p *Properties, spans []rangedel.Span) (smallest, largest []byte, smallestSeq, largestSeq uint64) {
	if p.NumEntries > 0 {
		smallest = append([]byte(nil), p.SmallestKey...)
		largest = append([]byte(nil), p.LargestKey...)
		smallestSeq, largestSeq = p.SmallestSeq, p.LargestSeq
	}
	if len(spans) == 0 {
		return smallest, largest, smallestSeq, largestSeq
	}
	first, last := spans[0], spans[len(spans)-1]
	lo := kv.MakeInternalKey(first.Start, first.Seqs[0], kv.KindRangeDelete)
	hi := kv.MakeInternalKey(rangedel.InclusiveEnd(last.End), 0, kv.KindRangeDelete)
	if smallest == nil || kv.CompareInternal(lo, smallest) < 0 {
		smallest = lo
	}
	if largest == nil || kv.CompareInternal(hi, largest) > 0 {
		largest = hi
	}
	if p.NumEntries == 0 {
		smallestSeq, largestSeq = kv.MaxSeq, 0
	}
	for _, s := range spans {
		smallestSeq = min(smallestSeq, s.Seqs[len(s.Seqs)-1])
		largestSeq = max(largestSeq, s.Seqs[0])
	}
	return smallest, largest, smallestSeq, largestSeq
}

// Abort closes the file without finishing the table (the caller removes
// it). Later calls return an error.
func (w *Writer) Abort() error {
	if w.done {
		return errFinished
	}
	w.done = true
	w.releaseBuffer()
	return w.f.Close()
}

// releaseBuffer returns the write buffer to the pool, dropping what it
// still holds. Once done is set nothing writes to it again.
func (w *Writer) releaseBuffer() {
	w.bw.Reset(nil)
	writeBuffers.Put(w.bw)
	w.bw = nil
}

// addFilterKeys adds what the filter indexes of ukey: its filter key, and
// with FilterWholeKey the whole key too. Consecutive versions of a key, and
// consecutive keys of one filter key, are added once (the builder drops a
// hash equal to the last one; a filter key is remembered apart because
// whole keys come between its repeats).
func (w *Writer) addFilterKeys(ukey []byte) {
	if w.opts.FilterKey == nil {
		w.filter.AddKey(ukey)
		return
	}
	fk := w.opts.FilterKey(ukey)
	if !w.opts.FilterWholeKey {
		w.filter.AddKey(fk)
		return
	}
	if !w.haveFilterKey || !bytes.Equal(fk, w.lastFilterKey) {
		w.filter.AddKey(fk)
		w.lastFilterKey = append(w.lastFilterKey[:0], fk...)
		w.haveFilterKey = true
	}
	w.filter.AddKey(ukey)
}

// writeRangeFilter writes the range-filter block, when the table has one
// and holds point keys, and records it in the properties. It is stored
// raw: Elias-Fano bits do not compress, and the block checks itself
// (filter.DecodeRangeFilter) besides the trailer's checksum.
func (w *Writer) writeRangeFilter() {
	if w.rangeFilter == nil || w.rangeFilter.NumKeys() == 0 {
		return
	}
	rf, err := w.rangeFilter.Finish()
	if err != nil {
		w.err = fmt.Errorf("bloomkv/sstable: range filter: %w", err)
		return
	}
	enc, _ := rf.MarshalBinary()
	h := w.writeBlock(enc, NoCompression)
	w.props.RangeFilterOffset, w.props.RangeFilterSize = h.offset, h.size
	w.props.RangeFilterBitsPerKey = w.opts.RangeFilterBitsPerKey
}
