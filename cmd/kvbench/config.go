package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/dustin/go-humanize"
	"golang.org/x/term"
)

// Workload names accepted by -benchmarks.
const (
	fillSeq     = "fillseq"
	fillRandom  = "fillrandom"
	readRandom  = "readrandom"
	readMissing = "readmissing"
	readMixed   = "readmixed"
	scanBench   = "scan"
	// Row+column workloads (-rows, -cols_per_row).
	seekPrefix        = "seekprefix"
	seekPrefixMissing = "seekprefixmissing"
	readMissingCol    = "readmissingcol"
)

var knownBenchmarks = []string{fillSeq, fillRandom, readRandom, readMissing, readMixed, scanBench, seekPrefix, seekPrefixMissing, readMissingCol, scanEmpty, scanEmptyNear, scanBounded}

func isFill(name string) bool { return name == fillSeq || name == fillRandom }

// config holds every flag. Field comments give the flag names; the flag
// help texts in newFlagSet are the user-facing documentation.
type config struct {
	benchmarks       []string       // -benchmarks, fills first then reads in listed order
	num              int            // -num
	reads            int            // -reads
	keySize          int            // -key_size
	valueSize        int            // -value_size
	bloomBits        int            // whole bits per key of the tables written (filterBits rounded); -1 = no filters
	cacheSize        int64          // -cache_size, resolved: the bytes cached, -1 = no cache
	blockSize        int            // -block_size
	writeBufferSize  int            // -write_buffer_size (memtable)
	targetFileSize   int64          // -target_file_size_base
	fileSizeMult     int            // -target_file_size_multiplier
	levelBaseBytes   int64          // -max_bytes_for_level_base
	dynamicLevels    bool           // -dynamic_level_bytes
	disableMmap      bool           // -disable_mmap
	l0Trigger        int            // -level0_file_num_compaction_trigger
	idleDelay        time.Duration  // -idle_compaction_delay
	readCompactions  bool           // -read_compactions
	compression      string         // -compression
	filterVariant    filter.Variant // -filter_variant
	filterBits       float64        // -filter_bits (or its alias -bloom_bits), resolved: > 0 bits per key, -1 = no filters
	filterPerLevel   bool           // -filter_per_level
	filterSkipLast   bool           // -filter_skip_last_level
	cacheFilters     bool           // -cache_filter_blocks
	partitionSize    int            // -index_partition_size
	filterPinning    bloomkv.FilterPinning
	filterSweep      []filterSetting // -filter_sweep
	compressionRatio float64         // -compression_ratio
	sync             bool            // -sync
	walMode          bloomkv.WALMode // -wal_mode
	db               string          // -db
	useExistingDB    bool            // -use_existing_db
	seed             uint64          // -seed
	hitRatio         float64         // -hit_ratio
	scanLength       int             // -scan_length
	threads          int             // -threads
	rows             int             // -rows: row+column keys when > 0
	colsPerRow       int             // -cols_per_row
	filterWholeKey   bool            // -filter_whole_key
	treeFilter       bool            // -tree_filter (treefilter.go)
	rebuildFilters   bool            // -rebuild_filters (rebuildfilters.go)
	batchSize        int             // -batch_size
	compareFilters   bool            // -compare_filters
	sweep            []int           // -sweep, -1 = no filter
	baselineReads    int             // -baseline_reads, resolved: reads per workload of the default run's without-filters pass; 0 = none
	legend           bool            // -legend
	jsonPath         string          // -json
	cpuProfile       string          // -cpuprofile
	memProfile       string          // -memprofile
	csvPath          string          // -csv
	plotPath         string          // -plot
	progress         bool            // -progress
	reportPath       string          // -report (reportconfig.go)
	rangeConfig                      // -range_width, -range_filter_bits (scanempty.go)

	// flagValues is every flag's final value, by flag name, for the JSON
	// "config" object.
	flagValues map[string]any
}

// errHelp is returned by parseConfig when -h was given: not a failure.
var errHelp = flag.ErrHelp

// parseConfig parses args (without the program name). Usage and parse
// errors are written to stderr by the flag package.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	return parseConfigPreset(args, stderr, nil)
}

