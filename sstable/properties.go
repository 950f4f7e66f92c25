package sstable

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Properties describe a table's contents. They are written by the Writer
// and checked by Reader.Check.
type Properties struct {
	FormatVersion uint32
	NumEntries    uint64 // entries of any kind
	NumDeletions  uint64 // tombstones (kv.KindDelete)
	NumDataBlocks uint64
	RawKeyBytes   uint64 // sum of internal key lengths before compression
	RawValueBytes uint64 // sum of value lengths before compression
	// DataSize, IndexSize and FilterSize are bytes on disk, trailers
	// included. Data blocks occupy [0, DataSize) of the file.
	DataSize, IndexSize, FilterSize uint64
	// SmallestKey and LargestKey are the first and last internal keys (nil
	// for an empty table).
	SmallestKey, LargestKey []byte
	SmallestSeq, LargestSeq uint64
	FilterVariant           uint8  // filter.Variant of the filter block; 0 = no filter
	BloomBitsPerKey         int64  // as configured; <= 0 means no filter block
	FilterKeyCount          uint64 // distinct keys the filter was built from
	FilterKeyName           string // "" = the filter indexes whole user keys
	Compression             Compression
	BlockSize               uint64 // configured target data-block size
	RestartInterval         uint64
	// FileNum and DBID identify the table: its file number and the
	// identity of the database it was written for. Both are optional (0 and
	// nil for tables written without them); when present, opening the table
	// under another number or for another database is corruption.
	FileNum uint64
	DBID    []byte
	// FilterWholeKeys: the filter holds the whole user keys as well as the
	// filter keys of FilterKeyName (both, as HBase's ROWCOL and ROW); a
	// filter over whole keys alone has FilterKeyName "". Optional.
	FilterWholeKeys bool
	// FilterBitsPerKey is the exact bits-per-key setting of a filter built
	// with a fractional one (WriterOptions.FilterBitsPerKey); 0 when the
	// filter was built with the whole BloomBitsPerKey. Optional.
	FilterBitsPerKey float64
	// RangeDelHandle locates the range-deletion block (offset, size
	// without trailer), NumRangeDels counts its (span, sequence) pairs:
	// the range tombstone fragments the table holds. Both are present
	// exactly in tables of FormatVersionRangeDels.
	RangeDelOffset, RangeDelSize uint64
	NumRangeDels                 uint64
	// RangeFilterOffset and RangeFilterSize locate the range-filter block
	// (size without trailer; 0: none), RangeFilterBitsPerKey is the budget
	// it was built with (WriterOptions.RangeFilterBitsPerKey). Optional:
	// tables without a range filter do not carry them.
	RangeFilterOffset, RangeFilterSize uint64
	RangeFilterBitsPerKey              float64
	// IndexPartitions is the number of index partitions (and of filter
	// partitions, when the table has a filter) of a table of
	// FormatVersionPartitioned or FormatVersionCompactIndex; 0 for every
	// other table. IndexSize and
	// FilterSize then count every partition and the top-level index.
	IndexPartitions uint64
}

// BitsPerKey returns the bits per key the table's filter was built with:
// FilterBitsPerKey when set, else BloomBitsPerKey; 0 when it has no filter.
func (p *Properties) BitsPerKey() float64 {
	switch {
	case p.FilterBitsPerKey > 0:
		return p.FilterBitsPerKey
	case p.BloomBitsPerKey > 0:
		return float64(p.BloomBitsPerKey)
	}
	return 0
}

// Property tags, in the order they are encoded. They are part of the
// on-disk format and never change; new properties get new, larger tags.
const (
	tagFormatVersion uint64 = iota + 1
	tagNumEntries
	tagNumDeletions
	tagNumDataBlocks
	tagRawKeyBytes
	tagRawValueBytes
	tagDataSize
	tagIndexSize
	tagFilterSize
	tagSmallestKey
	tagLargestKey
	tagSmallestSeq
	tagLargestSeq
	tagFilterVariant
	tagBloomBitsPerKey
	tagFilterKeyCount
	tagFilterKeyName
	tagCompression
	tagBlockSize
	tagRestartInterval
	tagFileNum
	tagDBID
	tagFilterWholeKeys
	tagFilterBitsPerKey
	tagRangeDelHandle
	tagNumRangeDels
	tagRangeFilterHandle
	tagRangeFilterBitsPerKey
	tagIndexPartitions
	numPropertyTags = iota
)

