package main

import "github.com/bloomkv/bloomkv"

// shape is the tree the reads ran on: tables per level and the filters'
// memory.
type shape struct {
	Levels           []levelShape `json:"levels"`
	Files            int          `json:"files"`
	Bytes            int64        `json:"bytes"`
	FilterBytes      int64        `json:"filter_bytes"`
	FilterKeys       uint64       `json:"filter_keys"`
	FilterBitsPerKey float64      `json:"filter_bits_per_key"`
	// Memory on the record: what the open tables hold outside the block
	// cache (filters, indexes, range filters), per key written, and the
	// process's peak resident set when the shape was taken.
	FilterBytesResident      int64 `json:"filter_bytes_resident"`
	IndexBytesResident       int64 `json:"index_bytes_resident"`
	RangeFilterBytesResident int64 `json:"range_filter_bytes_resident"`
	// RangeFilterBytes: the range filters of all live tables, open or not.
	RangeFilterBytes    int64   `json:"range_filter_bytes"`
	ResidentBytesPerKey float64 `json:"resident_bytes_per_key"`
	PeakRSS             int64   `json:"peak_rss_bytes"`
}

type levelShape struct {
	Level       int   `json:"level"`
	Files       int   `json:"files"`
	Bytes       int64 `json:"bytes"`
	FilterBytes int64 `json:"filter_bytes"`
	// RangeFilterBytesResident: the range filters of the level's open
	// tables (Metrics.Levels[i].RangeFilterBytesResident).
	RangeFilterBytesResident int64 `json:"range_filter_bytes_resident"`
	// FilterBitsPerKey is what the filter policy gives a table written to
	// the level now (Metrics.Levels[i].FilterBitsPerKey).
	FilterBitsPerKey float64 `json:"filter_bits_per_key"`
}

func shapeOf(m bloomkv.Metrics) shape {
	s := shape{FilterBytes: m.FilterBytes, FilterKeys: m.FilterKeys, Levels: []levelShape{}}
	for i, l := range m.Levels {
		s.Levels = append(s.Levels, levelShape{Level: i, Files: l.Files, Bytes: l.Bytes, FilterBytes: l.FilterBytes,
			RangeFilterBytesResident: l.RangeFilterBytesResident, FilterBitsPerKey: l.FilterBitsPerKey})
		s.Files += l.Files
		s.Bytes += l.Bytes
	}
	if m.FilterKeys > 0 {
		s.FilterBitsPerKey = float64(m.FilterBytes) * 8 / float64(m.FilterKeys)
	}
	// Metrics.FilterBytesResident counts, with CacheFilterBlocks, the
	// filters in the block cache and pinned there too; only what is held
	// beside the cache is recorded here (reports before this rule, such as
	// docs/kvbench/kv100m.json, counted the cached filters as well).
	s.FilterBytesResident = m.FilterBytesResident - m.FilterBytesCached - m.FilterBytesPinned
	s.IndexBytesResident = m.IndexBytesResident
	s.RangeFilterBytesResident, s.RangeFilterBytes = m.RangeFilterBytesResident, m.RangeFilterBytes
	if m.FilterKeys > 0 {
		s.ResidentBytesPerKey = float64(s.FilterBytesResident+s.IndexBytesResident+s.RangeFilterBytesResident) / float64(m.FilterKeys)
	}
	s.PeakRSS = peakRSS()
	return s
}
