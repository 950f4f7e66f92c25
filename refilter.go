package bloomkv

import (
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// RebuildFilters rewrites, each in its own level, every table of levels 1
// and deeper whose filter is not what the current Options would write
// (variant, bits per key or the per-level policy's choice, FilterKey):
// the levels keep exactly the keys they hold, so filter settings can be
// compared on the very same tree (kvbench -rebuild_filters; issue 28):
// each table is rewritten alone, so the tables keep their bounds too.
// Unlike Compact it merges nothing across levels and flushes nothing.
// Level-0 tables keep their filters (a settled tree has none). Close
// waits for it, as for Compact.
func (db *DB) RebuildFilters() error {
	if db.closed.Load() {
		return ErrClosed
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	release, err := db.claimManualCompaction()
	if err != nil {
		return err
	}
	defer release()

	// Shallow levels first: the per-level policy then sees each deeper
	// level as it stands when its turn comes (each level rewritten spends
	// its share of the budget on the current shape).
	for level := 1; level < manifest.NumLevels; level++ {
		db.mu.Lock()
		v := db.versions.Current()
		v.Ref()
		db.mu.Unlock()
		// One compaction per table, not per run of stale tables (as
		// PickStale would): a table rewritten alone keeps its bounds, so
		// the key ranges an absent Get falls in, and the tables it
		// probes, stay as they were. (A table larger than its level's
		// target size now is split, at a point between two of its keys.)
		var cs []*tableCompaction
		base := compaction.ShapeOf(v, db.compactionOptions()).Base
		for _, f := range v.Levels[level] {
			if db.filterIsStale(v, level, f) {
				cs = append(cs, &tableCompaction{Level: level, OutputLevel: level, Base: base, Inputs: [2][]*manifest.FileMetadata{{f}}})
			}
		}
		err := db.runManualCompactions(cs, v)
		v.Unref()
		if err != nil {
			return err
		}
	}
	return nil
}
