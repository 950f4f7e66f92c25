package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv"
)

// report is everything one kvbench run measured; the JSON output is this
// struct (documented in docs/studying-filters.md).
type report struct {
	Run         runInfo             `json:"run"`
	Config      map[string]any      `json:"config"`
	Load        loadInfo            `json:"load"`
	Shape       shape               `json:"shape"`
	Results     []*result           `json:"results"`
	Comparisons []comparison        `json:"comparisons,omitempty"`
	Sweep       []sweepSetting      `json:"sweep,omitempty"`
	FilterSweep []filterSweepRun    `json:"filter_sweep,omitempty"`
	Rebuilds    []rebuildInfo       `json:"rebuild_filters,omitempty"` // -rebuild_filters
	RangeSweep  []rangeSweepSetting `json:"range_sweep,omitempty"`     // -range_sweep
	Warnings    []string            `json:"warnings"`
	cfg         *config             // for the text report
}

// loadInfo describes getting the data in and the tree settled.
type loadInfo struct {
	SettleSeconds      float64 `json:"settle_seconds"`
	Flushes            uint64  `json:"flushes"`
	Compactions        uint64  `json:"compactions"`
	WriteStalls        uint64  `json:"write_stalls"`
	WriteStallSeconds  float64 `json:"write_stall_seconds"`
	UserBytesWritten   uint64  `json:"user_bytes_written"`
	WriteAmplification float64 `json:"write_amplification"`
}

// sweepSetting is one -sweep setting: how long recompacting took and the
// tree it left.
type sweepSetting struct {
	BloomBits        int     `json:"bloom_bits"`
	RecompactSeconds float64 `json:"recompact_seconds"`
	Shape            shape   `json:"shape"`
}

