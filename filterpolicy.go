package bloomkv

import (
	"bytes"
	"math"
	"slices"
	"sync"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// The filter policy decides the bits per key of each table the engine
// writes: Options' uniform setting (filterBitsPerKey), or with
// FilterPerLevel a per-level choice (filter.AllocateBits, Monkey) at the
// same total memory, and with FilterSkipLastLevel none in the last level.
// It is decided when a table is started, from the live tree; tables keep
// what they were written with, and compactions converge the tree.

// maxPolicyBits caps the bits per key the per-level policy gives a run: at
// 32 bits a bloom's rate is 2e-7, and small level-0 tables would
// otherwise ask for more than a filter block allows.
const maxPolicyBits = 32

// lastLevel returns the deepest level of v holding a table (0 if none).
func lastLevel(v *manifest.Version) int {
	for l := manifest.NumLevels - 1; l > 0; l-- {
		if len(v.Levels[l]) > 0 {
			return l
		}
	}
	return 0
}

// isLastLevel reports whether a table written to level would be in the
// tree's last level: level 1 or deeper, with nothing below it. Level 0 is
// never the last level (flushes keep their filters).
func isLastLevel(v *manifest.Version, level int) bool {
	return level >= 1 && level >= lastLevel(v)
}

// tableKeys returns the keys a table's filter indexes, or for a table
// without a filter its entries (what a filter would index, near enough).
func (db *DB) tableKeys(f *manifest.FileMetadata) float64 {
	fs, ok := db.tableFilterStats(f)
	if !ok {
		return 0
	}
	if fs.keys > 0 {
		return float64(fs.keys)
	}
	return float64(fs.entries)
}

// levelFilterBits returns the bits per key for a table written now to
// level of v (0 = no filter). incoming is the keys about to enter the
// level from elsewhere (a flush's memtable, a compaction's inputs from the
// level above): with FilterPerLevel a level-0 table is a run of its own of
// that size, and a deeper level grows by it. leaving are the tables those
// keys come from (a compaction's inputs from the level above): their
// level shrinks by them. v may be nil (during recovery): the uniform
// setting then applies.
func (db *DB) levelFilterBits(v *manifest.Version, level int, incoming float64, leaving ...*manifest.FileMetadata) float64 {
	return db.writeFilterBits(v, level, incoming, leaving, 0, nil)
}

// writeFilterBits is levelFilterBits for a write of written keys that
// replaces the tables in replaced: under FilterPerLevel (without
// FilterSkipLastLevel) the choice is corrected toward the memory budget
// (budgetedBits). written 0 asks for the per-level choice alone.
func (db *DB) writeFilterBits(v *manifest.Version, level int, incoming float64, leaving []*manifest.FileMetadata, written float64, replaced []*manifest.FileMetadata) float64 {
	uniform := db.opts.filterBitsPerKey()
	if uniform == 0 || v == nil {
		return uniform
	}
	if db.opts.FilterSkipLastLevel && isLastLevel(v, level) {
		return 0
	}
	if !db.opts.FilterPerLevel {
		return uniform
	}
	keys, probed, target := db.policyShape(v, level, incoming, leaving)
	if target < 0 || keys[target] == 0 {
		return uniform // nothing known of the run: the uniform setting
	}
	bits := filter.AllocateBitsProbed(keys, probed, uniform, maxPolicyBits)[target]
	if !db.opts.FilterSkipLastLevel {
		bits = db.budgetedBits(v, bits, uniform, written, replaced)
	}
	// Hundredths of a bit: tables record the setting exactly, and a
	// rounded one reads better in properties and metrics.
	return math.Round(bits*100) / 100
}

// policyShape returns the sorted runs an absent Get probes, as the policy
// sees them for a table written to level of v: each run's keys, the
// fraction of absent keys that probe it (filtercoverage.go), and which
// run the table joins (-1: none). incoming and leaving are as for
// levelFilterBits.
func (db *DB) policyShape(v *manifest.Version, level int, incoming float64, leaving []*manifest.FileMetadata) (keys, probed []float64, target int) {
	// The runs an absent Get probes: each level-0 table, then one per
	// deeper level. The last level is not one when its tables go without
	// filters: the budget is then spread over the others.
	skip := -1
	if db.opts.FilterSkipLastLevel {
		skip = lastLevel(v)
	}
	var runs []policyRun
	target = -1
	var l0 float64
	for _, f := range v.Levels[0] {
		n := db.tableKeys(f)
		runs = append(runs, policyRun{level: 0, tables: []*manifest.FileMetadata{f}})
		keys = append(keys, n)
		l0 += n
	}
	if level == 0 {
		if incoming == 0 && len(v.Levels[0]) > 0 {
			incoming = l0 / float64(len(v.Levels[0])) // the typical flush
		}
		// A flush spans what its memtable held: its range is unknown, so
		// it counts as covering every key.
		target = len(keys)
		runs = append(runs, policyRun{level: 0, incoming: incoming, spansAll: true})
		keys = append(keys, incoming)
	}
	for l := 1; l < manifest.NumLevels; l++ {
		if l == skip && l != level {
			continue
		}
		run := policyRun{level: l}
		var n float64
		for _, f := range v.Levels[l] {
			if !slices.Contains(leaving, f) {
				n += db.tableKeys(f)
				run.tables = append(run.tables, f)
			}
		}
		if l == level {
			n += incoming
			run.incoming = incoming
			run.joining = leaving
			target = len(keys)
		}
		runs = append(runs, run)
		keys = append(keys, n)
	}
	return keys, db.probedFractions(v, runs, leaving), target
}

// policyFilterBits is levelFilterBits on the live tree (the uniform
// setting before Open has one, during recovery). The tables it reads the
// key counts of are opened outside db.mu.
func (db *DB) policyFilterBits(level int, incoming float64) float64 {
	if db.readState.Load() == nil {
		return db.levelFilterBits(nil, level, incoming)
	}
	s, slot := db.loadReadState()
	defer s.unref(slot)
	return db.writeFilterBits(s.v, level, incoming, nil, incoming, nil)
}

// compactionFilterBits is the policy's bits per key for c's outputs: the
// output level of v, grown by the keys c brings from the level above.
func (db *DB) compactionFilterBits(c *tableCompaction, v *manifest.Version) float64 {
	var incoming float64
	var leaving []*manifest.FileMetadata
	if c.Level != c.OutputLevel && c.Level > 0 && db.opts.FilterPerLevel {
		// Level-0 inputs are runs of their own, counted as such.
		for _, f := range c.Inputs[0] {
			incoming += db.tableKeys(f)
		}
		leaving = c.Inputs[0]
	}
	// The outputs replace every input and hold about as many keys. A
	// rewrite in place (Compact re-filtering a level) re-applies the
	// policy for the tree as it stands and takes its choice uncorrected:
	// a level rewritten on the current shape spends its share of the
	// budget exactly, and the controller would instead pin whatever split
	// the tree has (every split that spends the budget is one it keeps).
	var written float64
	var replaced []*manifest.FileMetadata
	if c.Level != c.OutputLevel {
		replaced = slices.Concat(c.Inputs[0], c.Inputs[1])
		for _, f := range replaced {
			written += db.tableKeys(f)
		}
	}
	return db.writeFilterBits(v, c.OutputLevel, incoming, leaving, written, replaced)
}

// The per-level policy's memory controller.
//
// AllocateBits spends exactly the budget on the tree as it stands, but a
// table keeps the bits it was written with while the tree around it
// changes shape: a level written while it was the largest got few bits
// and keeps them after a larger level appears below it, and the reverse.
// Left alone, a growing tree drifts from the budget (measured: 17% under,
// then 10% over once trivial moves were re-filtered). So each write is
// also asked to close the gap between what the live tables spend and
// what the uniform setting would spend on them:
//
//	gap = b̄ (N_other + n) − M_other − n b_monkey
//	b   = b_monkey + gap / n,  within ± maxBudgetCorrection of b_monkey
//
// where the write produces n keys, the tables it replaces are left out of
// N_other (keys) and M_other (filter bits, each table's bits per key times
// its filter keys), and b_monkey is AllocateBits' choice for the level.
// Closing the whole gap at once does not overshoot: the replaced tables
// leave the sums, and the write's own keys enter them at the chosen b, so
// after it the live tree spends the budget exactly (up to the keys a
// compaction drops). The bound keeps a small write (a flush of 2% of the
// keys) from taking an extreme setting to repay a debt a large one will
// repay better; level-0 tables are short-lived anyway.

// maxBudgetCorrection is how far, in bits per key, the controller may move
// a write from the per-level choice.
const maxBudgetCorrection = 2

// budgetedBits returns monkeyBits corrected toward the budget (uniform bits
// per key over every live key) for a write of written keys to level of v
// that replaces the tables in replaced. With written 0 there is nothing to
// correct by.
func (db *DB) budgetedBits(v *manifest.Version, monkeyBits, uniform, written float64, replaced []*manifest.FileMetadata) float64 {
	if written <= 0 || uniform <= 0 {
		return monkeyBits
	}
	var keys, spent float64
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			if slices.Contains(replaced, f) {
				continue
			}
			fs, ok := db.tableFilterStats(f)
			if !ok {
				continue // unreadable: neither side counts it
			}
			keys += db.tableKeys(f)
			if fs.bits > 0 {
				spent += fs.bits * float64(fs.keys)
			}
		}
	}
	gap := uniform*(keys+written) - spent - written*monkeyBits
	bits := monkeyBits + gap/written
	bits = min(max(bits, monkeyBits-maxBudgetCorrection, 0), monkeyBits+maxBudgetCorrection, maxPolicyBits)
	return bits
}

