package main

import "fmt"

// durability is what an acknowledged write has survived when the call
// returns. Each pairing compares engines configured for the same one.
type durability int

const (
	// writeThrough: the write reached the operating system (a write call,
	// or for bloomkv on 64-bit Linux a copy into its memory-mapped log; no
	// fsync): it survives kill -9, not a machine crash.
	writeThrough durability = iota
	// buffered: the write is in the process's memory and reaches the
	// operating system soon after (bloomkv within 1 ms, Pebble as soon as
	// its log flusher runs): a kill -9 may lose the newest writes.
	buffered
	// synced: the write was fsynced: it survives losing the machine.
	synced
)

var durabilities = []durability{writeThrough, buffered, synced}

func (d durability) String() string {
	switch d {
	case writeThrough:
		return "write-through"
	case buffered:
		return "buffered"
	case synced:
		return "sync"
	}
	return fmt.Sprintf("durability(%d)", int(d))
}

// store is one engine open on one directory, as the workloads use it. Every
// method but close, reopen and flushBackground may be called from many
// goroutines at once.
type store interface {
	// put writes key=value with the durability the store was opened for.
	put(key, value []byte) error
	// get looks key up. The value is the caller's until the next get with
	// the same dst: dst's storage, or a copy the engine made anyway.
	get(key, dst []byte) (value []byte, found bool, err error)
	// newIter returns an iterator over the whole key space, for one
	// goroutine.
	newIter() (storeIter, error)
	// flush writes the memtable to a table (goleveldb, which has no flush,
	// reopens the database: its recovery writes one).
	flush() error
	// background says what background work has completed (a comparable
	// value that changes when a flush or compaction finishes) and whether
	// none runs or is due now. It may block while the engine's own wait
	// for compactions returns. settle (settle.go) polls it.
	background() (state any, idle bool)
	// compactAll compacts the whole key space into the engine's last
	// levels, untimed (-settle compact).
	compactAll() error
	// reopen closes the database and opens it again with the read-phase
	// configuration (readPhase): every cache starts cold, and each
	// engine's block cache is sized so that the memory it holds for reads
	// is what the settings say (see readPhase).
	reopen(rp readPhase) error
	// shape describes the tree: tables per level and bytes in tables.
	shape() treeShape
	// counters reads the engine's cumulative background and memory
	// figures.
	counters() engineCounters
	close() error
}

// readPhase is how a store is reopened for the timed reads.
type readPhase struct {
	// blockCache is the block cache capacity to open with (before any
	// engine-specific charge the engine adds back, like Pebble's
	// memtable reservation).
	blockCache int64
	// cacheFilters puts bloomkv's filters in its block cache.
	cacheFilters bool
}

// engineCounters are an engine's own cumulative figures, read before and
// after a phase. A field an engine cannot report is -1.
type engineCounters struct {
	// Compactions counts the compactions completed (-1: the engine does
	// not count them: goleveldb); ReadCompactions those started by reads.
	Compactions     int64 `json:"compactions"`
	ReadCompactions int64 `json:"read_compactions"`
	// CompactionBytes is the bytes of tables compactions wrote.
	CompactionBytes int64 `json:"compaction_bytes"`
	// BytesWritten is every byte the engine wrote to its log and tables
	// (and, for goleveldb, its manifest): the numerator of write
	// amplification.
	BytesWritten int64 `json:"bytes_written"`
	// FilterBytes and IndexBytes are the filter and index blocks of the
	// live tables; OutsideCacheBytes is what of them (and anything else
	// held for reads) the engine keeps in memory outside its block cache.
	FilterBytes       int64 `json:"filter_bytes"`
	IndexBytes        int64 `json:"index_bytes"`
	OutsideCacheBytes int64 `json:"outside_cache_bytes"`
	// BlockCacheBytes is what the block cache holds now; CacheReserved is
	// what else is charged to its capacity (Pebble's memtables).
	BlockCacheBytes int64 `json:"block_cache_bytes"`
	CacheReserved   int64 `json:"cache_reserved,omitempty"`
}

// sub returns c - earlier for the cumulative fields; the gauges are c's.
func (c engineCounters) sub(earlier engineCounters) engineCounters {
	d := c
	diff := func(a, b int64) int64 {
		if a < 0 || b < 0 {
			return -1
		}
		return a - b
	}
	d.Compactions = diff(c.Compactions, earlier.Compactions)
	d.ReadCompactions = diff(c.ReadCompactions, earlier.ReadCompactions)
	d.CompactionBytes = diff(c.CompactionBytes, earlier.CompactionBytes)
	d.BytesWritten = diff(c.BytesWritten, earlier.BytesWritten)
	return d
}

