package filterpolicy

import (
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/filter"
)

// The policy: its Settings, the bits per key of a table about to be
// written (BitsPerKey, CompactionBits), the runs it weighs (Shape),
// staleness (Stale) and pinning (PinsFilter).

// MaxBits caps the bits per key the per-level policy gives a run: at 32
// bits a bloom's rate is 2e-7, and small level-0 tables would otherwise
// ask for more than a filter block allows.
const MaxBits = 32

// StaleBits is how far, under PerLevel, a table's bits per key may be from
// what the policy gives its level before the table counts as stale: the
// policy's choice drifts with the tree's shape, and a small drift is not
// worth a rewrite, but a table moved down a level unchanged (a trivial
// move) would keep the upper level's bits, several apart.
const StaleBits = 1

// Pinning says which probed filters stay pinned when filters live in the
// block cache (the engine's Options.FilterPinning).
type Pinning int

const (
	// PinLevel0 pins the filters of level-0 tables.
	PinLevel0 Pinning = iota
	// PinAll pins every table's filter once probed.
	PinAll
	// PinNone pins none.
	PinNone
)

// Settings are the filter settings the policy applies.
type Settings struct {
	// BitsPerKey is the uniform setting: every table's bits per key, or
	// under PerLevel the average over the live keys (0: no filters).
	BitsPerKey float64
	// PerLevel spends the uniform setting's memory unevenly over the
	// runs an absent Get probes (Monkey, weighted by coverage).
	PerLevel bool
	// SkipLastLevel writes tables of the tree's last level without
	// filters.
	SkipLastLevel bool
	// Variant, KeyName and WholeKeys are what new filters are built as:
	// the layout, the name of the key extractor ("" for whole user keys),
	// and whether whole keys are indexed beside the extracted ones. A
	// table written otherwise is stale.
	Variant   filter.Variant
	KeyName   string
	WholeKeys bool
	// RangeBitsPerKey is the range filter's budget for new tables (0:
	// none); a table whose range filter was built with another (or has
	// one when none is asked for, or none when one is) is stale.
	RangeBitsPerKey float64
	// CacheFilterBlocks puts filter blocks in the block cache; Pinning
	// then says which stay pinned there.
	CacheFilterBlocks bool
	Pinning           Pinning
}

// PinsFilter reports whether a table probed in level keeps its filter
// pinned.
func (s *Settings) PinsFilter(level int) bool {
	if !s.CacheFilterBlocks {
		return false
	}
	switch s.Pinning {
	case PinAll:
		return true
	case PinLevel0:
		return level == 0
	}
	return false
}

// Policy applies Settings to trees of type V, whose tables' filters stats
// describes. Its methods are safe for concurrent use.
type Policy[T Table, V Tree[T]] struct {
	Settings
	stats func(T) TableStats
	memo  coverageMemo[T, V]
}

// New returns the policy of s over trees whose tables stats describes
// (called often, for every table of a tree, so it should be cheap).
func New[T Table, V Tree[T]](s Settings, stats func(T) TableStats) *Policy[T, V] {
	return &Policy[T, V]{Settings: s, stats: stats}
}

// Write describes a table about to be written to a tree.
type Write[T Table] struct {
	// Level is the level the table is written to.
	Level int
	// Incoming is the keys about to enter the level from elsewhere (a
	// flush's memtable, a compaction's inputs from the level above):
	// under PerLevel a level-0 table is a run of its own of that size (0:
	// the mean of the level's tables), and a deeper level grows by it.
	Incoming float64
	// Leaving are the tables those keys come from (a compaction's inputs
	// from the level above): their level shrinks by them.
	Leaving []T
	// Written is the keys the write produces, Replaced the tables it
	// replaces: the choice is corrected toward the memory budget
	// (budget.go). Written 0 asks for the per-level choice alone.
	Written  float64
	Replaced []T
}

// BitsPerKey returns the bits per key for a table written as w describes
// to tree v (0: no filter). The zero V (no tree yet, during recovery)
// gets the uniform setting.
func (p *Policy[T, V]) BitsPerKey(v V, w Write[T]) float64 {
	uniform := p.Settings.BitsPerKey
	var none V
	if uniform == 0 || v == none {
		return uniform
	}
	if p.SkipLastLevel && isLastLevel[T](v, w.Level) {
		return 0
	}
	if !p.PerLevel {
		return uniform
	}
	keys, probed, target := p.Shape(v, w.Level, w.Incoming, w.Leaving)
	if target < 0 || keys[target] == 0 {
		return uniform // nothing known of the run: the uniform setting
	}
	bits := filter.AllocateBitsProbed(keys, probed, uniform, MaxBits)[target]
	if !p.SkipLastLevel {
		bits = p.budgeted(v, bits, uniform, w.Written, w.Replaced)
	}
	// Hundredths of a bit: tables record the setting exactly, and a
	// rounded one reads better in properties and metrics.
	return math.Round(bits*100) / 100
}