// Probe coverage for the per-level filter policy.
//
// Monkey's allocation assumes every absent key probes every sorted run. In
// a growing tree that is not so: a level whose compactions into the level
// below have emptied part of its key range is probed only by keys in the
// rest, and a last level still filling holds, roughly, the ranges the
// level above has handed down (measured on a 1M-key kvbench tree: 1.4
// tables probed per absent Get in a tree of three levels). A bit spent on
// a run that a fraction q of absent keys probe buys q times as much, so
// filter.AllocateBitsProbed weighs each run by its q, estimated here.
//
// The estimate takes the tables of levels 1 and deeper as samples of where
// keys lie (each weighted by its keys; absent keys are assumed to follow
// present ones): q of a run is the share of sampled keys in tables that
// the run's key range overlaps, the run's own tables always included.
// Level-0 tables are not samples (one spans whatever its memtable held, so
// it overlaps nearly everything), but a level-0 run counts its own keys.
// The granularity is a table: a sample table the run touches at all counts
// whole, so q is rounded up by about one table per edge of the run.

// policyRun is one sorted run as the policy sees it: its tables (without
// those leaving it), and keys about to enter it whose tables (if known)
// join its range.
type policyRun struct {
	level    int
	tables   []*manifest.FileMetadata // a level's are sorted and disjoint
	incoming float64
	joining  []*manifest.FileMetadata // tables whose keys enter the run
	spansAll bool                     // a flush of unknown range: q = 1
}