// optionalPropertyTags may be absent: they are newer than the format and
// written only when set. Every other known tag is required.
const optionalPropertyTags = 9

// propertyField binds a tag to a field. kind is 'u' (uvarint), 'i' (zigzag
// varint), 'b' (raw bytes) or 'f' (a float64's IEEE 754 bits, uint64 LE).
type propertyField struct {
	tag  uint64
	name string
	kind byte
	// optional fields are written only when nonzero and may be missing.
	optional bool
	u        *uint64
	i        *int64
	b        *[]byte
	f        *float64
}

// fields lists p's fields by tag. Numbers narrower than 64 bits are staged
// through scratch and copied back by store.
type propertyScratch struct {
	version, variant, compression uint64
	filterKeyName                 []byte
	filterWholeKeys               uint64
	rangeDelHandle                []byte
	rangeFilterHandle             []byte
}

func (p *Properties) fields(s *propertyScratch) []propertyField {
	return []propertyField{
		{tag: tagFormatVersion, name: "FormatVersion", kind: 'u', u: &s.version},
		{tag: tagNumEntries, name: "NumEntries", kind: 'u', u: &p.NumEntries},
		{tag: tagNumDeletions, name: "NumDeletions", kind: 'u', u: &p.NumDeletions},
		{tag: tagNumDataBlocks, name: "NumDataBlocks", kind: 'u', u: &p.NumDataBlocks},
		{tag: tagRawKeyBytes, name: "RawKeyBytes", kind: 'u', u: &p.RawKeyBytes},
		{tag: tagRawValueBytes, name: "RawValueBytes", kind: 'u', u: &p.RawValueBytes},
		{tag: tagDataSize, name: "DataSize", kind: 'u', u: &p.DataSize},
		{tag: tagIndexSize, name: "IndexSize", kind: 'u', u: &p.IndexSize},
		{tag: tagFilterSize, name: "FilterSize", kind: 'u', u: &p.FilterSize},
		{tag: tagSmallestKey, name: "SmallestKey", kind: 'b', b: &p.SmallestKey},
		{tag: tagLargestKey, name: "LargestKey", kind: 'b', b: &p.LargestKey},
		{tag: tagSmallestSeq, name: "SmallestSeq", kind: 'u', u: &p.SmallestSeq},
		{tag: tagLargestSeq, name: "LargestSeq", kind: 'u', u: &p.LargestSeq},
		{tag: tagFilterVariant, name: "FilterVariant", kind: 'u', u: &s.variant},
		{tag: tagBloomBitsPerKey, name: "BloomBitsPerKey", kind: 'i', i: &p.BloomBitsPerKey},
		{tag: tagFilterKeyCount, name: "FilterKeyCount", kind: 'u', u: &p.FilterKeyCount},
		{tag: tagFilterKeyName, name: "FilterKeyName", kind: 'b', b: &s.filterKeyName},
		{tag: tagCompression, name: "Compression", kind: 'u', u: &s.compression},
		{tag: tagBlockSize, name: "BlockSize", kind: 'u', u: &p.BlockSize},
		{tag: tagRestartInterval, name: "RestartInterval", kind: 'u', u: &p.RestartInterval},
		{tag: tagFileNum, name: "FileNum", kind: 'u', u: &p.FileNum, optional: true},
		{tag: tagDBID, name: "DBID", kind: 'b', b: &p.DBID, optional: true},
		{tag: tagFilterWholeKeys, name: "FilterWholeKeys", kind: 'u', u: &s.filterWholeKeys, optional: true},
		{tag: tagFilterBitsPerKey, name: "FilterBitsPerKey", kind: 'f', f: &p.FilterBitsPerKey, optional: true},
		{tag: tagRangeDelHandle, name: "RangeDelHandle", kind: 'b', b: &s.rangeDelHandle, optional: true},
		{tag: tagNumRangeDels, name: "NumRangeDels", kind: 'u', u: &p.NumRangeDels, optional: true},
		{tag: tagRangeFilterHandle, name: "RangeFilterHandle", kind: 'b', b: &s.rangeFilterHandle, optional: true},
		{tag: tagRangeFilterBitsPerKey, name: "RangeFilterBitsPerKey", kind: 'f', f: &p.RangeFilterBitsPerKey, optional: true},
		{tag: tagIndexPartitions, name: "IndexPartitions", kind: 'u', u: &p.IndexPartitions, optional: true},
	}
}