// storeIter is a forward iterator.
type storeIter interface {
	seekGE(key []byte) bool
	// seekPrefixGE positions at the first key >= prefix that begins with
	// the row prefix (-cols_per_row); next then stays inside the row.
	// Only engines with prefixSeeks set implement it.
	seekPrefixGE(prefix []byte) bool
	next() bool
	key() []byte
	err() error
	close() error
}

// treeShape is how an engine laid out the data, reported after settling.
type treeShape struct {
	TablesPerLevel []int64 `json:"tables_per_level"`
	TableBytes     int64   `json:"table_bytes"`
}

// engine describes one engine under comparison.
type engine struct {
	name   string
	module string // Go module path, for the version in the report
	// mode says how the engine is configured for durability d, or, with ok
	// false, why it cannot take part in that pairing.
	mode func(d durability) (how string, ok bool)
	open func(dir string, s *settings, d durability) (store, error)
	// noPrefixSeeks, when set, says why the engine cannot run the prefix
	// workloads (-cols_per_row); they are then left out for it.
	noPrefixSeeks string
	// indexOutsideCache: the engine keeps its index blocks in memory
	// outside its block cache (bloomkv), so equal memory charges them
	// against its cache.
	indexOutsideCache bool
	// settingNotes lists where this engine's defaults differ from the
	// equalized settings and what the harness set instead.
	settingNotes func(s *settings) []string
}

var engines = []*engine{bloomkvEngine, pebbleEngine, pebbleL6Engine, goleveldbEngine}

func engineByName(name string) *engine {
	for _, e := range engines {
		if e.name == name {
			return e
		}
	}
	return nil
}

// settings are what every engine is configured with alike.
//
// In the defaults mode (matched false, the published one) an engine gets
// only blockSize, memtableSize, cacheSize, bloomBits (and the durability,
// row prefix and read-compaction choice) and keeps its own defaults for
// everything else: table sizes, level targets, level-0 triggers, open-file
// limits, index layout. In the shape-matched mode (-settings matched) the
// shape fields below are set alike too, at bloomkv's old defaults.
type settings struct {
	blockSize    int   // data block target, uncompressed
	memtableSize int   // bytes buffered before a flush
	cacheSize    int64 // block cache bytes
	bloomBits    int   // filter bits per key on every level; <= 0: no filters

	// matched: set the tree's shape alike too (the fields below).
	matched       bool
	l0Compaction  int   // level-0 tables that trigger a compaction
	l0Slowdown    int   // level-0 tables at which writes slow down (where an engine has it)
	l0Stop        int   // level-0 tables at which writes stop
	lBaseBytes    int64 // size target of the first level below level 0
	multiplier    int   // growth factor between level targets
	tableSize     int64 // compaction output table size, every level
	maxOpenFiles  int
	immutableMems int // full memtables that may wait for a flush

	// rowPrefix > 0: keys are rows (-cols_per_row) whose first rowPrefix
	// bytes name the row; filters hold rows, and prefix seeks use them.
	rowPrefix int
	// equalMemory (-memory equal, the default): for the timed reads every
	// engine holds cacheSize bytes for reads in all: bloomkv's filters go
	// to its block cache (Options.CacheFilterBlocks) and its block cache
	// shrinks by its index bytes, which it keeps outside the cache (the
	// peers keep filters and index in theirs). Off (-memory as-set), every
	// engine gets a cacheSize block cache and bloomkv holds its filters
	// and index outside it as well; the report prints how much.
	equalMemory bool
	// cacheFilters (-bloomkv_cache_filters) puts bloomkv's filters in its
	// block cache during the fills too.
	cacheFilters bool
	// readCompactions leaves read-triggered compactions on (each engine's
	// default); off they are turned off where an engine allows it
	// (bloomkv, Pebble; goleveldb v1.0.0 cannot).
	readCompactions bool
	// settleCompact: settle with a full manual compaction first.
	settleCompact bool
}

func defaultSettings() settings {
	return settings{
		blockSize:     4 << 10,
		memtableSize:  4 << 20,
		cacheSize:     8 << 20,
		bloomBits:     10,
		l0Compaction:  4,
		l0Slowdown:    8,
		l0Stop:        12,
		lBaseBytes:    10 << 20,
		multiplier:    10,
		tableSize:     2 << 20,
		maxOpenFiles:  500,
		immutableMems: 2,
		equalMemory:   true,
	}
}
