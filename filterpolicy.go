package bloomkv

import (
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/filterpolicy"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// The engine's side of the filter policy: internal/filterpolicy decides
// the bits per key of each table the engine writes (Options' uniform
// setting, or with FilterPerLevel a per-level choice at the same total
// memory, and with FilterSkipLastLevel none in the last level), whether a
// table's filter is stale, and which filters stay pinned. This file
// adapts the engine to it: a *manifest.Version is the policy's tree as it
// is, and the cached filter stats (filterStats, below; Metrics reads them
// too) are its key counts. Tables
// keep what they were written with, and compactions converge the tree.

// tablePolicy is the filter policy over the engine's versions.
type tablePolicy = filterpolicy.Policy[*manifest.FileMetadata, *manifest.Version]

// The policy's trees have the manifest's levels (and tablePolicy itself
// checks that a *manifest.Version is a filterpolicy.Tree).
var (
	_ [manifest.NumLevels - filterpolicy.NumLevels]struct{}
	_ [filterpolicy.NumLevels - manifest.NumLevels]struct{}
)

// newFilterPolicy returns the policy of o's filter settings, reading
// tables' key counts through db's filter stats.
func newFilterPolicy(db *DB, o *Options) *tablePolicy {
	s := filterpolicy.Settings{
		BitsPerKey:        o.filterBitsPerKey(),
		PerLevel:          o.FilterPerLevel,
		SkipLastLevel:     o.FilterSkipLastLevel,
		Variant:           o.FilterVariant,
		KeyName:           o.FilterKeyName,
		WholeKeys:         o.FilterWholeKey && o.FilterKey != nil,
		RangeBitsPerKey:   o.RangeFilterBitsPerKey,
		CacheFilterBlocks: o.CacheFilterBlocks,
	}
	switch o.FilterPinning {
	case PinLevel0Filters:
		s.Pinning = filterpolicy.PinLevel0
	case PinAllFilters:
		s.Pinning = filterpolicy.PinAll
	default:
		s.Pinning = filterpolicy.PinNone
	}
	return filterpolicy.New[*manifest.FileMetadata, *manifest.Version](s, db.policyStats)
}

// policyStats is what the policy knows of table f: its filter's keys and
// bits per key and its entries, read once per table (tableFilterStats);
// zero when f cannot be read.
func (db *DB) policyStats(f *manifest.FileMetadata) filterpolicy.TableStats {
	fs, ok := db.tableFilterStats(f)
	if !ok {
		return filterpolicy.TableStats{}
	}
	return filterpolicy.TableStats{FilterKeys: fs.keys, Entries: fs.entries, BitsPerKey: fs.bits}
}

// tableKeys returns the keys a table's filter indexes, or for a table
// without a filter its entries (what a filter would index, near enough).
func (db *DB) tableKeys(f *manifest.FileMetadata) float64 {
	return db.policyStats(f).Keys()
}

// writeFilterBits returns the bits per key for a table written now to
// level of v (0 = no filter), for incoming keys entering the level from
// the tables in leaving, a write of written keys replacing the tables in
// replaced (filterpolicy.Write). v may be nil (during recovery): the
// uniform setting then applies.
func (db *DB) writeFilterBits(v *manifest.Version, level int, incoming float64, leaving []*manifest.FileMetadata, written float64, replaced []*manifest.FileMetadata) float64 {
	return db.filterPolicy.BitsPerKey(v, filterpolicy.Write[*manifest.FileMetadata]{
		Level: level, Incoming: incoming, Leaving: leaving, Written: written, Replaced: replaced,
	})
}

// policyFilterBits is the policy's bits per key for a table of incoming
// keys written to level of the live tree (the uniform setting before Open
// has one, during recovery). The tables it reads the key counts of are
// opened outside db.mu.
func (db *DB) policyFilterBits(level int, incoming float64) float64 {
	if db.readState.Load() == nil {
		return db.writeFilterBits(nil, level, incoming, nil, 0, nil)
	}
	s, slot := db.loadReadState()
	defer s.unref(slot)
	return db.writeFilterBits(s.v, level, incoming, nil, incoming, nil)
}

// compactionFilterBits is the policy's bits per key for c's outputs: the
// output level of v, grown by the keys c brings from the level above.
func (db *DB) compactionFilterBits(c *tableCompaction, v *manifest.Version) float64 {
	return db.filterPolicy.CompactionBits(v, c.Level, c.OutputLevel, c.Inputs[0], c.Inputs[1])
}

// filterIsStale reports whether table f, in level of v or about to move
// there, has a filter other than the current Options would give it (its
// properties against filterpolicy's Stale); an unreadable table is stale
// (rewriting it will surface the error).
func (db *DB) filterIsStale(v *manifest.Version, level int, f *manifest.FileMetadata) bool {
	r, release, err := findTable(db.tableCache, f)
	if err != nil {
		return true
	}
	defer release()
	p := r.Properties()
	return db.filterPolicy.Stale(v, level, filterpolicy.Written{
		BitsPerKey: p.BitsPerKey(),
		Variant:    filter.Variant(p.FilterVariant),
		KeyName:    p.FilterKeyName,
		WholeKeys:  p.FilterWholeKeys,

		RangeBitsPerKey: p.RangeFilterBitsPerKey,
	})
}

// FilterPinning says which tables keep their filter block pinned in
// memory when Options.CacheFilterBlocks puts filters in the block cache.
// A pinned filter is charged to the cache but never evicted; it is held
// until its table is closed (deleted, or closed by the table cache to stay
// within MaxOpenFiles). A table pinned while in level 0 stays pinned if a
// trivial move takes it deeper.
type FilterPinning int

const (
	// PinLevel0Filters pins the filters of level-0 tables: every Get probes
	// each of them, so evicting one costs the most. The default.
	PinLevel0Filters FilterPinning = iota
	// PinAllFilters pins every table's filter once probed: filter memory
	// is accounted in the block cache but not bounded by it.
	PinAllFilters
	// PinNoFilters pins none: every filter competes with data blocks.
	PinNoFilters
)

// String names the setting as the Options field documents it.
func (p FilterPinning) String() string {
	switch p {
	case PinLevel0Filters:
		return "level 0"
	case PinAllFilters:
		return "all"
	case PinNoFilters:
		return "none"
	}
	return "unknown"
}

// filterStats is what a table's filter costs: tables are immutable, so it
// is read once per table (Metrics is called often, e.g. by kvbench's
// progress display, and must not open every table each time).
type filterStats struct {
	bytes      int64
	rangeBytes int64 // the range filter's memory (Reader.RangeFilterMemory)
	keys       uint64
	entries    uint64  // the table's entries (Properties.NumEntries)
	bits       float64 // the bits per key it was written with (0: no filter)
	fprTheory  float64 // the filter block's TheoreticalFPR (0 without one)
}

func (db *DB) tableFilterStats(f *manifest.FileMetadata) (filterStats, bool) {
	fileNum := f.FileNum
	if v, ok := db.filterStats.Load(fileNum); ok {
		return v.(filterStats), true
	}
	r, release, err := findTable(db.tableCache, f)
	if err != nil {
		return filterStats{}, false
	}
	defer release()
	p := r.Properties()
	fs := filterStats{bytes: int64(r.FilterSize()), rangeBytes: int64(r.RangeFilterMemory()), entries: p.NumEntries, bits: p.BitsPerKey()}
	if sum, ok, err := r.FilterSummary(); err == nil && ok {
		fs.keys = sum.Keys
		fs.fprTheory = sum.TheoreticalFPR
	}
	db.filterStats.Store(fileNum, fs)
	return fs, true
}