// encode returns the properties block contents: for each field in tag
// order, uvarint tag, uvarint value length, value. Compression is recorded
// as its block type (0 = none, 1 = snappy); p.Compression must be valid,
// which the Writer checks before it writes anything.
func (p *Properties) encode() []byte {
	typ, ok := blockType(p.Compression)
	if !ok {
		panic(fmt.Sprintf("bloomkv/sstable: encoding properties with unknown %v", p.Compression))
	}
	s := propertyScratch{
		version:       uint64(p.FormatVersion),
		variant:       uint64(p.FilterVariant),
		compression:   uint64(typ),
		filterKeyName: []byte(p.FilterKeyName),
	}
	if p.FilterWholeKeys {
		s.filterWholeKeys = 1
	}
	if p.NumRangeDels > 0 {
		s.rangeDelHandle = appendHandle(nil, blockHandle{p.RangeDelOffset, p.RangeDelSize})
	}
	if p.RangeFilterSize > 0 {
		s.rangeFilterHandle = appendHandle(nil, blockHandle{p.RangeFilterOffset, p.RangeFilterSize})
	}
	var out, val []byte
	for _, f := range p.fields(&s) {
		if f.optional && (f.u != nil && *f.u == 0 || f.b != nil && len(*f.b) == 0 || f.f != nil && *f.f == 0) {
			continue
		}
		val = val[:0]
		switch f.kind {
		case 'u':
			val = binary.AppendUvarint(val, *f.u)
		case 'i':
			val = binary.AppendVarint(val, *f.i)
		case 'b':
			val = append(val, *f.b...)
		case 'f':
			val = binary.LittleEndian.AppendUint64(val, math.Float64bits(*f.f))
		}
		out = binary.AppendUvarint(out, f.tag)
		out = binary.AppendUvarint(out, uint64(len(val)))
		out = append(out, val...)
	}
	return out
}

// decodeProperties parses a properties block. Tags must be strictly
// increasing; unknown tags are skipped (room for later additions); every
// tag this version knows is required. Byte fields are copied.
func decodeProperties(data []byte, loc location) (Properties, error) {
	var p Properties
	var s propertyScratch
	fields := p.fields(&s)
	seen := 0
	var lastTag uint64
	for off := 0; off < len(data); {
		tag, n := binary.Uvarint(data[off:])
		if n <= 0 {
			return Properties{}, loc.corruptf("bad property tag at block offset %d", off)
		}
		vlen, m := binary.Uvarint(data[off+n:])
		if m <= 0 || vlen > uint64(len(data)-off-n-m) {
			return Properties{}, loc.corruptf("bad length for property tag %d at block offset %d", tag, off)
		}
		if tag <= lastTag {
			return Properties{}, loc.corruptf("property tag %d at block offset %d does not follow tag %d", tag, off, lastTag)
		}
		lastTag = tag
		val := data[off+n+m : off+n+m+int(vlen)]
		if tag >= 1 && tag <= numPropertyTags {
			f := fields[tag-1]
			if err := decodePropertyValue(f, val); err != nil {
				return Properties{}, loc.corruptf("property %s at block offset %d: %v", f.name, off, err)
			}
			if !f.optional {
				seen++
			}
		}
		off += n + m + int(vlen)
	}
	if seen != numPropertyTags-optionalPropertyTags {
		var missing []string
		for _, f := range fields {
			if f.tag > lastTag && !f.optional {
				missing = append(missing, f.name)
			}
		}
		return Properties{}, loc.corruptf("missing properties %s", strings.Join(missing, ", "))
	}
	if s.version > 0xFFFFFFFF || s.variant > 0xFF || s.compression > 0xFF || s.filterWholeKeys > 1 {
		return Properties{}, loc.corruptf("property out of range (version %d, filter variant %d, compression %d)", s.version, s.variant, s.compression)
	}
	c, ok := compressionFromBlockType(byte(s.compression))
	if !ok {
		return Properties{}, loc.corruptf("property Compression: unknown compression type %d", s.compression)
	}
	p.FormatVersion = uint32(s.version)
	p.FilterVariant = uint8(s.variant)
	p.Compression = c
	p.FilterKeyName = string(s.filterKeyName)
	p.FilterWholeKeys = s.filterWholeKeys == 1
	if s.rangeDelHandle != nil {
		h, ok := decodeHandle(s.rangeDelHandle)
		if !ok || h.size == 0 || p.NumRangeDels == 0 {
			return Properties{}, loc.corruptf("property RangeDelHandle %x with %d range deletions", s.rangeDelHandle, p.NumRangeDels)
		}
		p.RangeDelOffset, p.RangeDelSize = h.offset, h.size
	} else if p.NumRangeDels != 0 {
		return Properties{}, loc.corruptf("%d range deletions without a RangeDelHandle", p.NumRangeDels)
	}
	if s.rangeFilterHandle != nil {
		h, ok := decodeHandle(s.rangeFilterHandle)
		if !ok || h.size == 0 {
			return Properties{}, loc.corruptf("property RangeFilterHandle %x is not a block handle", s.rangeFilterHandle)
		}
		p.RangeFilterOffset, p.RangeFilterSize = h.offset, h.size
	}
	return p, nil
}

