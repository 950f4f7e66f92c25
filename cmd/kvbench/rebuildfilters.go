package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/bloomkv/bloomkv"
)

// -rebuild_filters (issue 28): compare filter settings on the very same
// tables. The database's filters are rewritten in place under the flags
// given (DB.RebuildFilters: each table of levels >= 1 whose filter differs,
// within its level, so every level keeps its keys), then the reads run.
// With -filter_sweep, one load (or -use_existing_db) serves every setting.

// rebuildInfo is one rebuild: how long it took and the tree it left (the
// "rebuild_filters" entries of the JSON report).
type rebuildInfo struct {
	Setting string  `json:"setting"`
	Seconds float64 `json:"seconds"`
	Shape   shape   `json:"shape"`
}

// validateRebuild checks the -rebuild_filters combinations.
func (c *config) validateRebuild() error {
	switch {
	case c.rebuildFilters && !c.useExistingDB && len(c.filterSweep) == 0:
		return errors.New("-rebuild_filters rewrites an existing database's filters: it needs -db DIR -use_existing_db (or -filter_sweep, which loads once and rebuilds per setting)")
	case c.rebuildFilters && (len(c.sweep) > 0 || c.compareFilters):
		return errors.New("-rebuild_filters goes with a plain run or -filter_sweep, not -sweep or -compare_filters")
	}
	return nil
}

// rebuildFilters rewrites db's filters under the current options and
// records the rebuild; the tables then carry the setting asked for.
func (s *study) rebuildFilters(db *bloomkv.DB, setting string) error {
	start := time.Now()
	if err := db.RebuildFilters(); err != nil {
		return fmt.Errorf("-rebuild_filters %s: %w", setting, err)
	}
	waitTreeFilter(db) // the rewritten tables reach the tree filter in the background
	s.rep.Rebuilds = append(s.rep.Rebuilds, rebuildInfo{Setting: setting, Seconds: time.Since(start).Seconds(), Shape: shapeOf(db.Metrics())})
	s.wroteAll, s.wroteBits = true, s.cfg.bloomBits
	return nil
}

// filterSweepSameTree is -filter_sweep with -rebuild_filters: load once
// (unless -use_existing_db), then for each setting reopen under it,
// rebuild the filters, and run the read workloads. Every setting reads the
// same per-level key sets; the shapes are reported to show it.
func (s *study) filterSweepSameTree() error {
	if err := s.withDB(s.cfg.bloomBits, false, s.load); err != nil {
		return err
	}
	for _, fs := range s.cfg.filterSweep {
		s.setting = fs
		rebuild := func(db *bloomkv.DB) error { return s.rebuildFilters(db, fs.Name) }
		if err := s.sweepSetting(fs, rebuild, nil); err != nil {
			return err
		}
	}
	return nil
}
