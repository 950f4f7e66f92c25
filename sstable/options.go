package sstable

import (
	"fmt"

	"github.com/bloomkv/bloomkv/filter"
)

// Defaults for WriterOptions fields left at zero.
const (
	DefaultBlockSize       = 4096
	DefaultRestartInterval = 16
)

// WriterOptions configure a Writer. The zero value is usable: 4 KiB blocks,
// a restart point every 16 entries, snappy compression, no filter.
type WriterOptions struct {
	// BlockSize is the target uncompressed size of a data block; a block is
	// cut once it reaches this size (default 4096).
	BlockSize int
	// RestartInterval is the number of entries between restart points, where
	// a key is stored whole (default 16).
	RestartInterval int
	// Compression applies to data and index blocks (the zero value is
	// SnappyCompression); filter and properties blocks are always raw.
	Compression Compression
	// BloomBitsPerKey sizes the table's filter block; <= 0 writes none.
	BloomBitsPerKey int
	// FilterBitsPerKey, when > 0, overrides BloomBitsPerKey with a
	// fractional setting (9.5): the filter spends ceil(n * FilterBitsPerKey)
	// bits for n keys. It is recorded exactly in the properties. At most
	// filter.MaxBlockBitsPerKey; negative, infinite or NaN is an error.
	FilterBitsPerKey float64
	// FilterKey maps a user key to the part the filter indexes; nil indexes
	// the whole user key.
	FilterKey func(userKey []byte) []byte
	// FilterKeyName identifies FilterKey and is recorded in the properties
	// so a reader knows whether its own extractor matches. It must be set
	// when FilterKey is (an unnamed extractor could be mistaken for the
	// whole key and cause false negatives).
	FilterKeyName string
	// FilterWholeKey, with FilterKey, makes the filter hold the whole user
	// keys too: Get then probes the whole key (an absent column of a
	// present row is a filter negative), prefix seeks the filter key.
	FilterWholeKey bool
	// FilterVariant is the filter block layout: filter.VariantStandard
	// (the zero value means it) or filter.VariantBlocked (cache-local).
	FilterVariant filter.Variant
	// RangeFilterBitsPerKey, when > 0, gives the table a range filter
	// (filter.RangeFilter over 8 bytes of each user key after a prefix
	// the table's keys share, every kind of entry included) spending about this many bits per distinct
	// key, in [filter.MinRangeBitsPerKey, filter.MaxRangeBitsPerKey].
	// Reader.RangeMayMatch consults it.
	RangeFilterBitsPerKey float64
	// IndexPartitionSize, when > 0, cuts the index into partitions of
	// about this many bytes (uncompressed, as FormatVersionPartitioned
	// encodes index entries), each with its own filter partition over the
	// keys of its data blocks, under a top-level index (partitions.go). A
	// table whose index fits one partition is written unpartitioned. 0
	// never partitions.
	IndexPartitionSize int
	// PartitionedFormat is the format version of partitioned tables:
	// FormatVersionCompactIndex (the zero value means it), whose index
	// partitions take some 43% of the bytes (index_compact.go), or
	// FormatVersionPartitioned, which builds that predate version 4 read.
	PartitionedFormat uint32
	// FileNum and DBID are recorded in the properties so that a reader can
	// tell the table from any other (see Reader.CheckIdentity). Optional.
	FileNum uint64
	DBID    []byte
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.RestartInterval <= 0 {
		o.RestartInterval = DefaultRestartInterval
	}
	if o.FilterKey == nil {
		o.FilterKeyName = ""
		o.FilterWholeKey = false
	}
	if o.PartitionedFormat == 0 {
		o.PartitionedFormat = FormatVersionCompactIndex
	}
	return o
}

func (o WriterOptions) validate() error {
	switch {
	case !o.Compression.Valid():
		return fmt.Errorf("bloomkv/sstable: unknown compression %d", int(o.Compression))
	case o.FilterKey != nil && o.FilterKeyName == "":
		return fmt.Errorf("bloomkv/sstable: WriterOptions.FilterKey is set but FilterKeyName is empty")
	case o.RangeFilterBitsPerKey != 0 && !(o.RangeFilterBitsPerKey >= filter.MinRangeBitsPerKey && o.RangeFilterBitsPerKey <= filter.MaxRangeBitsPerKey):
		return fmt.Errorf("bloomkv/sstable: WriterOptions.RangeFilterBitsPerKey %v outside [%d, %d]", o.RangeFilterBitsPerKey, filter.MinRangeBitsPerKey, filter.MaxRangeBitsPerKey)
	case o.IndexPartitionSize < 0:
		return fmt.Errorf("bloomkv/sstable: WriterOptions.IndexPartitionSize %d is negative", o.IndexPartitionSize)
	case o.PartitionedFormat != 0 && o.PartitionedFormat != FormatVersionPartitioned && o.PartitionedFormat != FormatVersionCompactIndex:
		return fmt.Errorf("bloomkv/sstable: WriterOptions.PartitionedFormat %d is neither %d nor %d", o.PartitionedFormat, FormatVersionPartitioned, FormatVersionCompactIndex)
	case !(o.FilterBitsPerKey >= 0 && o.FilterBitsPerKey <= filter.MaxBlockBitsPerKey):
		return fmt.Errorf("bloomkv/sstable: WriterOptions.FilterBitsPerKey %v outside [0, %d]", o.FilterBitsPerKey, filter.MaxBlockBitsPerKey)
	}
	return nil
}

// filterBits returns the bits per key the filter is built with, 0 for no
// filter.
func (o WriterOptions) filterBits() float64 {
	switch {
	case o.FilterBitsPerKey > 0:
		return o.FilterBitsPerKey
	case o.BloomBitsPerKey > 0:
		return float64(o.BloomBitsPerKey)
	}
	return 0
}

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Cache holds uncompressed data blocks; nil reads every block from the file.
	Cache *BlockCache
	// FilterKey and FilterKeyName are the reader's filter-key extractor. A
	// table's filter is probed with FilterKey(userKey) only when the table
	// was written with the same FilterKeyName; tables filtered over whole
	// user keys are probed with the user key; any other table is read
	// without its filter.
	FilterKey     func([]byte) []byte
	FilterKeyName string
	// DBID is the identity of the database the tables belong to; the table
	// cache refuses a table written for another (nil: no check).
	DBID []byte
	// CacheFilters keeps filter blocks in Cache instead of in each Reader
	// from Open (filter_cache.go); without a Cache it has no effect.
	CacheFilters bool
	// Mmap reads the table through a read-only memory map when its file
	// supports one (vfs.Mapper), instead of one pread per block
	// (reader_mmap.go).
	Mmap bool
}