// coveredBy reports whether run's key range, with its joining tables',
// overlaps sample table f.
func (r *policyRun) coveredBy(f *manifest.FileMetadata) bool {
	lo, hi := f.SmallestUserKey(), f.LargestUserKey()
	if r.level == 0 {
		for _, t := range r.tables {
			if t.Overlaps(lo, hi) {
				return true
			}
		}
	} else if i := manifest.FileFor(r.tables, lo); i < len(r.tables) && bytes.Compare(r.tables[i].SmallestUserKey(), hi) <= 0 {
		return true
	}
	for _, t := range r.joining {
		if t.Overlaps(lo, hi) {
			return true
		}
	}
	return false
}

// probedFractions returns, for each run, the estimated fraction of absent
// keys that probe it (1 when the tree has no samples), from the live
// tables of v's levels 1 and deeper less those in leaving.
func (db *DB) probedFractions(v *manifest.Version, runs []policyRun, leaving []*manifest.FileMetadata) []float64 {
	// The estimate reads every table once per run; on a tree as it stands
	// (no compaction's inputs leaving, nothing entering a level) it is
	// the same for every caller, so the last one is kept per version.
	plain := len(leaving) == 0
	for _, r := range runs {
		plain = plain && (r.spansAll || r.incoming == 0 && len(r.joining) == 0)
	}
	if plain {
		if q, ok := db.coverage.get(v, runs); ok {
			return q
		}
		q := db.estimateProbed(v, runs, nil)
		db.coverage.put(v, runs, q)
		return q
	}
	return db.estimateProbed(v, runs, leaving)
}

// estimateProbed is probedFractions without the memo.
func (db *DB) estimateProbed(v *manifest.Version, runs []policyRun, leaving []*manifest.FileMetadata) []float64 {
	type sample struct {
		f    *manifest.FileMetadata
		keys float64
	}
	var samples []sample
	var total float64
	for l := 1; l < manifest.NumLevels; l++ {
		for _, f := range v.Levels[l] {
			if slices.Contains(leaving, f) {
				continue
			}
			if n := db.tableKeys(f); n > 0 {
				samples = append(samples, sample{f, n})
				total += n
			}
		}
	}
	q := make([]float64, len(runs))
	for i := range runs {
		r := &runs[i]
		covered, all := r.incoming, total+r.incoming
		if r.level == 0 {
			for _, f := range r.tables {
				n := db.tableKeys(f)
				covered += n
				all += n
			}
		}
		for _, s := range samples {
			if r.coveredBy(s.f) {
				covered += s.keys
			}
		}
		q[i] = 1
		if !r.spansAll && all > 0 && total > 0 {
			q[i] = covered / all
		}
	}
	return q
}

// coverageMemo keeps the last plain estimate: the version it was made for
// and the fractions of its runs that are not a flush (those are 1).
// Versions are immutable, so a match is exact.
type coverageMemo struct {
	mu sync.Mutex
	v  *manifest.Version
	q  []float64
}

func (m *coverageMemo) get(v *manifest.Version, runs []policyRun) ([]float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.v != v {
		return nil, false
	}
	q := make([]float64, len(runs))
	j := 0
	for i, r := range runs {
		if r.spansAll {
			q[i] = 1
			continue
		}
		if j == len(m.q) {
			return nil, false
		}
		q[i], j = m.q[j], j+1
	}
	return q, j == len(m.q)
}

func (m *coverageMemo) put(v *manifest.Version, runs []policyRun, q []float64) {
	var kept []float64
	for i, r := range runs {
		if !r.spansAll {
			kept = append(kept, q[i])
		}
	}
	m.mu.Lock()
	m.v, m.q = v, kept
	m.mu.Unlock()
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

// pinsFilter reports whether a table probed in level keeps its filter
// pinned under the Options.
func (o *Options) pinsFilter(level int) bool {
	if !o.CacheFilterBlocks {
		return false
	}
	switch o.FilterPinning {
	case PinAllFilters:
		return true
	case PinLevel0Filters:
		return level == 0
	}
	return false
}
