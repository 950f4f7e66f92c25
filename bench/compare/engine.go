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
// method but close may be called from many goroutines at once.
type store interface {
	// put writes key=value with the durability the store was opened for.
	put(key, value []byte) error
	// get looks key up. The value is the caller's until the next get with
	// the same dst: dst's storage, or a copy the engine made anyway.
	get(key, dst []byte) (value []byte, found bool, err error)
	// newIter returns an iterator over the whole key space, for one
	// goroutine.
	newIter() (storeIter, error)
	// settle flushes the memtable and returns once no flush or compaction
	// runs or is due, so that reads are timed on a tree that stays put.
	settle() error
	// shape describes the tree: tables per level and bytes in tables.
	shape() treeShape
	close() error
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
	// OutsideCacheBytes is memory the engine holds for reads outside its
	// block cache (bloomkv keeps every open table's filter there).
	OutsideCacheBytes int64 `json:"outside_cache_bytes,omitempty"`
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
	// settingNotes lists where this engine's defaults differ from the
	// equalized settings and what the harness set instead.
	settingNotes func(s *settings) []string
}

var engines = []*engine{bloomkvEngine, pebbleEngine, goleveldbEngine}

func engineByName(name string) *engine {
	for _, e := range engines {
		if e.name == name {
			return e
		}
	}
	return nil
}

// settings are what every engine is configured with alike.
type settings struct {
	blockSize     int   // data block target, uncompressed
	memtableSize  int   // bytes buffered before a flush
	cacheSize     int64 // block cache bytes
	bloomBits     int   // filter bits per key on every level; <= 0: no filters
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
	// cacheFilters puts bloomkv's filter blocks in its block cache
	// (Options.CacheFilterBlocks), as the peers keep theirs: equal memory
	// for the same -cache_size (bloomkv's index blocks stay outside).
	cacheFilters bool
	// noReadCompactions turns read-triggered compactions off where an
	// engine allows it (bloomkv, Pebble; goleveldb v1.0.0 cannot).
	noReadCompactions bool
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
	}
}
