package treefilter

// The size rule: the loads a filter is built to, and when an update must
// give way to a build from the tables (a growth, or a shrink).
//
// A cuckoo filter cannot be resized from its fingerprints (an entry's
// bucket came from hash bits it does not keep), so a filter that outgrows
// its table is rebuilt from every table of the tree, and what a growth
// costs is the tables it reads. Growing by a factor g reads, over a load
// from empty to n entries, about n·g/(g-1) keys, and leaves the filter
// anywhere between GrowLoad and MaxLoad full, 16/load bits per entry. The
// first rule (build at 0.55, rebuild past 0.95: g = 1.73) read 2.4n keys
// and left a 10M-key fill's filter at 26.81 bits per entry (load 0.60),
// 1.5x its compact size. Building at 0.77 and rebuilding past 0.92 (g =
// 1.19) reads about 6.2n keys and keeps the filter within 1.19x of its
// size at MaxLoad, 1.17x of a build at OpenLoad, at every point of a
// load.
//
// The upper bound is also what an update costs: an insertion into a
// 4-slot table kicks entries about longer the fuller it is, and a
// removal and an insertion (a compaction's churn) cost up to 1.4x as much
// at 92% load as at 90%, and 4-8x at 95% (BenchmarkUpdates). Held between
// 77% and 92%, a growth cycle's updates cost about what the first rule's
// (55% to 95%) did, where 80% to 95% cost 2-3x as much.

const (
	// OpenLoad is the load a filter is built to from a settled tree
	// (Open): near MaxLoad, with room for 2% more entries before a
	// growth, and as full as the tree filter can be while it spends no
	// more than per-table blooms at its false-positive rate
	// (TestMemoryAgainstBloom: 0.88 spends 101%). A 4-slot cuckoo table
	// with maxKicks fills to ~96% before insertions start failing, but
	// updates near that are slow.
	OpenLoad = 0.90
	// GrowLoad is the load a growth (or shrink) build sizes the filter
	// for: the entries it holds at the build at this load, which leaves
	// room for MaxLoad/GrowLoad = 1.19x as many before the next one.
	GrowLoad = 0.77
	// MaxLoad is the load past which an update gives way to a growth
	// build.
	MaxLoad = 0.92
	// ShrinkLoad is the load below which an update gives way to a
	// shrink build (the tree lost entries: deletions and overwrites
	// merged away), so the filter comes back to GrowLoad. Far enough
	// below GrowLoad (a loss of a third of the entries) that an entry count
	// that goes up and down does not make a build after each step. It is
	// measured against the entries the filter was built (or loaded) with,
	// not its slots: a build sizes the filter from the tables' key
	// estimates (their filters' key counts, or their entries), which can
	// be high (versions of a key, whole keys beside prefixes), and a
	// filter left emptier than planned must not be rebuilt again and
	// again.
	ShrinkLoad = 0.50
	// shrinkMinSlots: a filter this small is never shrunk (its memory
	// is nothing beside a build's reads).
	shrinkMinSlots = 1 << 12
)

// Fits reports whether t may be updated to hold entries (an update may
// apply) or must be rebuilt at GrowLoad: more than MaxLoad of its slots,
// or fewer than ShrinkLoad/GrowLoad of the entries it was built with
// (MarkBuilt) when it has at least shrinkMinSlots slots.
func (t *Filter) Fits(entries int) bool {
	if float64(entries) > MaxLoad*float64(t.Capacity()) {
		return false
	}
	return t.Capacity() < shrinkMinSlots || float64(entries) >= ShrinkLoad/GrowLoad*float64(t.built)
}

// MarkBuilt records the entries t holds as those it was built with, the
// base of the shrink rule (Fits). Decode marks a loaded filter.
// REQUIRES: t is not published.
func (t *Filter) MarkBuilt() { t.built = t.entries }
