package bloomkv

import (
	"bytes"
	"slices"
	"sync"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

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
