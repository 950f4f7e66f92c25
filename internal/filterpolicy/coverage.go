package filterpolicy

import (
	"bytes"
	"sync"
)

// Probe coverage for the per-level policy.
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

// run is one sorted run as the policy sees it: its tables (without those
// leaving it), and keys about to enter it whose tables (if known) join its
// range.
type run[T Table] struct {
	level    int
	tables   []T // a level's are sorted and disjoint
	incoming float64
	joining  []T  // tables whose keys enter the run
	spansAll bool // a flush of unknown range: q = 1
}

// coveredBy reports whether r's key range, with its joining tables',
// overlaps sample table f.
func (r *run[T]) coveredBy(f T) bool {
	lo, hi := f.SmallestUserKey(), f.LargestUserKey()
	if r.level == 0 {
		for _, t := range r.tables {
			if overlaps(t, lo, hi) {
				return true
			}
		}
	} else if i := tableFor(r.tables, lo); i < len(r.tables) && bytes.Compare(r.tables[i].SmallestUserKey(), hi) <= 0 {
		return true
	}
	for _, t := range r.joining {
		if overlaps(t, lo, hi) {
			return true
		}
	}
	return false
}

// probedFractions returns, for each run, the estimated fraction of absent
// keys that probe it (1 when the tree has no samples), from the live
// tables of v's levels 1 and deeper less those in leaving.
func (p *Policy[T, V]) probedFractions(v V, runs []run[T], leaving []T) []float64 {
	// The estimate reads every table once per run; on a tree as it stands
	// (no compaction's inputs leaving, nothing entering a level) it is
	// the same for every caller, so the last one is kept per tree.
	plain := len(leaving) == 0
	for _, r := range runs {
		plain = plain && (r.spansAll || r.incoming == 0 && len(r.joining) == 0)
	}
	if !plain {
		return p.estimateProbed(v, runs, leaving)
	}
	if q, ok := p.memo.get(v, runs); ok {
		return q
	}
	q := p.estimateProbed(v, runs, nil)
	p.memo.put(v, runs, q)
	return q
}

// estimateProbed is probedFractions without the memo.
func (p *Policy[T, V]) estimateProbed(v V, runs []run[T], leaving []T) []float64 {
	type sample struct {
		f    T
		keys float64
	}
	var samples []sample
	var total float64
	for l := 1; l < NumLevels; l++ {
		for _, f := range without(v.Level(l), leaving) {
			if n := p.stats(f).Keys(); n > 0 {
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
				n := p.stats(f).Keys()
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

// coverageMemo keeps the last plain estimate: the tree it was made for
// and the fractions of its runs that are not a flush (those are 1). Trees
// never change once built, so a match is exact.
type coverageMemo[T Table, V comparable] struct {
	mu sync.Mutex
	v  V
	q  []float64
}

func (m *coverageMemo[T, V]) get(v V, runs []run[T]) ([]float64, bool) {
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

func (m *coverageMemo[T, V]) put(v V, runs []run[T], q []float64) {
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