// CompactionBits returns the bits per key for the outputs of a compaction
// of tree v from level into outputLevel, whose inputs are upper (from
// level) and lower (from outputLevel). A compaction rewriting level in
// place (level == outputLevel) gets the choice for the tree as it stands.
func (p *Policy[T, V]) CompactionBits(v V, level, outputLevel int, upper, lower []T) float64 {
	var w Write[T]
	w.Level = outputLevel
	if level != outputLevel && level > 0 && p.PerLevel {
		// Level-0 inputs are runs of their own, counted as such.
		for _, f := range upper {
			w.Incoming += p.stats(f).Keys()
		}
		w.Leaving = upper
	}
	// The outputs replace every input and hold about as many keys. A
	// rewrite in place (re-filtering a level) re-applies the policy for
	// the tree as it stands and takes its choice uncorrected: a level
	// rewritten on the current shape spends its share of the budget
	// exactly, and the controller would instead pin whatever split the
	// tree has (every split that spends the budget is one it keeps).
	if level != outputLevel {
		w.Replaced = slices.Concat(upper, lower)
		for _, f := range w.Replaced {
			w.Written += p.stats(f).Keys()
		}
	}
	return p.BitsPerKey(v, w)
}

// Shape returns the sorted runs an absent Get probes, as the per-level
// policy sees them for a table written to level of v: each run's keys,
// the fraction of absent keys that probe it (coverage.go), and which run
// the table joins (-1: none). incoming and leaving are as in Write.
func (p *Policy[T, V]) Shape(v V, level int, incoming float64, leaving []T) (keys, probed []float64, target int) {
	// The runs an absent Get probes: each level-0 table, then one per
	// deeper level. The last level is not one when its tables go without
	// filters: the budget is then spread over the others.
	skip := -1
	if p.SkipLastLevel {
		skip = LastLevel[T](v)
	}
	l0Tables := v.Level(0)
	runs := make([]run[T], 0, len(l0Tables)+NumLevels)
	keys = make([]float64, 0, len(l0Tables)+NumLevels)
	target = -1
	var l0 float64
	for i := range l0Tables {
		n := p.stats(l0Tables[i]).Keys()
		runs = append(runs, run[T]{level: 0, tables: l0Tables[i : i+1]})
		keys = append(keys, n)
		l0 += n
	}
	if level == 0 {
		if incoming == 0 && len(l0Tables) > 0 {
			incoming = l0 / float64(len(l0Tables)) // the typical flush
		}
		// A flush spans what its memtable held: its range is unknown, so
		// it counts as covering every key.
		target = len(keys)
		runs = append(runs, run[T]{level: 0, incoming: incoming, spansAll: true})
		keys = append(keys, incoming)
	}
	for l := 1; l < NumLevels; l++ {
		if l == skip && l != level {
			continue
		}
		r := run[T]{level: l, tables: without(v.Level(l), leaving)}
		var n float64
		for _, f := range r.tables {
			n += p.stats(f).Keys()
		}
		if l == level {
			n += incoming
			r.incoming = incoming
			r.joining = leaving
			target = len(keys)
		}
		runs = append(runs, r)
		keys = append(keys, n)
	}
	return keys, p.probedFractions(v, runs, leaving), target
}

// without returns tables less those in leaving: tables itself when none
// of them leaves (the common case: no copy).
func without[T Table](tables, leaving []T) []T {
	i := slices.IndexFunc(tables, func(f T) bool { return slices.Contains(leaving, f) })
	if i < 0 {
		return tables
	}
	kept := slices.Clone(tables[:i])
	for _, f := range tables[i+1:] {
		if !slices.Contains(leaving, f) {
			kept = append(kept, f)
		}
	}
	return kept
}

// Written is what an existing table's filter was built with, as its
// properties record.
type Written struct {
	BitsPerKey float64 // 0: no filter
	Variant    filter.Variant
	KeyName    string
	WholeKeys  bool
	// RangeBitsPerKey is the budget its range filter was built with (0:
	// none).
	RangeBitsPerKey float64
}

// Stale reports whether a table whose filters were built as w, in level
// of v or about to move there, has a point filter other than the policy
// would give it now, or a range filter of another budget. Under PerLevel a table within StaleBits of its level's choice is
// not stale.
func (p *Policy[T, V]) Stale(v V, level int, w Written) bool {
	if w.RangeBitsPerKey != p.RangeBitsPerKey {
		return true
	}
	want, have := p.BitsPerKey(v, Write[T]{Level: level}), w.BitsPerKey
	if want == 0 || have == 0 {
		return want != have
	}
	if p.PerLevel && math.Abs(have-want) <= StaleBits {
		want = have
	}
	if w.KeyName != p.KeyName || w.Variant != p.Variant || w.WholeKeys != p.WholeKeys {
		return true
	}
	// A fuse filter's size follows from its keys, not from the bits.
	return p.Variant != filter.VariantFuse && math.Abs(have-want) > 1e-9
}
