package sstable

import "github.com/bloomkv/bloomkv/filter"

// Range-filter block: a filter.RangeFilter encoding (its own envelope:
// magic, kind, body, CRC-32C; layout in filter/rangefilter_codec.go),
// stored raw with the usual block trailer. It is optional and located by
// properties 27 (RangeFilterHandle: offset uvarint, size uvarint) and 28
// (RangeFilterBitsPerKey: the budget, a float64); a build that predates
// it skips both properties and never reads the block, so such tables stay
// FormatVersion 1 and readable by it. The filter indexes the user key of
// every entry of the table, tombstones included: RangeKey (8 bytes,
// big-endian, zero-padded) of what follows a prefix all of them share,
// chosen per table and stored in the filter (filter.RangeFilterBuilder,
// adaptive); range tombstones are not in it (they live in their own block,
// which readers consult whatever the range filter says).

// openRangeFilter reads and decodes the range-filter block, when the
// properties name one, checking that it lies among the metadata blocks.
func (r *Reader) openRangeFilter() error {
	p := &r.props
	if p.RangeFilterSize == 0 {
		return nil
	}
	h := blockHandle{p.RangeFilterOffset, p.RangeFilterSize}
	loc := location{r.name, kindRangeFilter, h.offset}
	limit := uint64(r.size) - footerLen
	if h.offset < p.DataSize || h.offset > limit || h.size > limit-h.offset || blockTrailerLen > limit-h.offset-h.size {
		return loc.corruptf("range-filter block handle (offset %d, size %d) lies outside the metadata blocks [%d, %d)", h.offset, h.size, p.DataSize, limit)
	}
	raw, err := r.readOpenBlock(h, kindRangeFilter)
	if err != nil {
		return err
	}
	if r.rangeFilter, err = filter.DecodeRangeFilter(raw); err != nil {
		return loc.wrapCorruption(err)
	}
	return nil
}

// HasRangeFilter reports whether the table carries a range filter.
func (r *Reader) HasRangeFilter() bool { return r.rangeFilter != nil }

// RangeFilter returns the table's range filter, nil without one.
func (r *Reader) RangeFilter() *filter.RangeFilter { return r.rangeFilter }

// RangeFilterMemory returns the bytes the Reader holds for its range
// filter (0 without one).
func (r *Reader) RangeFilterMemory() int {
	if r.rangeFilter == nil {
		return 0
	}
	return r.rangeFilter.MemoryBytes()
}

// RangeMayMatch reports whether the table may hold a point entry (of any
// kind, any sequence) whose user key k has lower <= k < upper (nil:
// unbounded), and whether a range filter answered. Without one the answer
// is "may", unfiltered. It never answers no for a range holding an entry.
// stats (may be nil) counts the probe and a "no".
func (r *Reader) RangeMayMatch(lower, upper []byte, stats *ReadStats) (may, filtered bool) {
	if r.rangeFilter == nil {
		return true, false
	}
	if stats != nil {
		stats.RangeFilterProbes.Add(1)
	}
	if r.rangeFilter.MayContainKeys(lower, upper) {
		return true, true
	}
	if stats != nil {
		stats.RangeFilterNegatives.Add(1)
	}
	return false, true
}