// parseConfigPreset is parseConfig with preset, when not nil, setting
// flags on the flag set before args are parsed (reportconfig.go: the flags
// of a report's "config" object).
func parseConfigPreset(args []string, stderr io.Writer, preset func(*flag.FlagSet) error) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("kvbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var benchmarks, sweep, compression, variant string
	var seed int64
	fs.StringVar(&benchmarks, "benchmarks", "fillrandom,readrandom,readmissing",
		"comma list of workloads: fillseq, fillrandom (each key once, in key order / a random order), "+
			"readrandom (present keys), readmissing (absent keys inside the key range), "+
			"readmixed (present with probability -hit_ratio), scan (SeekGE then -scan_length entries); "+
			"with -rows: seekprefix (SeekPrefixGE an existing row, read all its columns), seekprefixmissing (an absent row), "+
			"readmissingcol (Get an absent column of an existing row); "+
			"scanempty, scanemptynear (a seek of an empty range of -range_width, at random or just after a key), scanbounded (a bounded scan of -scan_length keys): range-filter workloads. "+
			"Fills run first, then the reads, in the order listed")
	fs.IntVar(&c.num, "num", 1_000_000, "number of keys the fill writes")
	fs.IntVar(&c.reads, "reads", -1, "operations per read workload; -1 = -num (scan: keys visited; it seeks reads/scan_length times)")
	fs.IntVar(&c.keySize, "key_size", 16, "key size in bytes (at least 8)")
	fs.IntVar(&c.valueSize, "value_size", 100, "value size in bytes")
	// -filter_bits is the one flag for the filter budget; -bloom_bits, its
	// older whole-number form, stays as an alias because scripts and
	// write-ups use it. Both read 0 as the library reads
	// Options.BloomBitsPerKey 0: the default.
	var bloomBitsAlias int
	fs.IntVar(&bloomBitsAlias, "bloom_bits", 0, "deprecated alias of -filter_bits (whole numbers only): the same meaning, 0 = the default (10), negative = no filters")
	fs.Int64Var(&c.cacheSize, "cache_size", 0, fmt.Sprintf("block cache bytes (Options.BlockCacheSize): 0 = the engine default (%s), negative = no block cache", humanize.IBytes(engineDefaultCache)))
	fs.IntVar(&c.blockSize, "block_size", 4<<10, "target uncompressed data block size in bytes")
	fs.IntVar(&c.writeBufferSize, "write_buffer_size", 4<<20, "memtable bytes before a flush")
	fs.Int64Var(&c.targetFileSize, "target_file_size_base", 0, "compaction output table size in level 1, in bytes (0 = engine default, 2 MiB)")
	fs.IntVar(&c.fileSizeMult, "target_file_size_multiplier", 0, "growth of table sizes per level below level 1 (Options.TargetFileSizeMultiplier; 0 = engine default, 2; 1 = every level alike)")
	fs.Int64Var(&c.levelBaseBytes, "max_bytes_for_level_base", 0, "size target of level 1 in bytes (0 = engine default, 10 MiB); small values give small data sets a deep tree")
	fs.BoolVar(&c.disableMmap, "disable_mmap", false, "read tables with pread instead of through memory maps, and write the log with write calls (Options.DisableMmap): mapped table pages then stay out of the process's RSS")
	fs.BoolVar(&c.dynamicLevels, "dynamic_level_bytes", true, "size the levels from the last one up, the engine's default: the last level holds about 90% of the data, level 0 compacts into the base level, the shallowest with a target of at least -max_bytes_for_level_base; =false sets Options.StaticLevelBytes (level 1's target is -max_bytes_for_level_base, each deeper level's 10x the one above)")
	fs.IntVar(&c.l0Trigger, "level0_file_num_compaction_trigger", 0, "level-0 tables that trigger a compaction (0 = engine default, 4)")
	fs.BoolVar(&c.readCompactions, "read_compactions", false, "let reads trigger compactions (Options.DisableReadCompactions false, the engine default); off by default so that every workload reads the tree the fill left and the filter settings compared read the same tree")
	fs.DurationVar(&c.idleDelay, "idle_compaction_delay", 0, "compact level 0 into level 1 once writes have paused this long (Options.IdleCompactionDelay; 0 = engine default, 1s; negative = never, to study trees that keep level-0 tables); the settle step waits for it")
	fs.StringVar(&compression, "compression", "snappy", "data block compression: snappy or none")
	fs.StringVar(&variant, "filter_variant", "standard", "filter block layout: standard, blocked (each key's probes in one 64-byte cache line: faster, a somewhat higher FP rate) or fuse (binary fuse, 8-bit fingerprints: 0.39% in about 9-10 bits/key, sized by its keys alone)")
	fs.Float64Var(&c.filterBits, "filter_bits", 0, fmt.Sprintf("filter bits per key in the tables written, fractional allowed (Options.BloomBitsPerKey / FilterBitsPerKey): 0 = the engine default (%d), negative = tables without filters. With -filter_per_level, the average", engineDefaultBits))
	fs.BoolVar(&c.filterPerLevel, "filter_per_level", false, "spend the filter budget unevenly across levels (Options.FilterPerLevel, Monkey): fewer false-positive probes per absent Get at the same memory")
	fs.BoolVar(&c.filterSkipLast, "filter_skip_last_level", false, "no filters in the last level (Options.FilterSkipLastLevel)")
	fs.IntVar(&c.partitionSize, "index_partition_size", 0, "bytes of index per partition of new tables, each with its filter partition (Options.IndexPartitionSize; 0 = engine default: 2048 with -cache_filter_blocks, else whole blocks; -1 = whole index and filter blocks)")
	fs.BoolVar(&c.cacheFilters, "cache_filter_blocks", false, "keep filter blocks (and index and filter partitions) in the block cache, charged and evicted like data blocks, instead of resident with each open table (Options.CacheFilterBlocks): filter memory bounded by -cache_size")
	var pinning string
	fs.StringVar(&pinning, "filter_pinning", "l0", "with -cache_filter_blocks, the filters that stay pinned once probed: l0 (level-0 tables), all, or none (Options.FilterPinning)")
	var filterSweep string
	fs.StringVar(&filterSweep, "filter_sweep", "", "comma list of filter settings, each variant[/per_level][/skip_last][/tree] (e.g. standard,standard/per_level,blocked,fuse,standard/tree): for each, load the same keys in the same order into a new database with that setting at -filter_bits bits per key, then run the read workloads; with -rebuild_filters, load once and rewrite the filters per setting (the same tree for all)")
	fs.Float64Var(&c.compressionRatio, "compression_ratio", 0.5, "fraction of each value that is random (the rest repeats it), so values compress to about this ratio")
	fs.BoolVar(&c.sync, "sync", false, "fsync the write-ahead log on every write (the same as -wal_mode sync)")
	var walMode string
	fs.StringVar(&walMode, "wal_mode", "write-through", "how far a write gets before it returns: write-through (to the OS: survives kill -9), buffered (to the OS within 1 ms), sync (fsynced), disabled (no log)")
	fs.StringVar(&c.db, "db", "", "database directory to create (must be empty or missing) or, with -use_existing_db, to reuse; kept after the run. Default: a temporary directory, removed at exit")
	fs.BoolVar(&c.useExistingDB, "use_existing_db", false, "reuse the database in -db (filled by an earlier run with the same -num, -key_size, -value_size, -compression_ratio); fill workloads are skipped")
	fs.Int64Var(&seed, "seed", 1, "seed for the fill order and the keys read")
	fs.Float64Var(&c.hitRatio, "hit_ratio", 0.5, "readmixed: fraction of reads for present keys")
	fs.IntVar(&c.scanLength, "scan_length", 100, "scan: entries visited after each SeekGE")
	fs.IntVar(&c.threads, "threads", 1, "goroutines issuing the reads of each read workload")
	fs.IntVar(&c.rows, "rows", 0, "row+column keys: this many rows of -cols_per_row columns (-num becomes rows x cols); the filters index rows (Options.FilterKey = the 8-byte row), for seekprefix, seekprefixmissing and readmissingcol")
	fs.IntVar(&c.colsPerRow, "cols_per_row", 10, "with -rows: columns per row")
	fs.BoolVar(&c.filterWholeKey, "filter_whole_key", false, "with -rows: filters hold whole keys as well as rows (Options.FilterWholeKey), so an absent column of a present row is a filter negative")
	fs.IntVar(&c.batchSize, "batch_size", 1, "fill: keys per write (1 = Put, more = an atomic Batch)")
	fs.BoolVar(&c.compareFilters, "compare_filters", false, "run the read workloads twice on the same tables, each with all -reads on a cold cache: consulting filters, then with Options.IgnoreFilters, and compare (the default run does this with -baseline_reads reads)")
	fs.IntVar(&c.baselineReads, "baseline_reads", 0, fmt.Sprintf("the default run's without-filters pass: reads per workload on the same tables with Options.IgnoreFilters, the first of the keys the filtered pass read (the run fails if the table files changed between the passes); 0 = the default (%d, or -reads if fewer; none with -read_compactions), negative = no baseline", defaultBaselineReads))
	fs.BoolVar(&c.legend, "legend", true, "print a few lines under each table of the report saying what its columns mean (-legend=false for the tables alone)")
	fs.StringVar(&sweep, "sweep", "", "comma list of bits per key, each a whole number in [1, 64] or off (tables without filters; -1 also works): load once, then for each setting recompact all tables with it and run the read workloads")
	fs.StringVar(&c.jsonPath, "json", "", "write every figure of the report as JSON to this file, with the commit kvbench was built from (run.commit): for go run, from git in the source tree; for a go build binary, its VCS stamp (none in a linked git worktree or with GOFLAGS=-buildvcs=false, and then none is recorded)")
	fs.StringVar(&c.csvPath, "csv", "", "write one CSV row per workload run to this file")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (fills and reads) to this file, for go tool pprof")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a heap profile (allocations since the start) to this file at the end of the run")
	fs.StringVar(&c.plotPath, "plot", "", "with -sweep: write a chart (.png or .svg) of FP rate and data blocks per absent Get against bits per key; with -filter_sweep, of each setting's filter memory and false positives per absent Get")
	fs.BoolVar(&c.progress, "progress", true, "show progress of long phases on stderr: a bar on a terminal, otherwise a plain line every 5 s (logs, CI, pipes)")
	c.rangeConfig.register(fs)
	registerTreeFilterFlags(fs, c) // treefilter.go
	fs.StringVar(&c.reportPath, "report", "", "print the text report of a JSON report written by -json, instead of running (the samples in the docs are made this way from docs/kvbench/*.json)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageIntro)
		fs.PrintDefaults()
	}
	if preset != nil {
		if err := preset(fs); err != nil {
			return nil, err
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	c.seed = uint64(seed)
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := c.resolveFilterBits(given, bloomBitsAlias, stderr); err != nil {
		return nil, err
	}
	if given["cache_size"] && c.cacheSize == 0 {
		fmt.Fprintf(stderr, "kvbench: note: -cache_size 0 means the engine default (%s) since issue 30; before, it turned the cache off: use -cache_size -1 for no cache\n", humanize.IBytes(engineDefaultCache))
	}
	switch {
	case c.cacheSize == 0:
		c.cacheSize = engineDefaultCache
	case c.cacheSize < 0:
		c.cacheSize = -1
	}
	if c.rows > 0 {
		c.num = c.rows * c.colsPerRow
	}
	if c.reads == -1 {
		c.reads = c.num
	}
	switch {
	case c.readCompactions && c.baselineReads > 0 && !c.compareFilters:
		// The baseline reads the tables the filtered pass read; with
		// read-triggered compactions that pass's Gets may have changed them.
		return nil, errors.New("-baseline_reads reads the tables the filtered pass read: it cannot run with -read_compactions, which lets that pass's reads change them")
	case c.readCompactions:
		c.baselineReads = 0 // no baseline: see above
		if !c.compareFilters {
			fmt.Fprintln(stderr, "kvbench: note: -read_compactions: no without-filters baseline (the filtered pass's reads may change the tables it would read again)")
		}
	case c.baselineReads == 0:
		c.baselineReads = min(defaultBaselineReads, c.reads)
	case c.baselineReads < 0:
		c.baselineReads = 0
	default:
		c.baselineReads = min(c.baselineReads, c.reads)
	}
	c.compression = compression
	switch walMode {
	case "write-through":
		c.walMode = bloomkv.WALWriteThrough
	case "buffered":
		c.walMode = bloomkv.WALBuffered
	case "sync":
		c.walMode = bloomkv.WALSync
	case "disabled":
		c.walMode = bloomkv.WALDisabled
	default:
		return nil, fmt.Errorf("-wal_mode %q: want write-through, buffered, sync or disabled", walMode)
	}
	if c.sync {
		if c.walMode != bloomkv.WALWriteThrough && c.walMode != bloomkv.WALSync {
			return nil, fmt.Errorf("-sync with -wal_mode %s: -sync means -wal_mode sync", c.walMode)
		}
		c.walMode = bloomkv.WALSync
	}
	switch variant {
	default:
		v, err := parseVariant(variant)
		if err != nil {
			return nil, fmt.Errorf("-filter_variant %q: %w", variant, err)
		}
		c.filterVariant = v
	}
	switch pinning {
	case "l0":
		c.filterPinning = bloomkv.PinLevel0Filters
	case "all":
		c.filterPinning = bloomkv.PinAllFilters
	case "none":
		c.filterPinning = bloomkv.PinNoFilters
	default:
		return nil, fmt.Errorf("-filter_pinning %q: want l0, all or none", pinning)
	}
	var err error
	if c.filterSweep, err = parseFilterSweep(filterSweep); err != nil {
		return nil, err
	}

	c.flagValues = map[string]any{}
	fs.VisitAll(func(f *flag.Flag) {
		c.flagValues[f.Name] = f.Value.(flag.Getter).Get()
	})
	// The values used, not the spellings given: 0 and negatives resolved,
	// the alias set to what it stands for.
	c.flagValues["filter_bits"] = c.filterBits
	c.flagValues["bloom_bits"] = c.bloomBits
	c.flagValues["cache_size"] = c.cacheSize
	c.flagValues["baseline_reads"] = c.baselineReads

	if c.benchmarks, err = parseBenchmarks(benchmarks); err != nil {
		return nil, err
	}
	if c.sweep, err = parseSweep(sweep); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// isRowWorkload reports whether workload name needs row+column keys.
func isRowWorkload(name string) bool {
	return name == seekPrefix || name == seekPrefixMissing || name == readMissingCol
}

func parseBenchmarks(s string) ([]string, error) {
	var fills, reads []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(knownBenchmarks, name) {
			return nil, fmt.Errorf("-benchmarks: unknown workload %q (known: %s)", name, strings.Join(knownBenchmarks, ", "))
		}
		if isFill(name) {
			fills = append(fills, name)
		} else {
			reads = append(reads, name)
		}
	}
	if len(fills)+len(reads) == 0 {
		return nil, errors.New("-benchmarks: empty list")
	}
	return append(fills, reads...), nil
}

func parseSweep(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f == "off" {
			out = append(out, -1)
			continue
		}
		b, err := strconv.Atoi(f)
		switch {
		case err == nil && b == 0:
			// 0 once meant "no filter" here; everywhere else it means
			// the default. Refusing it keeps an old script from quietly
			// measuring something else.
			return nil, errors.New("-sweep: 0 is ambiguous (kvbench and the library read 0 as the default, 10): write off (or -1) for tables without filters")
		case err != nil || b > 64:
			return nil, fmt.Errorf("-sweep: %q is not a bits-per-key setting: a whole number in [1, 64], or off", f)
		case b < 0:
			b = -1
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, errors.New("-sweep: empty list")
	}
	return out, nil
}

func (c *config) validate() error {
	if err := c.rangeConfig.validate(); err != nil {
		return err
	}
	if err := c.validateRangeSweep(); err != nil { // rangesweep.go
		return err
	}
	if err := c.validateRebuild(); err != nil { // rebuildfilters.go
		return err
	}
	switch {
	case c.num < 2 || int64(c.num) > 1<<31:
		return fmt.Errorf("-num %d outside [2, 2^31]", c.num)
	case c.reads < 1:
		return fmt.Errorf("-reads %d below 1", c.reads)
	case c.keySize < 8 || c.keySize > 64<<10:
		return fmt.Errorf("-key_size %d outside [8, 65536]: kvbench needs 8 bytes to make every key unique", c.keySize)
	case c.valueSize < 0 || c.valueSize > 16<<20:
		return fmt.Errorf("-value_size %d outside [0, 16 MiB]", c.valueSize)
	case c.targetFileSize < 0 || c.levelBaseBytes < 0 || c.l0Trigger < 0 || c.fileSizeMult < 0:
		return errors.New("-target_file_size_base, -target_file_size_multiplier, -max_bytes_for_level_base and -level0_file_num_compaction_trigger must not be negative (0 = engine default)")
	case c.compression != "snappy" && c.compression != "none":
		return fmt.Errorf("-compression %q: want snappy or none", c.compression)
	case c.compressionRatio <= 0 || c.compressionRatio > 1:
		return fmt.Errorf("-compression_ratio %g outside (0, 1]", c.compressionRatio)
	case c.hitRatio < 0 || c.hitRatio > 1:
		return fmt.Errorf("-hit_ratio %g outside [0, 1]", c.hitRatio)
	case c.scanLength < 1:
		return fmt.Errorf("-scan_length %d below 1", c.scanLength)
	case c.threads < 1 || c.threads > 1024:
		return fmt.Errorf("-threads %d outside [1, 1024]", c.threads)
	case c.batchSize < 1:
		return fmt.Errorf("-batch_size %d below 1", c.batchSize)
	case c.rows < 0 || c.rows == 1 || c.rows > 1<<28:
		return fmt.Errorf("-rows %d outside {0} and [2, 2^28]", c.rows)
	case c.rows > 0 && (c.colsPerRow < 1 || c.colsPerRow > 1<<15):
		return fmt.Errorf("-cols_per_row %d outside [1, 32768]", c.colsPerRow)
	case c.filterWholeKey && c.rows == 0:
		return errors.New("-filter_whole_key needs -rows (without rows the filters hold whole keys anyway)")
	case c.rows == 0 && slices.ContainsFunc(c.benchmarks, isRowWorkload):
		return errors.New("-benchmarks: seekprefix, seekprefixmissing and readmissingcol need row+column keys: set -rows")
	case c.rows > 0 && c.keySize < rowKeyLen+2:
		return fmt.Errorf("-key_size %d: row+column keys need at least %d bytes", c.keySize, rowKeyLen+2)
	case c.useExistingDB && c.db == "":
		return errors.New("-use_existing_db needs -db")
	case c.compareFilters && len(c.sweep) > 0:
		return errors.New("-compare_filters and -sweep are separate studies (a sweep's 0 setting already reads without filters): pick one")
	case c.compareFilters && c.readCompactions:
		// Gets in the pass without filters charge tables they would have
		// skipped, and the compactions that starts change the tables
		// between the passes: the comparison would no longer read the
		// same tables.
		return errors.New("-compare_filters reads the same tables twice: it cannot run with -read_compactions, which lets the reads change them")
	case c.compareFilters && c.bloomBits < 0:
		return errors.New("-compare_filters needs tables with filters: -filter_bits 0 (the default) or above")
	case c.filterPerLevel && c.filterVariant == filter.VariantFuse:
		return errors.New("-filter_per_level needs a bloom -filter_variant (a fuse filter's size follows from its keys)")
	case len(c.filterSweep) > 0 && (len(c.sweep) > 0 || c.compareFilters):
		return errors.New("-filter_sweep, -sweep and -compare_filters are separate studies: pick one")
	case len(c.filterSweep) > 0 && c.useExistingDB && !c.rebuildFilters:
		return errors.New("-filter_sweep loads a new database per setting: it cannot use -use_existing_db")
	case len(c.filterSweep) > 0 && c.bloomBits < 0:
		return errors.New("-filter_sweep needs a filter budget: -filter_bits 0 (the default) or above, not negative")
	case c.plotPath != "" && len(c.sweep) == 0 && len(c.filterSweep) == 0 && len(c.rangeSweep) == 0:
		return errors.New("-plot charts a sweep: it needs -sweep, -filter_sweep or -range_sweep")
	case c.plotPath != "" && len(c.sweep) > 0 && len(c.filterSweep) > 0:
		return errors.New("-plot charts one sweep: -sweep or -filter_sweep, not both")
	}
	if c.plotPath != "" {
		if ext := strings.ToLower(filepath.Ext(c.plotPath)); ext != ".png" && ext != ".svg" {
			return fmt.Errorf("-plot %q: want a .png or .svg file", c.plotPath)
		}
	}
	if !c.useExistingDB && !slices.ContainsFunc(c.benchmarks, isFill) && slices.ContainsFunc(c.benchmarks, func(s string) bool { return !isFill(s) }) {
		return errors.New("-benchmarks has reads but no fill, and there is no -use_existing_db: the reads would see an empty database")
	}
	if (c.compareFilters || len(c.sweep) > 0 || len(c.filterSweep) > 0) && !slices.ContainsFunc(c.benchmarks, func(s string) bool { return !isFill(s) }) {
		return errors.New("-compare_filters and -sweep measure read workloads: add some to -benchmarks")
	}
	return nil
}

// fills returns the fill workloads to run (none when reusing a database).
func (c *config) fills() []string {
	if c.useExistingDB {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(c.benchmarks), func(s string) bool { return !isFill(s) })
}

// readWorkloads returns the read workloads in listed order.
func (c *config) readWorkloads() []string {
	return slices.DeleteFunc(slices.Clone(c.benchmarks), isFill)
}

// tableBits maps a bits-per-key setting to the value reported as
// "bloom_bits": -1 when tables carry no filter.
func tableBits(bits int) int {
	if bits <= 0 {
		return -1
	}
	return bits
}

// Engine defaults kvbench prints in its help and report. The library
// resolves 0 to these itself (options.go); they are repeated here only to
// be shown, and TestEngineDefaultsMatch pins them to the library's.
const (
	engineDefaultBits  = 10
	engineDefaultCache = 8 << 20
	// defaultBaselineReads keeps the default run's without-filters pass
	// short: an absent-key Get without filters reads a block per table
	// probed, about 20x slower than with them, so a full -reads pass would
	// add about a minute; per-Get counts settle well within 20k reads.
	defaultBaselineReads = 20_000
)

// resolveFilterBits settles the filter budget from -filter_bits and its
// alias -bloom_bits: one meaning for every spelling, the library's (0 =
// the default, negative = no filters).
func (c *config) resolveFilterBits(given map[string]bool, alias int, stderr io.Writer) error {
	if given["bloom_bits"] {
		switch {
		case given["filter_bits"] && float64(alias) != c.filterBits:
			return fmt.Errorf("-bloom_bits %d and -filter_bits %g: they set the same thing (-bloom_bits is the old name): give one", alias, c.filterBits)
		case alias == 0:
			fmt.Fprintf(stderr, "kvbench: note: -bloom_bits is a deprecated alias of -filter_bits, and 0 means the default (%d bits/key) since issue 30; before, it wrote tables without filters: use -filter_bits -1 for that\n", engineDefaultBits)
		default:
			fmt.Fprintln(stderr, "kvbench: note: -bloom_bits is a deprecated alias of -filter_bits (same meaning)")
		}
		c.filterBits = float64(alias)
	}
	f := c.filterBits
	switch {
	case math.IsNaN(f) || f > 64:
		return fmt.Errorf("-filter_bits %g above 64 (0 = the default, %d; negative = no filters)", f, engineDefaultBits)
	case f == 0:
		f = engineDefaultBits
	case f < 0:
		c.filterBits, c.bloomBits = -1, -1
		return nil
	}
	c.filterBits, c.bloomBits = f, max(1, int(math.Round(f)))
	return nil
}

// fractionalBits returns the Options.FilterBitsPerKey that says the budget
// exactly when it is not a whole number, else 0 (BloomBitsPerKey says it).
func (c *config) fractionalBits() float64 {
	if c.filterBits > 0 && c.filterBits != math.Trunc(c.filterBits) {
		return c.filterBits
	}
	return 0
}

// filterLabel names the main filter setting: "10 bits/key", "9.83
// bits/key" or "no filter".
func (c *config) filterLabel() string {
	if c.filterBits < 0 {
		return "no filter"
	}
	return fmt.Sprintf("%g bits/key", c.filterBits)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
