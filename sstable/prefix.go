package sstable

import "github.com/bloomkv/bloomkv/filter"

// PrefixMayMatch reports whether the table may hold a key whose filter key
// (the reader's FilterKey of it) is prefix, and whether a filter answered.
// A table built over the same extractor is probed with prefix; a table
// built over whole user keys is probed only when the reader has no
// extractor (a prefix is then a whole key); any other table, or one without
// a filter, may match (filtered is false). A "no" is counted in
// stats.FilterNegatives (stats may be nil). The answer never risks a false
// negative: a filter block that cannot be read (CacheFilters) answers
// "may match", unfiltered.
func (r *Reader) PrefixMayMatch(prefix []byte, stats *ReadStats) (may, filtered bool) {
	if r.prefixProbe == probeNone {
		return true, false
	}
	var err error
	if r.partitioned() {
		may, err = r.partitionsMayContainPrefix(prefix, stats)
	} else {
		var flt *filter.Block
		if flt, err = r.filterBlock(false, stats); err == nil {
			may = flt.MayContain(prefix)
		}
	}
	if err != nil {
		// The filter cannot answer; the table's data blocks will, and
		// report damage there if there is any.
		return true, false
	}
	if may {
		return true, true
	}
	if stats != nil {
		stats.FilterNegatives.Add(1)
	}
	return false, true
}
