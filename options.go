package bloomkv

import (
	"log/slog"
	"time"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// Options: every setting, grouped by what it governs, with its default.
// Defaults are applied and values checked in options_defaults.go.

// Compression selects how data blocks are stored. The zero value means
// SnappyCompression. It is sstable.Compression under another name: the
// engine has one compression setting, and the table format alone decides
// how it is recorded on disk.
type Compression = sstable.Compression

const (
	// SnappyCompression compresses each data block with snappy when that
	// saves space (the default).
	SnappyCompression = sstable.SnappyCompression
	// NoCompression stores blocks raw.
	NoCompression = sstable.NoCompression
	// ZstdCompression compresses each data block with zstd when that saves
	// space: smaller than snappy, slower to write and to read. Every block
	// says how it is stored, so tables of any compression read alike.
	ZstdCompression = sstable.ZstdCompression
)

// Options configure a DB. The zero value of every field means its default;
// a nil *Options means all defaults.
type Options struct {
	// Memtable, tables and the block cache.

	// MemtableSize is the number of bytes buffered in memory before the
	// memtable is flushed to a level-0 SSTable (default 4 MiB).
	MemtableSize int
	// BlockSize is the target uncompressed size of a data block (default 4 KiB).
	BlockSize int
	// IndexPartitionSize cuts a new table's index into partitions of about
	// this many bytes, each with a filter partition over the keys of its
	// data blocks, under a small top-level index (RocksDB's partitioned
	// index and filters; sstable/partitions.go). Partitions live in the
	// block cache with CacheFilterBlocks, so that a Get reads one filter
	// partition and one index partition of a few KB, not a table's whole
	// filter, and index and filter memory is bounded by BlockCacheSize
	// plus the top-level indexes (0.03 bytes per key at 2 KiB). Default
	// (0): 2 KiB partitions with CacheFilterBlocks (at 10M keys a present
	// Get read 8.3 KB against 11.5 KB with 4 KiB partitions: p50 9.6
	// against 12.4 us), whole blocks without it (each open table then
	// holds its index and filter in memory, where partitions only cost:
	// an absent-key probe some 45 ns more); negative: never partition. A table whose index fits one partition is
	// written whole.
	IndexPartitionSize int
	// Compression of data blocks (default SnappyCompression), for every
	// level LevelCompression does not set.
	Compression Compression
	// LevelCompression, when set, gives the compression of the tables
	// written to each level: LevelCompression[i] for level i (flushes
	// write level 0, compactions their output level), the last entry for
	// the levels past its end. For example {SnappyCompression,
	// SnappyCompression, ZstdCompression}: snappy where data is rewritten
	// often, zstd from level 2 down, where most of it rests. Background
	// compaction moves a table down a level unchanged only when the two
	// levels' compressions agree.
	LevelCompression []Compression
	// BlockCacheSize is the number of bytes of uncompressed blocks cached
	// (default 8 MiB; negative disables the cache).
	BlockCacheSize int64

	// Filters: the tables' filters, then the memtable's, the range filters
	// and the tree-wide filter.
	//
	// The bits per key of new tables' filters follow one rule:
	// FilterBitsPerKey when it is > 0, else BloomBitsPerKey (a negative
	// BloomBitsPerKey: no filter blocks). That is the uniform setting; the
	// other fields only shape how it is spent: FilterPerLevel spreads the
	// same average unevenly over the levels, FilterSkipLastLevel spends
	// none on the last level, a fuse FilterVariant sizes itself from its
	// keys (the setting only switches it on), and IgnoreFilters changes
	// reads, not what is written. MemtableFilterRatio and
	// RangeFilterBitsPerKey size other filters, apart from this rule.

	// BloomBitsPerKey is the number of filter bits spent per key in every
	// SSTable written from now on (flushes and compactions), in whole
	// bits; default 10. A negative value writes tables without filter
	// blocks. FilterBitsPerKey overrides it.
	BloomBitsPerKey int
	// FilterBitsPerKey, when > 0, overrides BloomBitsPerKey with a
	// fractional setting (9.5), at most 64; tables record it exactly.
	// Negative, infinite and NaN values are rejected (disable filters with
	// a negative BloomBitsPerKey). For a target false-positive rate, set
	// it to filter.BitsPerKeyForFPR(rate): the fewest bits at which a
	// standard filter block meets the rate in theory (9.59 bits at 1%; the
	// blocked variant's rate is somewhat higher at those bits).
	FilterBitsPerKey float64
	// FilterTargetFPR, when > 0 (in [1e-9, 1)), acts as FilterBitsPerKey
	// set to filter.BitsPerKeyForFPR(FilterTargetFPR); setting both is an
	// error.
	//
	// Deprecated: set FilterBitsPerKey to filter.BitsPerKeyForFPR(rate),
	// which is what this does: it is a second way to say the same setting.
	FilterTargetFPR float64
	// FilterKey, when set, is a ROW-style extractor: the filter indexes
	// FilterKey(key) instead of the whole key, and Get probes with the same
	// extractor. It must be deterministic. For Iterator.SeekPrefixGE and
	// IterOptions.Prefix it must also return a prefix of its key such that
	// every key starting with that prefix has it as its filter key (a
	// fixed-width row, or a row with its delimiter): the keys of a prefix
	// are then contiguous.
	FilterKey func(key []byte) []byte
	// FilterWholeKey, with FilterKey, makes every new table's filter hold
	// the whole keys as well as their filter keys (HBase's ROWCOL and ROW
	// together): Get probes the whole key, so an absent column of a present
	// row is a filter negative, and prefix seeks probe the row. It costs
	// one filter entry per key plus one per row.
	FilterWholeKey bool
	// FilterKeyName identifies FilterKey and is recorded in every table.
	// A table whose filter was built under another name is read without its
	// filter (never with a wrong one). Change it whenever FilterKey changes.
	// Default "custom" when FilterKey is set.
	FilterKeyName string
	// FilterVariant is the layout of new filter blocks: filter.VariantStandard
	// (the zero value means it); filter.VariantBlocked, which keeps each
	// key's probes in one 64-byte cache line: faster probes for a somewhat
	// higher false-positive rate at equal bits per key; or filter.VariantFuse,
	// a binary fuse filter: a 0.39% rate in about 9 bits per key (9.0 for
	// tables of a million keys, 9.8 for 35,000), sized by its keys alone, so
	// the bits-per-key settings only switch it on (see filter/README.md).
	// Tables of every variant are always readable; Compact rewrites tables
	// of another variant.
	FilterVariant filter.Variant
	// FilterPerLevel spends the same filter memory as the uniform setting
	// (FilterBitsPerKey, FilterTargetFPR or BloomBitsPerKey: the average)
	// unevenly across levels, as Monkey does: each table gets the bits that
	// minimise the expected false-positive table probes of an absent Get,
	// chosen from the live tree's level sizes, and from how much of the
	// key space each level covers, when the table is written
	// (filter.AllocateBitsProbed; docs/filter-policy.md). Levels with fewer
	// keys per probing Get get more bits per key, the largest fewer. Each
	// write is also corrected toward the budget (within 2 bits), so that
	// a growing tree's tables, which keep the bits they were written
	// with, spend what the uniform setting would. Metrics.Levels shows the
	// choice. It needs a bloom variant (a fuse filter's size is fixed).
	FilterPerLevel bool
	// FilterSkipLastLevel writes tables of the tree's last level (the
	// deepest holding data) without filters, RocksDB's
	// optimize_filters_for_hits: most filter memory goes, and Gets of keys
	// that exist (which a last-level filter cannot help) cost the same; a
	// Get of an absent key then reads a last-level data block whenever
	// the key falls in a table's range. Off by default.
	FilterSkipLastLevel bool
	// CacheFilterBlocks keeps tables' filter blocks (and the index and
	// filter partitions of partitioned tables: IndexPartitionSize) in the
	// block cache, charged at their size, instead of holding each open
	// table's filter in memory from its open (RocksDB's
	// cache_index_and_filter_blocks). Up to 90% of the cache keeps them
	// from data blocks, which may not evict them there
	// (sstable.DefaultMetadataShare); beyond it they compete with data
	// blocks by recency. Filter memory is then bounded by
	// BlockCacheSize, at the cost of a cache lookup per filter probe and a
	// read when an evicted filter is probed again (Metrics.FilterBlockReads).
	// FilterPinning says which filters stay pinned. Needs a block cache.
	//
	// With it, a Get at a level where most recent Gets found their key
	// (more than half of the last few hundred probes of the level's
	// tables, counted per CPU) consults a filter only if it is in the
	// cache: one that would be read from its file is skipped, and the
	// table searched as if it had said "maybe" (Metrics.FilterSkips).
	// There, reading the filter costs a block read that a Get of a key
	// the table holds gains nothing from, and one of an absent key saves
	// at most the data block read instead. AlwaysReadFilters turns this
	// off.
	CacheFilterBlocks bool
	// AlwaysReadFilters, with CacheFilterBlocks, makes every Get read an
	// evicted filter from its file, at every level (see CacheFilterBlocks).
	AlwaysReadFilters bool
	// FilterPinning, with CacheFilterBlocks, says which tables hold their
	// filter pinned once probed: not evictable, still charged to the block
	// cache (RocksDB's pin_l0_filter_and_index_blocks_in_cache). Default
	// PinLevel0Filters: every Get probes every level-0 table.
	FilterPinning FilterPinning
	// MemtableFilterRatio, when above 0, gives each memtable a bloom filter
	// of MemtableFilterRatio x MemtableSize bytes over its keys (and rows,
	// with FilterKey), so that a Get of an absent key, or a prefix seek of
	// an absent row, skips the memtable's search and its lock (RocksDB's
	// memtable_prefix_bloom_size_ratio). Default 0: off (see docs/studying-filters.md).
	MemtableFilterRatio float64
	// IgnoreFilters makes reads skip filter blocks entirely: a study knob
	// for measuring what filters buy. Tables are still written with filters
	// per BloomBitsPerKey.
	IgnoreFilters bool
	// RangeFilterBitsPerKey, when > 0, gives every new table a range
	// filter of about this many bits per key, in [2, 48] (rangefilter.go):
	// a bounded seek -- SeekGE with an UpperBound, SeekLT with a
	// LowerBound -- skips the tables whose range filter says the range
	// holds no key, without reading a block. It indexes 8 bytes of each
	// key, after a prefix all keys of the table share (chosen per table),
	// so it resolves ranges to those bytes: it suits keys whose order is
	// an integer or a timestamp there. 0 (the default) writes none; tables written with one are
	// read with it whatever this says.
	RangeFilterBitsPerKey float64
	// IgnoreRangeFilters makes iterators skip range filters: a study knob
	// for measuring what they buy on the same tables.
	IgnoreRangeFilters bool
	// TreeFilter keeps one in-memory filter over the whole tree beside the
	// tables' own (after Chucky): its entries map a key's fingerprint to
	// the level holding it, so a Get for an absent key asks one filter
	// whatever the depth, and a present one reads the level it names.
	// Built from the tables at Open (reading every table once) or loaded
	// from the copy Close saved, kept up to date from the keys flushes and
	// compactions write and read; memory in Metrics.TreeFilter.
	// Off by default; ignored with IgnoreFilters. See docs/tree-filter.md.
	TreeFilter bool

	// The write-ahead log: how far a write gets before it returns, and what
	// recovery accepts.

	// WALMode says how far a write gets before it returns (default
	// WALWriteThrough; see WALMode). WriteOptions.Sync asks for more, per
	// write.
	WALMode WALMode
	// Sync fsyncs the write-ahead log before a write returns, so that
	// acknowledged writes survive an operating-system crash too. It is
	// WALMode WALSync (and conflicts with WALBuffered and WALDisabled).
	Sync bool
	// WALBufferedDelay is, in WALBuffered, the longest an acknowledged
	// write waits in memory before it reaches the operating system
	// (default 1 ms; 64 KiB waiting are handed over at once).
	WALBufferedDelay time.Duration
	// WALRecovery says what Open does with damage in the write-ahead logs
	// (default WALRecoverTolerateTornTail; see WALRecoveryMode).
	WALRecovery WALRecoveryMode

	// The tree's shape and compaction.

	// L0CompactionThreshold is the number of level-0 tables that triggers a
	// compaction into level 1 (default 4).
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold: at this many level-0 tables each write is
	// delayed by 1 ms to let compaction catch up (default 8).
	L0SlowdownWritesThreshold int
	// L0StopWritesThreshold: at this many level-0 tables writes wait until
	// compaction reduces them (default 12).
	L0StopWritesThreshold int
	// MaxImmutableMemtables is the number of full memtables that may wait
	// for a flush before writes wait (default 2).
	MaxImmutableMemtables int
	// LBaseMaxBytes is the size the base level's target is kept near, the
	// level 0 compacts into (default 10 MiB): within a factor
	// sqrt(LevelMultiplier) of it either way (see StaticLevelBytes). With
	// StaticLevelBytes it is level 1's target, and each deeper level's is
	// LevelMultiplier times the one above.
	LBaseMaxBytes int64
	// LevelMultiplier is the growth factor between level targets (default 10).
	LevelMultiplier int
	// The levels are sized from the bottom up by default (RocksDB's
	// level_compaction_dynamic_level_bytes, Pebble's only mode): the
	// deepest level holding a table is as large as it is, each level above
	// it LevelMultiplier times smaller, and level 0 compacts into the base
	// level, the shallowest whose target is still at least
	// LBaseMaxBytes/sqrt(LevelMultiplier) (3.2 MiB with the defaults; the
	// level whose target is nearest LBaseMaxBytes); the levels above the
	// base stay empty. About 90% of the data then
	// sits in the last level (with the default multiplier), which bounds
	// what older versions above it can take, the tree has no more levels
	// than its size needs, and a present-key Get probes fewer tables (at
	// 10M keys 1.45 against 2.43 with static targets; at 30M 2.30 against
	// 3.18). Table sizes (TargetFileSizeMultiplier) count from the base
	// level. A new tree's first tables go to level 6. The rule and its
	// corner cases are in package compaction's shape.go; the measurements
	// in docs/design-notes.md.
	//
	// StaticLevelBytes turns that off: level 1's target is LBaseMaxBytes,
	// each deeper level's LevelMultiplier times the one above, and level 0
	// compacts into level 1 (LevelDB's rule, and bloomkv's default before
	// 2026-12). A tree may be reopened with either setting: one built with
	// static targets and opened with dynamic ones keeps its last level and
	// drains the levels above the base into it.
	StaticLevelBytes bool
	// DynamicLevelBytes asks for dynamic level sizes, which are now the
	// default; Open sets it to !StaticLevelBytes in the options the
	// engine keeps, and refuses both set.
	//
	// Deprecated: dynamic sizing is the default; set StaticLevelBytes for
	// static targets.
	DynamicLevelBytes bool
	// TargetFileSize is the size at which compaction outputs into the base
	// level (level 1 with StaticLevelBytes) are split (default 2 MiB);
	// deeper levels' tables are TargetFileSizeMultiplier times larger per
	// level.
	TargetFileSize int64
	// TargetFileSizeMultiplier is the growth of table sizes per level below
	// the base level (default 2, as Pebble's per-level sizes; 1 keeps every
	// level at TargetFileSize): with the defaults, a tree of 100 GiB has its
	// base at level 2 with 2 MiB tables and 32 MiB tables in level 6, so it
	// holds a few thousand tables, not fifty thousand (with
	// StaticLevelBytes: 2 MiB in level 1, 64 MiB in level 6).
	TargetFileSizeMultiplier int
	// IdleCompactionDelay: once no write has been applied for this long,
	// background compaction moves every level-0 table into level 1, even
	// below L0CompactionThreshold. A level-0 table left by a burst of
	// writes overlaps most keys, so it costs every later seek a block read
	// and every Get a filter probe; while writes go on, waiting for the
	// threshold batches that work. Default 1 s; negative turns it off (as
	// does DisableAutomaticCompactions). WaitForCompactions does not wait
	// for the delay.
	IdleCompactionDelay time.Duration
	// DisableAutomaticCompactions stops background compactions (flushes still
	// happen). Compact still works. For tests and studies.
	DisableAutomaticCompactions bool
	// DisableReadCompactions stops read-triggered compactions. By default,
	// when reads keep passing through a table of one level (1 and deeper)
	// on their way to a deeper level's table for the same keys -- iterator
	// seeks that read a block in both, Gets that consulted it in vain --
	// background compaction merges the table into the level below once it
	// has been charged about one read per 16 KiB of its size (at least
	// 100) and writes have paused for a second (under steady writes it
	// would add to write amplification): later reads there then touch one
	// table fewer. Metrics.
	// ReadCompactions counts them; CompactionInfo.ReadTriggered marks them.
	DisableReadCompactions bool
	// MaxManifestFileSize is the size past which the manifest is rewritten
	// as a fresh snapshot of the current version (default 4 MiB).
	MaxManifestFileSize int64

	// Files.

	// MaxOpenFiles bounds the number of SSTables kept open. A table closed
	// to stay within it is opened again, its index and filter read again,
	// by the next read that needs it. Default: half of the process's limit
	// on open file descriptors (RLIMIT_NOFILE), at least 500 and at most
	// 65,536; 1,000 where the limit cannot be read.
	MaxOpenFiles int
	// DisableMmap reads table blocks with one pread each and writes the
	// write-ahead log with one write call per write.
	//
	// By default an open table is mapped into memory read-only (on 64-bit
	// Linux, macOS and the BSDs, with the operating system's file system)
	// and blocks are copied out of the mapping, which saves a system call
	// per block read: about a sixth of a Get that misses the block cache.
	// The mapping adds no memory of its own (it shares the page cache) and
	// is released when the table is closed.
	//
	// And on 64-bit Linux, in WALWriteThrough, the log is written through
	// a shared writable map: a write is copied into the operating system's
	// page cache instead of handed to it by a write call, with the same
	// promise (it survives kill -9) at a fraction of the cost. The log file
	// is reserved (fallocate) ahead of its records, up to 4 MiB, and cut
	// back when the log is sealed; after a crash the newest log ends in
	// zeros that recovery reads as unused space.
	DisableMmap bool
	// FS is the file system (default the operating system's). Tests use
	// vfs.NewMem and vfs.NewErrorFS.
	FS vfs.FS

	// Opening.

	// ReadOnly opens an existing database without changing its data: no
	// manifest, table or log is written, no file is removed, and the
	// directory may be read-only. It takes a shared lock on the LOCK file,
	// which keeps writers out (their Open fails with ErrLocked, and a
	// read-only open fails so while a writer holds the directory) while
	// read-only opens share it. A directory without a LOCK file (a copy)
	// gets an empty one, the only file a read-only open ever creates;
	// where none can be created (no write permission, a read-only file
	// system) it opens without a lock. Recovery replays the
	// write-ahead logs into memory only. Calls that write return
	// ErrReadOnly; there is no background work. A missing database is an
	// error (ReadOnly implies ErrorIfNotExists).
	ReadOnly bool
	// ErrorIfExists makes Open fail, with an error wrapping fs.ErrExist,
	// when the directory already holds a database.
	ErrorIfExists bool
	// ErrorIfNotExists makes Open fail, with an error wrapping
	// fs.ErrNotExist, when the directory holds no database, instead of
	// creating one; nothing is created.
	ErrorIfNotExists bool

	// Observing.

	// Logger receives what the engine has to report that is not an error
	// of a call: data dropped by recovery, background errors (Warn when
	// retried, Error when they stop writes), files it failed to remove.
	// Nothing is logged on the happy path at Info and above. At Debug it
	// also hears a summary of each open (tables per level, recovered
	// sequence, time), flush and compaction (job, reason, levels, inputs,
	// outputs, bytes, time). Default slog.Default().
	Logger *slog.Logger
	// EventListener, when set, is told of flushes, compactions, files
	// created and deleted, recovery drops, background errors and write
	// stalls (see EventListener for how callbacks are delivered).
	EventListener *EventListener

	// testHooks (tests only) sees which part of the engine does what.
	testHooks *testHooks
}
