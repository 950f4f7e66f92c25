package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
)

// filterSetting is one -filter_sweep entry: a variant and a policy.
type filterSetting struct {
	Name     string `json:"name"` // as given, e.g. "standard/per_level"
	Variant  filter.Variant
	PerLevel bool
	SkipLast bool
	Tree     bool // "/tree": with Options.TreeFilter (issue 28)
}

func parseVariant(s string) (filter.Variant, error) {
	switch s {
	case "standard":
		return filter.VariantStandard, nil
	case "blocked":
		return filter.VariantBlocked, nil
	case "fuse":
		return filter.VariantFuse, nil
	}
	return 0, errors.New("want standard, blocked or fuse")
}

// parseFilterSweep parses -filter_sweep: variant[/per_level][/skip_last],...
func parseFilterSweep(s string) ([]filterSetting, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []filterSetting
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, "/")
		v, err := parseVariant(parts[0])
		if err != nil {
			return nil, fmt.Errorf("-filter_sweep %q: variant %q: %w", item, parts[0], err)
		}
		fs := filterSetting{Name: item, Variant: v}
		for _, p := range parts[1:] {
			switch p {
			case "per_level":
				fs.PerLevel = true
			case "skip_last":
				fs.SkipLast = true
			case "tree":
				fs.Tree = true
			default:
				return nil, fmt.Errorf("-filter_sweep %q: %q is not per_level, skip_last or tree", item, p)
			}
		}
		if fs.PerLevel && v == filter.VariantFuse {
			return nil, fmt.Errorf("-filter_sweep %q: per_level needs a bloom variant", item)
		}
		out = append(out, fs)
	}
	if len(out) == 0 {
		return nil, errors.New("-filter_sweep: empty list")
	}
	return out, nil
}

// policyName labels a setting's policy in results.
func (fs filterSetting) policyName() string {
	if fs.Tree {
		tables := fs
		tables.Tree = false
		return tables.policyName() + "+tree"
	}
	switch {
	case fs.PerLevel && fs.SkipLast:
		return "per_level+skip_last"
	case fs.PerLevel:
		return "per_level"
	case fs.SkipLast:
		return "skip_last"
	}
	return "uniform"
}

// filterSweepRun is what one -filter_sweep setting left: its load time and
// the tree and filters the reads ran on.
type filterSweepRun struct {
	Setting     string  `json:"setting"`
	Variant     string  `json:"filter_variant"`
	Policy      string  `json:"filter_policy"`
	LoadSeconds float64 `json:"load_seconds"`
	Shape       shape   `json:"shape"`
	// The variant's CPU cost at the budget, on the run's keys (filtercost.go),
	// and the false-positive rate of those standalone probes.
	BuildNsPerKey float64 `json:"build_ns_per_key"`
	ProbeNs       float64 `json:"probe_ns"`
	ProbeFPRate   float64 `json:"probe_fp_rate"`
}

// filterSweep loads the same keys, in the same order (the same -seed),
// into a new database for each setting, with the same bits-per-key budget,
// and runs the read workloads on it. The trees differ only where
// compaction timing differs; each run's shape is reported, with the filter
// memory and the policy's bits per level, so that "equal memory" can be
// checked rather than assumed.
func (s *study) filterSweep() error {
	base := s.dir
	defer func() { s.dir = base }()
	for i, fs := range s.cfg.filterSweep {
		s.setting = fs
		s.dir = filepath.Join(base, fmt.Sprintf("filter-sweep-%d", i))
		dir := s.dir
		if err := s.sweepSetting(fs, s.load, func() error { return os.RemoveAll(dir) }); err != nil {
			return err
		}
	}
	return nil
}

// sweepSetting runs one -filter_sweep entry on a database opened under
// it: prepare gives the tables the setting (a load into a new database, or
// the filters of the loaded one rebuilt), then the read workloads run;
// their results are labelled with the setting, and the setting's filter
// costs and tree go into the report. cleanup (may be nil) runs once the
// database is closed. Both kinds of sweep share this so that their entries
// are measured and labelled alike.
func (s *study) sweepSetting(fs filterSetting, prepare func(*bloomkv.DB) error, cleanup func() error) error {
	run := filterSweepRun{Setting: fs.Name, Variant: fs.Variant.String(), Policy: fs.policyName()}
	first := len(s.rep.Results)
	err := s.withDB(s.cfg.bloomBits, false, func(db *bloomkv.DB) error {
		start := time.Now()
		if err := prepare(db); err != nil {
			return err
		}
		run.LoadSeconds = time.Since(start).Seconds()
		run.Shape = shapeOf(db.Metrics())
		return s.readPass(db, "filter_sweep", s.cfg.bloomBits, true)
	})
	if cleanup != nil {
		if cerr := cleanup(); err == nil && cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("-filter_sweep %s: %w", fs.Name, err)
	}
	for _, r := range s.rep.Results[first:] {
		r.FilterSetting, r.FilterPolicy = fs.Name, fs.policyName()
	}
	if run.BuildNsPerKey, run.ProbeNs, run.ProbeFPRate, err = filterCost(s.r.ks, fs.Variant, s.budgetBits(), s.cfg.seed); err != nil {
		return fmt.Errorf("-filter_sweep %s: %w", fs.Name, err)
	}
	s.rep.FilterSweep = append(s.rep.FilterSweep, run)
	return nil
}

// budgetBits is the sweep's bits-per-key budget: -filter_bits, else
// -bloom_bits.
func (s *study) budgetBits() float64 {
	if s.cfg.filterBits > 0 {
		return s.cfg.filterBits
	}
	return float64(tableBits(s.cfg.bloomBits))
}