// execute runs the study cfg describes and returns its report. Progress
// goes to stderr.
func execute(cfg *config, stderr io.Writer) (*report, error) {
	start := time.Now()
	rep := &report{Run: newRunInfo(start), Config: cfg.flagValues, cfg: cfg, Warnings: []string{}}
	dir, cleanup, err := prepareDir(cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep.Run.DBDir, rep.Run.DBTemporary = dir, cfg.db == ""

	s := &study{
		cfg: cfg,
		dir: dir,
		rep: rep,
		r: &runner{
			cfg:   cfg,
			ks:    newRowKeySpace(cfg.rows, cfg.colsPerRow, cfg.num, cfg.keySize, cfg.valueSize, cfg.compressionRatio),
			prog:  newProgress(cfg.progress, isTerminal(stderr), stderr),
			fresh: !cfg.useExistingDB,
		},
	}
	s.setting = filterSetting{Name: cfg.filterVariant.String(), Variant: cfg.filterVariant, PerLevel: cfg.filterPerLevel, SkipLast: cfg.filterSkipLast}
	if s.r.fresh {
		s.wroteAll, s.wroteBits = true, cfg.bloomBits
	}
	switch {
	case len(cfg.filterSweep) > 0 && cfg.rebuildFilters:
		err = s.filterSweepSameTree() // rebuildfilters.go
	case len(cfg.filterSweep) > 0:
		err = s.filterSweep()
	case len(cfg.sweep) > 0:
		err = s.sweep()
	case len(cfg.rangeSweep) > 0:
		err = s.rangeSweep() // rangesweep.go
	case cfg.compareFilters:
		err = s.compare()
	default:
		err = s.plain()
	}
	if err != nil {
		return nil, err
	}
	rep.Warnings = append(rep.Warnings, foundWarnings(rep.Results)...)
	rep.Run.WallSeconds = time.Since(start).Seconds()
	rep.Run.LoadEnd = loadAverage()
	return rep, nil
}

// prepareDir returns the database directory and what to do at exit: a new
// temporary directory (removed), or -db, which must be empty or missing
// unless -use_existing_db (kvbench never deletes a directory it did not
// create).
func prepareDir(cfg *config) (string, func(), error) {
	if cfg.db == "" {
		dir, err := os.MkdirTemp("", "kvbench-")
		if err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	entries, err := os.ReadDir(cfg.db)
	switch {
	case errors.Is(err, fs.ErrNotExist) && cfg.useExistingDB:
		return "", nil, fmt.Errorf("-use_existing_db: %s does not exist", cfg.db)
	case errors.Is(err, fs.ErrNotExist):
		return cfg.db, func() {}, nil
	case err != nil:
		return "", nil, err
	case len(entries) == 0 && cfg.useExistingDB:
		return "", nil, fmt.Errorf("-use_existing_db: %s is empty", cfg.db)
	case len(entries) > 0 && !cfg.useExistingDB:
		return "", nil, fmt.Errorf("-db %s is not empty: pass -use_existing_db to reuse it, or remove it", cfg.db)
	}
	return cfg.db, func() {}, nil
}

// study runs the phases of one kvbench invocation.
type study struct {
	cfg *config
	dir string
	rep *report
	r   *runner
	// wroteAll says this run wrote every live table itself, each with a
	// filter of wroteBits bits per key: it filled a directory that held no
	// database (prepareDir refuses a non-empty one without
	// -use_existing_db), or a -sweep recompaction rewrote every table.
	// Otherwise the database was reused, and only what its tables spend
	// tells which filters they carry.
	wroteAll  bool
	wroteBits int
	// setting is the filter variant and policy of the tables written: the
	// flags', or the -filter_sweep entry being run.
	setting filterSetting
	// sweeping is set once a -sweep has loaded: its settings' bits replace
	// the main one.
	sweeping bool
	// round is the -compare_filters round being run (0 outside one).
	round int
}

// options returns the engine options for tables written with bits per key
// (<= 0: none), read with or without consulting filters.
func (s *study) options(bits int, ignoreFilters bool) *bloomkv.Options {
	compression := bloomkv.SnappyCompression
	if s.cfg.compression == "none" {
		compression = bloomkv.NoCompression
	}
	// A fractional budget is the main setting's alone: a -sweep setting
	// is whole bits, which BloomBitsPerKey says.
	var fractional float64
	if bits > 0 && !s.sweeping {
		fractional = s.cfg.fractionalBits()
	}
	return &bloomkv.Options{
		MemtableSize:        s.cfg.writeBufferSize,
		BlockSize:           s.cfg.blockSize,
		Compression:         compression,
		BloomBitsPerKey:     tableBits(bits),
		FilterBitsPerKey:    fractional,
		FilterVariant:       s.setting.Variant,
		FilterPerLevel:      s.setting.PerLevel,
		FilterSkipLastLevel: s.setting.SkipLast,
		CacheFilterBlocks:   s.cfg.cacheFilters,
		IndexPartitionSize:  s.cfg.partitionSize,
		FilterPinning:       s.cfg.filterPinning,
		BlockCacheSize:      s.cfg.cacheSize, // resolved: never 0
		WALMode:             s.cfg.walMode,
		IgnoreFilters:       ignoreFilters,
		// Range filters: written per -range_filter_bits, ignored with the
		// point filters in the -compare_filters pass without them.
		RangeFilterBitsPerKey: s.cfg.rangeFilterBits,
		IgnoreRangeFilters:    ignoreFilters,
		FilterKey:             s.filterKey(),
		FilterKeyName:         s.filterKeyName(),
		FilterWholeKey:        s.cfg.filterWholeKey,
		TreeFilter:            s.cfg.treeFilter || s.setting.Tree,

		TargetFileSize:           s.cfg.targetFileSize,
		TargetFileSizeMultiplier: s.cfg.fileSizeMult,
		LBaseMaxBytes:            s.cfg.levelBaseBytes,
		StaticLevelBytes:         !s.cfg.dynamicLevels,
		DisableMmap:              s.cfg.disableMmap,
		L0CompactionThreshold:    s.cfg.l0Trigger,
		IdleCompactionDelay:      s.cfg.idleDelay,
		// Studies compare filter settings on the tree the fill left:
		// reads must not reshape it (-read_compactions allows it).
		DisableReadCompactions: !s.cfg.readCompactions,
	}
}

func (s *study) open(bits int, ignoreFilters bool) (*bloomkv.DB, error) {
	db, err := bloomkv.Open(s.dir, s.options(bits, ignoreFilters))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", s.dir, err)
	}
	return db, nil
}

// withDB opens the database, runs f and closes it, reporting the first
// error.
func (s *study) withDB(bits int, ignoreFilters bool, f func(*bloomkv.DB) error) (err error) {
	db, err := s.open(bits, ignoreFilters)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	return f(db)
}

// testBetweenPasses, set by a test, runs between the default run's filtered
// pass and its baseline.
var testBetweenPasses func(*study)

// plain: load, then one read pass on the same open database, then the
// baseline: the same tables reopened with IgnoreFilters and read again for
// the first -baseline_reads keys of each workload, so that the default run
// shows what the filters bought without the minute a full unfiltered pass
// of absent keys takes.
func (s *study) plain() error {
	var changed error // the tree changed during the filtered pass
	if err := s.withDB(s.cfg.bloomBits, false, func(db *bloomkv.DB) error {
		if err := s.load(db); err != nil {
			return err
		}
		if s.cfg.rebuildFilters { // rebuildfilters.go
			if err := s.rebuildFilters(db, s.setting.Name); err != nil {
				return err
			}
		}
		// No flush or compaction may change the tree during the pass (the
		// directory cannot tell: it still lists tables a compaction
		// replaced until they are deleted).
		m0 := db.Metrics()
		if err := s.readPass(db, "read", s.cfg.bloomBits, true); err != nil {
			return err
		}
		if m1 := db.Metrics(); m1.Flushes != m0.Flushes || m1.Compactions != m0.Compactions {
			changed = fmt.Errorf("the tree changed during the filtered pass (%d flushes, %d compactions): the baseline would not read the same tables", m1.Flushes-m0.Flushes, m1.Compactions-m0.Compactions)
		}
		return nil
	}); err != nil {
		return err
	}
	if s.cfg.baselineReads == 0 || s.cfg.bloomBits < 0 || len(s.cfg.readWorkloads()) == 0 {
		return nil // no baseline asked for, or nothing to compare
	}
	// The report says the baseline read the same tables: check it, as
	// -compare_filters does (-read_compactions has no baseline, config.go).
	if changed != nil {
		return changed
	}
	tables, err := tableFiles(s.dir) // after the close: none left to delete
	if err != nil {
		return err
	}
	if testBetweenPasses != nil {
		testBetweenPasses(s)
	}
	if err := s.withDB(s.cfg.bloomBits, true, func(db *bloomkv.DB) error {
		return s.readPassN(db, "ignore_filters", s.cfg.bloomBits, false, s.cfg.baselineReads)
	}); err != nil {
		return err
	}
	now, err := tableFiles(s.dir)
	if err != nil {
		return err
	}
	if !slices.Equal(now, tables) {
		return fmt.Errorf("the table files changed between the filtered pass and the without-filters baseline (%d tables after the first, %d after the second): the passes did not read the same tables", len(tables), len(now))
	}
	s.rep.Comparisons = compareResults(s.rep.Results)
	return nil
}

// compare: load, then two read passes over the same tables, each on a
// freshly opened database (so both start with a cold block cache):
// consulting filters, then ignoring them.
func (s *study) compare() error {
	if err := s.withDB(s.cfg.bloomBits, false, s.load); err != nil {
		return err
	}
	// The comparison promises the same tables in both passes: the table
	// files must be the same before and after each (nothing may compact
	// them in between; -read_compactions is refused with it).
	tables, err := tableFiles(s.dir)
	if err != nil {
		return err
	}
	sameTables := func(pass string) error {
		now, err := tableFiles(s.dir)
		if err != nil {
			return err
		}
		if !slices.Equal(now, tables) {
			return fmt.Errorf("-compare_filters: the table files changed during the %s pass (%d tables before, %d after): the passes did not read the same tables", pass, len(tables), len(now))
		}
		return nil
	}
	// Two rounds, alternating: whichever pass ran first would otherwise
	// always meet the page cache, the CPU and the other tenants in the same
	// state; both rounds are reported.
	for round := 1; round <= compareRounds; round++ {
		s.round = round
		if err := s.withDB(s.cfg.bloomBits, false, func(db *bloomkv.DB) error {
			return s.readPass(db, "filters", s.cfg.bloomBits, true)
		}); err != nil {
			return err
		}
		if err := sameTables("filters"); err != nil {
			return err
		}
		if err := s.withDB(s.cfg.bloomBits, true, func(db *bloomkv.DB) error {
			return s.readPass(db, "ignore_filters", s.cfg.bloomBits, false)
		}); err != nil {
			return err
		}
		if err := sameTables("ignore_filters"); err != nil {
			return err
		}
	}
	s.round = 0
	s.rep.Comparisons = compareResults(s.rep.Results)
	return nil
}

// compareRounds is how many times -compare_filters alternates its passes.
const compareRounds = 2

// tableFiles returns the names of the table files in dir, sorted.
func tableFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sst") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// sweep: load once, then per setting recompact every table with that many
// bits per key and run the read workloads on a freshly opened database.
func (s *study) sweep() error {
	if err := s.withDB(s.cfg.bloomBits, false, s.load); err != nil {
		return err
	}
	s.sweeping = true
	for _, bits := range s.cfg.sweep {
		setting := sweepSetting{BloomBits: tableBits(bits)}
		if err := s.withDB(bits, false, func(db *bloomkv.DB) error {
			secs, err := s.recompact(db, bits)
			setting.RecompactSeconds = secs
			setting.Shape = shapeOf(db.Metrics())
			return err
		}); err != nil {
			return err
		}
		s.wroteAll, s.wroteBits = true, bits
		s.rep.Sweep = append(s.rep.Sweep, setting)
		if err := s.withDB(bits, false, func(db *bloomkv.DB) error {
			return s.readPass(db, "sweep", bits, true)
		}); err != nil {
			return err
		}
	}
	return nil
}

// load runs the fill workloads, flushes and waits for the tree to settle.
func (s *study) load(db *bloomkv.DB) error {
	before := db.Metrics()
	for _, name := range s.cfg.fills() {
		m0 := db.Metrics()
		run, err := s.r.fill(db, name)
		if err != nil {
			return err
		}
		s.rep.Results = append(s.rep.Results, newResult(run, "load", s.cfg.bloomBits, s.setting.Variant, true, db.Metrics().Sub(m0)))
	}
	settleStart := time.Now()
	// Flush so that every Get is answered by tables, the thing studied.
	if err := db.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := s.settle(db, "settle (compactions)"); err != nil {
		return err
	}
	after := db.Metrics()
	d := after.Sub(before)
	s.rep.Load = loadInfo{
		SettleSeconds:      time.Since(settleStart).Seconds(),
		Flushes:            d.Flushes,
		Compactions:        d.Compactions,
		WriteStalls:        d.WriteStalls,
		WriteStallSeconds:  d.WriteStallTime.Seconds(),
		UserBytesWritten:   d.UserBytesWritten,
		WriteAmplification: d.WriteAmplification(),
	}
	s.rep.Shape = shapeOf(after)
	return nil
}

// settle waits for background flushes and compactions, showing the bytes
// they write.
func (s *study) settle(db *bloomkv.DB, name string) error {
	base := db.Metrics()
	stop := s.r.prog.start(name, 0, unitBytes, func() int64 {
		m := db.Metrics()
		return int64(m.CompactionBytesWritten - base.CompactionBytesWritten + m.FlushBytesWritten - base.FlushBytesWritten)
	})
	defer stop()
	if err := db.WaitForCompactions(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	// Level-0 tables below the threshold move into level 1 once writes
	// have paused for the idle delay: wait for that too, so that no
	// background work runs while reads are timed.
	if s.cfg.idleDelay >= 0 {
		deadline := time.Now().Add(max(s.cfg.idleDelay, time.Second) + time.Minute)
		for db.Metrics().Levels[0].Files > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if err := db.WaitForCompactions(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	waitTreeFilter(db) // treefilter.go
	return nil
}

// recompact rewrites every table with the database's current filter
// setting: Compact(nil, nil) rebuilds each filter written with other
// settings (and leaves one sorted run). Progress is shown against the
// tree's size, the least the compaction must write.
func (s *study) recompact(db *bloomkv.DB, bits int) (float64, error) {
	return s.recompactWith(db, "recompact "+bitsLabel(tableBits(bits)))
}

// recompactWith is recompact with the progress line's name.
func (s *study) recompactWith(db *bloomkv.DB, name string) (float64, error) {
	return s.rewriteTables(db, name, func() error { return db.Compact(nil, nil) })
}

// rewriteTables runs rewrite (a Compact or RebuildFilters), then waits for
// compactions, showing progress against the tree's size.
func (s *study) rewriteTables(db *bloomkv.DB, name string, rewrite func() error) (float64, error) {
	begin := time.Now()
	base := db.Metrics()
	var total int64
	for _, l := range base.Levels {
		total += l.Bytes
	}
	stop := s.r.prog.start(name, total, unitBytes, func() int64 {
		return int64(db.Metrics().CompactionBytesWritten - base.CompactionBytesWritten)
	})
	err := rewrite()
	if err == nil {
		err = db.WaitForCompactions()
	}
	stop()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return time.Since(begin).Seconds(), nil
}

// readPass runs every read workload once on db. bits is the setting the
// tables should carry. When this run wrote every table with it, it is the
// setting, whatever the tables spend per key (small tables spend more: a
// filter has a minimum size and a trailer). A reused database keeps the
// filters it was written with until a compaction rewrites them, so there
// what the tables really spend wins, with a warning, so theory and labels
// describe the tables read.
func (s *study) readPass(db *bloomkv.DB, pass string, bits int, consulted bool) error {
	return s.readPassN(db, pass, bits, consulted, s.cfg.reads)
}

// readPassN is readPass with n operations per workload: the first n of the
// keys a full pass reads (each workload's keys come from a generator
// seeded by -seed and its name).
func (s *study) readPassN(db *bloomkv.DB, pass string, bits int, consulted bool, n int) error {
	return s.readPassWorkloads(db, pass, bits, consulted, s.cfg.readWorkloads(), n)
}

// readPassNames is readPassN for the workloads names, consulting filters.
func (s *study) readPassNames(db *bloomkv.DB, pass string, bits int, names []string, n int) error {
	return s.readPassWorkloads(db, pass, bits, true, names, n)
}

func (s *study) readPassWorkloads(db *bloomkv.DB, pass string, bits int, consulted bool, names []string, n int) error {
	written := s.wroteAll && max(s.wroteBits, 0) == max(bits, 0)
	if actual := spentBitsPerKey(db.Metrics()); !written && actual != max(bits, 0) {
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf(
			"%s pass: the tables spend %d filter bits per key, not the %d asked for (a reused database keeps its filters until recompacted, e.g. with -sweep); figures use %d",
			pass, actual, max(bits, 0), actual))
		bits = actual
	}
	for _, name := range names {
		m0 := db.Metrics()
		run, err := s.r.read(db, name, n)
		if err != nil {
			return err
		}
		r := newResult(run, pass, bits, s.setting.Variant, consulted, db.Metrics().Sub(m0))
		r.Round = s.round
		s.rep.Results = append(s.rep.Results, r)
	}
	return nil
}

// spentBitsPerKey returns the filter bits per key the live tables spend,
// rounded (0 when they have no filters).
func spentBitsPerKey(m bloomkv.Metrics) int {
	if m.FilterKeys == 0 {
		return 0
	}
	return int(math.Round(float64(m.FilterBytes) * 8 / float64(m.FilterKeys)))
}

// foundWarnings flags reads whose found counts betray a database filled
// with other flags (errors stop a fresh run before this).
func foundWarnings(results []*result) []string {
	var out []string
	for _, r := range results {
		switch {
		case r.Benchmark == readRandom && r.Found != r.Ops:
			out = append(out, fmt.Sprintf("%s (%s): only %d of %d present keys found: was the database filled with the same -num and -key_size?", r.Benchmark, r.Pass, r.Found, r.Ops))
		case r.Benchmark == readMissing && r.Found != 0:
			out = append(out, fmt.Sprintf("%s (%s): %d absent keys found: was the database filled with the same -num and -key_size?", r.Benchmark, r.Pass, r.Found))
		}
	}
	return out
}

// filterKey is the extractor of row+column runs: the filters index rows.
func (s *study) filterKey() func([]byte) []byte {
	if s.cfg.rows > 0 {
		return rowFilterKey
	}
	return nil
}

func (s *study) filterKeyName() string {
	if s.cfg.rows > 0 {
		return "kvbench-row8"
	}
	return ""
}