func decodePropertyValue(f propertyField, val []byte) error {
	switch f.kind {
	case 'u':
		v, n := binary.Uvarint(val)
		if n <= 0 || n != len(val) {
			return fmt.Errorf("bad uvarint %x", val)
		}
		*f.u = v
	case 'i':
		v, n := binary.Varint(val)
		if n <= 0 || n != len(val) {
			return fmt.Errorf("bad varint %x", val)
		}
		*f.i = v
	case 'b':
		if len(val) > 0 {
			*f.b = append([]byte(nil), val...)
		}
	case 'f':
		if len(val) != 8 {
			return fmt.Errorf("%d bytes, not the 8 of a float64", len(val))
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(val))
		if !(v >= 0 && v <= math.MaxFloat64) { // NaN and infinities too
			return fmt.Errorf("%v is not a finite non-negative number", v)
		}
		*f.f = v
	}
	return nil
}

// String renders the properties one per line, for tools.
func (p *Properties) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "format version:     %d\n", p.FormatVersion)
	fmt.Fprintf(&sb, "entries:            %d (%d deletions)\n", p.NumEntries, p.NumDeletions)
	fmt.Fprintf(&sb, "data blocks:        %d\n", p.NumDataBlocks)
	fmt.Fprintf(&sb, "raw key/value:      %d / %d bytes\n", p.RawKeyBytes, p.RawValueBytes)
	fmt.Fprintf(&sb, "data/index/filter:  %d / %d / %d bytes\n", p.DataSize, p.IndexSize, p.FilterSize)
	fmt.Fprintf(&sb, "smallest key:       %s\n", formatKey(p.SmallestKey))
	fmt.Fprintf(&sb, "largest key:        %s\n", formatKey(p.LargestKey))
	fmt.Fprintf(&sb, "seq range:          [%d, %d]\n", p.SmallestSeq, p.LargestSeq)
	fmt.Fprintf(&sb, "filter:             variant %d, %g bits/key configured, %d keys, key %q\n",
		p.FilterVariant, p.BitsPerKey(), p.FilterKeyCount, p.FilterKeyName)
	fmt.Fprintf(&sb, "compression:        %s\n", p.Compression)
	fmt.Fprintf(&sb, "block size/restart: %d / %d\n", p.BlockSize, p.RestartInterval)
	if p.FilterWholeKeys {
		fmt.Fprintf(&sb, "filter contents:    whole keys and %q keys\n", p.FilterKeyName)
	}
	if p.NumRangeDels > 0 {
		fmt.Fprintf(&sb, "range deletions:    %d (block at %d, %d bytes)\n", p.NumRangeDels, p.RangeDelOffset, p.RangeDelSize)
	}
	if p.IndexPartitions > 0 {
		fmt.Fprintf(&sb, "partitions:         %d (index and filter)\n", p.IndexPartitions)
	}
	if p.FileNum != 0 || len(p.DBID) > 0 {
		fmt.Fprintf(&sb, "identity:           file %06d of database %q\n", p.FileNum, p.DBID)
	}
	return sb.String()
}
