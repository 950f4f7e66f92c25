package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// config holds every flag; the help texts in parseConfig document them.
type config struct {
	num              int
	reads            int
	keySize          int
	valueSize        int
	compressionRatio float64
	seed             uint64
	threads          int
	writers          int // 0: 1, or 8 in the sync pairing
	hitRatio         float64
	scanLength       int
	colsPerRow       int // > 0: keys are rows of this many columns (keySpace.withRows)
	runs             int
	durabilities     []durability
	engines          []*engine
	workloads        []string // in the order they run
	dir              string
	jsonPath         string
	note             string
	cpuProfile       string
	settings         settings
	// args are the command-line arguments, for the report.
	args []string
	// reportPath: render the report in this JSON file instead of running.
	reportPath string
	// summary: with reportPath, print the README's rows instead (summary.go).
	summary bool
	// isolate runs each engine run in a child process; child names the run
	// a child process is to do (isolate.go).
	isolate bool
	child   string

	// flags is every flag's final value by name, for the JSON report.
	flags map[string]any
}

func parseConfig(args []string, stderr io.Writer) (*config, error) {
	c := &config{settings: defaultSettings()}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var durs, engs, benchmarks string
	var seed int64
	fs.IntVar(&c.num, "num", 1_000_000, "keys each fill writes")
	fs.IntVar(&c.reads, "reads", 200_000, "operations per read workload (scan: seeks); -1 = -num")
	fs.IntVar(&c.keySize, "key_size", 16, "key size in bytes (at least 8)")
	fs.IntVar(&c.valueSize, "value_size", 100, "value size in bytes")
	fs.Float64Var(&c.compressionRatio, "compression_ratio", 0.5, "fraction of each value that is random (the rest repeats it), so values compress to about this ratio")
	fs.Int64Var(&seed, "seed", 1, "seed for the fillrandom order and the keys read")
	fs.Int64Var(&c.settings.cacheSize, "cache_size", c.settings.cacheSize, "block cache bytes, every engine")
	fs.IntVar(&c.settings.bloomBits, "bloom_bits", c.settings.bloomBits, "bloom filter bits per key on every level, every engine; 0 = no filters")
	fs.IntVar(&c.settings.blockSize, "block_size", c.settings.blockSize, "data block size in bytes (uncompressed target), every engine")
	fs.IntVar(&c.settings.memtableSize, "write_buffer_size", c.settings.memtableSize, "memtable bytes, every engine")
	var settingsMode, memoryMode, settleMode string
	var noReadCompactions bool
	fs.StringVar(&settingsMode, "settings", "defaults",
		"defaults: each engine keeps its own defaults, only -cache_size, -block_size, -bloom_bits and -write_buffer_size set alike (the published mode); "+
			"matched: the tree's shape set alike too (2 MiB tables on every level, 10 MiB level 1, L0 triggers 4/8/12, 500 open files, one index block per table)")
	fs.StringVar(&memoryMode, "memory", "equal",
		"equal: for the reads, bloomkv's filters go in its block cache and its cache shrinks by its index blocks, so every engine holds -cache_size for reads in all; "+
			"as-set: every engine gets a -cache_size block cache and bloomkv holds its filters and index outside it too")
	fs.StringVar(&settleMode, "settle", "quiet",
		"how every engine settles before the reads: quiet (flush, then wait until no background work has run for 2 s), "+
			"or compact (a full manual compaction first)")
	fs.BoolVar(&c.settings.readCompactions, "read_compactions", false,
		"leave read-triggered compactions on (each engine's default); by default they are off where an engine allows it (bloomkv, Pebble; goleveldb v1.0.0 cannot), so that reads are timed on the tree the settle left")
	fs.BoolVar(&noReadCompactions, "no_read_compactions", false, "read-triggered compactions off (the default now; kept for older commands)")
	fs.BoolVar(&c.settings.cacheFilters, "bloomkv_cache_filters", false, "bloomkv keeps its filter blocks in the block cache (Options.CacheFilterBlocks, level 0 pinned), as Pebble and goleveldb do, instead of in memory outside it")
	fs.IntVar(&c.threads, "threads", 1, "goroutines issuing each read workload's operations")
	fs.IntVar(&c.writers, "writers", 0, "goroutines writing each fill concurrently; 0 = 1, or 8 in the sync pairing so that group commit matters")
	fs.Float64Var(&c.hitRatio, "hit_ratio", 0.5, "readmixed: fraction of reads for present keys")
	fs.IntVar(&c.scanLength, "scan_length", 10, "scan: entries visited per seek")
	fs.IntVar(&c.colsPerRow, "cols_per_row", 0,
		"lay the keys out as rows of this many columns (an 8-byte row prefix, then the column): the filters hold rows "+
			"(bloomkv FilterKey, Pebble Comparer.Split), and the workloads seekprefix (all columns of a present row) and "+
			"seekprefixmissing (an absent row) run with SeekPrefixGE (Pebble with UseL6Filters); goleveldb has no prefix seek. "+
			"Must divide -num; 0 = plain keys")
	fs.IntVar(&c.runs, "runs", 1, "repeat everything this many times (engines interleaved) and report medians")
	fs.StringVar(&durs, "durability", "write-through,buffered", "comma list of pairings: write-through, buffered, sync, or all")
	fs.StringVar(&engs, "engines", "bloomkv,pebble,pebble-l6,goleveldb", "comma list of engines to run (bloomkv is the one ratios are taken against); pebble-l6 is Pebble answering Gets with SeekPrefixGE and UseL6Filters")
	fs.StringVar(&benchmarks, "benchmarks", strings.Join(allWorkloads, ","),
		"comma list of workloads: fillseq, fillrandom (each key once, in key order / shuffled), "+
			"readrandom (present keys), readmissing (absent keys inside the key range), "+
			"readmixed (present with probability -hit_ratio), scan (seek to a present key, visit -scan_length entries), "+
			"seekprefix, seekprefixmissing (with -cols_per_row; added by default then). "+
			"Reads run on the fillrandom database after it settled")
	fs.StringVar(&c.dir, "dir", "", "directory for the temporary databases (default the system's temporary directory; not a tmpfs, or sync means nothing)")
	fs.StringVar(&c.jsonPath, "json", "", "write every figure, the engine versions, the machine, the date and the flags as JSON to this file")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (narrow it with -engines and -benchmarks)")
	fs.StringVar(&c.note, "note", "", "free text recorded in the report, e.g. that the machine was shared")
	fs.BoolVar(&c.isolate, "isolate", true, "run each engine run in a child process of its own, so that its peak RSS is its own and not what earlier engines left in the process (-isolate=false: all in this process; -cpuprofile then covers everything, else each child writes PATH.<pairing>.<engine>.run<N>)")
	fs.StringVar(&c.child, "child", "", "internal: the engine run a child process does (durability,engine,run), set by the harness for -isolate")
	fs.DurationVar(&settleQuiet, "settle_quiet", 2*time.Second, "the settle rule's quiet period: no background work for this long before the reads (keep it above bloomkv's 1 s IdleCompactionDelay; the tests shorten it)")
	fs.StringVar(&c.reportPath, "report", "", "print the tables of the report in this JSON file (written by -json) instead of running: the published tables are regenerated this way")
	fs.BoolVar(&c.summary, "summary", false, "with -report: print the README's table rows for the report instead of its tables (bloomkv's ops/s over each peer's, read memory, the run)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run . [flags]\n\nRuns the same workloads against bloomkv, Pebble and goleveldb with equal settings and equal durability.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	if c.summary && c.reportPath == "" {
		return nil, errors.New("-summary prints the README's rows of a committed report: it needs -report FILE.json")
	}
	c.seed = uint64(seed)
	c.args = args
	switch settingsMode {
	case "defaults":
	case "matched":
		c.settings.matched = true
	default:
		return nil, fmt.Errorf("-settings: unknown mode %q (defaults, matched)", settingsMode)
	}
	switch memoryMode {
	case "equal":
	case "as-set":
		c.settings.equalMemory = false
	default:
		return nil, fmt.Errorf("-memory: unknown mode %q (equal, as-set)", memoryMode)
	}
	switch settleMode {
	case "quiet":
	case "compact":
		c.settings.settleCompact = true
	default:
		return nil, fmt.Errorf("-settle: unknown mode %q (quiet, compact)", settleMode)
	}
	if noReadCompactions && c.settings.readCompactions {
		return nil, fmt.Errorf("-read_compactions and -no_read_compactions contradict each other")
	}
	if c.reads == -1 {
		c.reads = c.num
	}
	c.flags = map[string]any{}
	fs.VisitAll(func(f *flag.Flag) { c.flags[f.Name] = f.Value.(flag.Getter).Get() })

	for _, name := range splitList(durs) {
		if name == "all" {
			c.durabilities = append(c.durabilities, durabilities...)
			continue
		}
		i := slices.IndexFunc(durabilities, func(d durability) bool { return d.String() == name })
		if i < 0 {
			return nil, fmt.Errorf("-durability: unknown pairing %q (write-through, buffered, sync, all)", name)
		}
		c.durabilities = append(c.durabilities, durabilities[i])
	}
	slices.Sort(c.durabilities)
	c.durabilities = slices.Compact(c.durabilities)
	for _, name := range splitList(engs) {
		e := engineByName(name)
		if e == nil {
			return nil, fmt.Errorf("-engines: unknown engine %q (bloomkv, pebble, pebble-l6, goleveldb)", name)
		}
		if !slices.Contains(c.engines, e) {
			c.engines = append(c.engines, e)
		}
	}
	benchmarksSet := false
	fs.Visit(func(f *flag.Flag) { benchmarksSet = benchmarksSet || f.Name == "benchmarks" })
	if c.colsPerRow > 0 && !benchmarksSet {
		benchmarks += "," + strings.Join(prefixWorkloads, ",")
	}
	for _, name := range splitList(benchmarks) {
		if slices.Contains(prefixWorkloads, name) && c.colsPerRow <= 0 {
			return nil, fmt.Errorf("-benchmarks: %s needs -cols_per_row", name)
		}
		if !slices.Contains(allWorkloads, name) && !slices.Contains(prefixWorkloads, name) {
			return nil, fmt.Errorf("-benchmarks: unknown workload %q", name)
		}
		if !slices.Contains(c.workloads, name) {
			c.workloads = append(c.workloads, name)
		}
	}
	// Fills first, in the listed order, then the reads.
	slices.SortStableFunc(c.workloads, func(a, b string) int {
		switch {
		case isFill(a) && !isFill(b):
			return -1
		case !isFill(a) && isFill(b):
			return 1
		}
		return 0
	})

	switch {
	case len(c.durabilities) == 0:
		return nil, fmt.Errorf("-durability: no pairing given")
	case len(c.engines) == 0:
		return nil, fmt.Errorf("-engines: no engine given")
	case len(c.workloads) == 0:
		return nil, fmt.Errorf("-benchmarks: no workload given")
	case c.num < 2 || c.num > 1<<31:
		return nil, fmt.Errorf("-num %d outside [2, 2^31]", c.num)
	case c.reads < 1:
		return nil, fmt.Errorf("-reads %d below 1", c.reads)
	case c.keySize < 8 || c.keySize > 1<<10:
		return nil, fmt.Errorf("-key_size %d outside [8, 1024]", c.keySize)
	case c.valueSize < 0 || c.valueSize > 1<<20:
		return nil, fmt.Errorf("-value_size %d outside [0, 1 MiB]", c.valueSize)
	case c.compressionRatio <= 0 || c.compressionRatio > 1:
		return nil, fmt.Errorf("-compression_ratio %g outside (0, 1]", c.compressionRatio)
	case c.settings.cacheSize < 1<<20:
		return nil, fmt.Errorf("-cache_size %d below 1 MiB", c.settings.cacheSize)
	case c.settings.blockSize < 256 || c.settings.blockSize > 1<<20:
		return nil, fmt.Errorf("-block_size %d outside [256, 1 MiB]", c.settings.blockSize)
	case c.settings.memtableSize < 64<<10 || c.settings.memtableSize > 1<<30:
		return nil, fmt.Errorf("-write_buffer_size %d outside [64 KiB, 1 GiB]", c.settings.memtableSize)
	case c.settings.bloomBits > 64:
		return nil, fmt.Errorf("-bloom_bits %d above 64", c.settings.bloomBits)
	case c.threads < 1:
		return nil, fmt.Errorf("-threads %d below 1", c.threads)
	case c.writers < 0:
		return nil, fmt.Errorf("-writers %d below 0", c.writers)
	case c.hitRatio < 0 || c.hitRatio > 1:
		return nil, fmt.Errorf("-hit_ratio %g outside [0, 1]", c.hitRatio)
	case c.scanLength < 1:
		return nil, fmt.Errorf("-scan_length %d below 1", c.scanLength)
	case c.colsPerRow < 0:
		return nil, fmt.Errorf("-cols_per_row %d below 0", c.colsPerRow)
	case c.colsPerRow > 0 && (c.num%c.colsPerRow != 0 || c.num/c.colsPerRow < 2):
		return nil, fmt.Errorf("-cols_per_row %d must divide -num %d into at least 2 rows", c.colsPerRow, c.num)
	case c.colsPerRow > 0 && c.keySize < rowPrefixLen+8:
		return nil, fmt.Errorf("-key_size %d: row keys need at least %d bytes (row prefix and column)", c.keySize, rowPrefixLen+8)
	case c.runs < 1:
		return nil, fmt.Errorf("-runs %d below 1", c.runs)
	}
	if c.colsPerRow > 0 {
		c.settings.rowPrefix = rowPrefixLen
	}
	return c, nil
}

// writersFor returns the number of concurrent writers in pairing d.
func (c *config) writersFor(d durability) int {
	switch {
	case c.writers > 0:
		return c.writers
	case d == synced:
		return 8
	}
	return 1
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
