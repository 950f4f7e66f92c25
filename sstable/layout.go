package sstable

import (
	"fmt"
	"sort"
)

// BlockKind says what a block of a table holds. It exists for tools that
// show a table's layout (Reader.Layout); the values are not stored on disk.
type BlockKind uint8

// The kinds of block in a table, in the order the package doc lists them.
const (
	DataBlock        = BlockKind(kindData)
	IndexBlock       = BlockKind(kindIndex)
	FilterBlock      = BlockKind(kindFilter)
	PropertiesBlock  = BlockKind(kindProperties)
	FooterBlock      = BlockKind(kindFooter)
	RangeDelBlock    = BlockKind(kindRangeDel)
	RangeFilterBlock = BlockKind(kindRangeFilter)
	// IndexPartitionBlock and FilterPartitionBlock are the second level
	// of a partitioned table's index and its filter partitions
	// (FormatVersionPartitioned, FormatVersionCompactIndex); IndexBlock is
	// then the top-level index.
	IndexPartitionBlock  = BlockKind(kindIndexPartition)
	FilterPartitionBlock = BlockKind(kindFilterPartition)
)

// String returns the name error messages use, e.g. "data block".
func (k BlockKind) String() string { return blockKind(k).String() }

// BlockTrailerLen is the size of the trailer (compression type and crc32c)
// that follows every block except the footer. It is part of the on-disk
// format and never changes.
const BlockTrailerLen = blockTrailerLen

// BlockInfo locates one block of a table.
type BlockInfo struct {
	Kind BlockKind
	// Offset is the file offset of the block's first byte.
	Offset uint64
	// Size is the number of stored bytes, trailer excluded (for the footer,
	// its fixed 64 bytes).
	Size uint64
	// Compression is how the block is stored, as its trailer says;
	// NoCompression for the footer.
	Compression Compression
	// IndexKey is, for a data block, its index entry's key: an internal key
	// k with lastKey(block) <= k < firstKey(next block). Nil otherwise.
	IndexKey []byte
}

// End returns the offset just past the block and its trailer.
func (b BlockInfo) End() uint64 {
	if b.Kind == FooterBlock {
		return b.Offset + b.Size
	}
	return b.Offset + b.Size + blockTrailerLen
}

// Layout returns every block of the table in file order: the data blocks
// (from the index), the filter block if any, the index and properties
// blocks, the range-deletion block if any, and the footer. It reads each block's 5-byte trailer to learn how
// the block is stored, but verifies no checksum and decodes no contents:
// Check does that. It is meant for tools; a corrupt index handle, a
// truncated file or a trailer naming an unknown compression type is an
// error wrapping kv.ErrCorruption.
func (r *Reader) Layout() ([]BlockInfo, error) {
	if r.closed.Load() {
		return nil, fmt.Errorf("bloomkv/sstable: %s: reader is closed", r.name)
	}
	blocks := make([]BlockInfo, 0, int(r.props.NumDataBlocks)+2*len(r.parts)+6)
	for _, p := range r.parts {
		blocks = append(blocks, BlockInfo{Kind: IndexPartitionBlock, Offset: p.index.offset, Size: p.index.size})
		if r.hasFilter() {
			blocks = append(blocks, BlockInfo{Kind: FilterPartitionBlock, Offset: p.filter.offset, Size: p.filter.size})
		}
	}
	// Index partitions read from the file do not fill the cache.
	var idx indexIter
	idx.init(r, false, nil)
	for ok := idx.First(); ok; ok = idx.Next() {
		h, err := r.dataHandle(&idx.iter)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, BlockInfo{
			Kind:     DataBlock,
			Offset:   h.offset,
			Size:     h.size,
			IndexKey: append([]byte(nil), idx.Key()...),
		})
	}
	if idx.err != nil {
		return nil, idx.err
	}
	ft := r.footer
	if ft.hasFilter() {
		blocks = append(blocks, BlockInfo{Kind: FilterBlock, Offset: ft.filter.offset, Size: ft.filter.size})
	}
	blocks = append(blocks,
		BlockInfo{Kind: IndexBlock, Offset: ft.index.offset, Size: ft.index.size},
		BlockInfo{Kind: PropertiesBlock, Offset: ft.props.offset, Size: ft.props.size})
	if r.props.NumRangeDels > 0 {
		blocks = append(blocks, BlockInfo{Kind: RangeDelBlock, Offset: r.props.RangeDelOffset, Size: r.props.RangeDelSize})
	}
	if r.props.RangeFilterSize > 0 {
		blocks = append(blocks, BlockInfo{Kind: RangeFilterBlock, Offset: r.props.RangeFilterOffset, Size: r.props.RangeFilterSize})
	}
	var trailer [blockTrailerLen]byte
	for i := range blocks {
		b := &blocks[i]
		// The footer checked that every handle, trailer included, lies
		// before it, and dataHandle that data blocks lie in [0, DataSize).
		// Errors name the trailer's own offset.
		loc := location{r.name, blockKind(b.Kind), b.Offset + b.Size}
		if err := r.readAt(trailer[:], loc); err != nil {
			return nil, err
		}
		c, ok := compressionFromBlockType(trailer[0])
		if !ok {
			return nil, loc.corruptf("unknown compression type %d in the block trailer", trailer[0])
		}
		b.Compression = c
	}
	// Data blocks come first in index order; the writer puts the metadata
	// blocks after them, but readers must not rely on that order.
	sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].Offset < blocks[j].Offset })
	blocks = append(blocks, BlockInfo{Kind: FooterBlock, Offset: uint64(r.size) - footerLen, Size: footerLen, Compression: NoCompression})
	return blocks, nil
}
