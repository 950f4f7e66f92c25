package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/bloomkv/bloomkv"
)

var bloomkvEngine = &engine{
	name:   "bloomkv",
	module: "github.com/bloomkv/bloomkv",
	mode: func(d durability) (string, bool) {
		switch d {
		case writeThrough:
			return "WALMode: WALWriteThrough (on 64-bit Linux each write is copied into the memory-mapped log, in the page cache when Put returns, as a write call would put it)", true
		case buffered:
			return "WALMode: WALBuffered (WALBufferedDelay 1 ms)", true
		case synced:
			return "WALMode: WALSync (group commit)", true
		}
		return "", false
	},
	open:              openBloomkv,
	indexOutsideCache: true,
	settingNotes: func(s *settings) []string {
		var notes []string
		if s.matched {
			notes = append(notes, "bloomkv: the shape settings above (its defaults before 2026-12-03: TargetFileSizeMultiplier 1, MaxOpenFiles 500) with dynamic level sizes (its default since 2026-12-05, as Pebble's) and snappy; WALMode per pairing")
		} else {
			notes = append(notes, "bloomkv: its defaults (dynamic level sizes: the last level about 90% of the data, level 0 compacting into the base level, whose target is kept within a factor sqrt(10) of LBaseMaxBytes 10 MiB; tables of TargetFileSize 2 MiB in the base level growing x2 per level below it, MaxOpenFiles half the descriptor limit, L0 compaction at 4 tables, snappy) except BlockSize, MemtableSize, BlockCacheSize, BloomBitsPerKey and WALMode")
		}
		if s.equalMemory {
			notes = append(notes, "bloomkv: CacheFilterBlocks from the fill on: tables whose index outgrows 2 KiB are written with partitioned index and filters (IndexPartitionSize's default with it), whose partitions and filter blocks are charged to its block cache (level 0 filters pinned in it); the cache is smaller by the index it keeps outside (top-level indexes of partitioned tables, whole index blocks of small ones): block cache + that index = -cache_size, as the peers' caches hold their filters and index")
		} else {
			notes = append(notes, "bloomkv: keeps each open table's index and filter blocks in memory outside its block cache (Pebble and goleveldb keep theirs in the cache): at the same -cache_size it holds more memory for reads (the memory table says how much)")
		}
		notes = append(notes, "bloomkv: reads open tables through read-only memory maps (a copy per block instead of a pread) and, write-through on 64-bit Linux, writes its log through a shared memory map (a copy per write instead of a write call); Options.DisableMmap turns both off; Pebble and goleveldb pread and write; mapped table pages count in its RSS (RssFile), not in the others'")
		notes = append(notes, "bloomkv: its idle compaction moves level-0 tables left below the threshold into the base level once no write has come for 1 s (IdleCompactionDelay); the settle's quiet period is longer, so it runs before the reads")
		if s.readCompactions {
			notes = append(notes, "bloomkv: read-triggered compactions on (its default), at most 32 MiB/s of compaction input")
		} else {
			notes = append(notes, "bloomkv: read-triggered compactions off (Options.DisableReadCompactions)")
		}
		if s.rowPrefix > 0 {
			notes = append(notes, fmt.Sprintf("bloomkv: rows: FilterKey = the first %d bytes, so filters hold rows only (FilterWholeKey off, as Pebble's hold only Split prefixes: an absent column of a present row costs a data block in both); SeekPrefixGE for the prefix workloads", s.rowPrefix))
		}
		return notes
	},
}

type bloomkvStore struct {
	dir string
	s   *settings
	d   durability
	db  *bloomkv.DB
}

func bloomkvOptions(s *settings, d durability, rp *readPhase) *bloomkv.Options {
	modes := map[durability]bloomkv.WALMode{
		writeThrough: bloomkv.WALWriteThrough,
		buffered:     bloomkv.WALBuffered,
		synced:       bloomkv.WALSync,
	}
	bits := s.bloomBits
	if bits <= 0 {
		bits = -1 // bloomkv: negative = no filter blocks
	}
	o := &bloomkv.Options{
		MemtableSize:    s.memtableSize,
		BlockSize:       s.blockSize,
		BloomBitsPerKey: bits,
		BlockCacheSize:  s.cacheSize,
		WALMode:         modes[d],
		// With equal memory bloomkv is configured, from the fill on, as
		// a user bounding its read memory would: filters (and index and
		// filter partitions, which that setting turns on) in the block
		// cache.
		CacheFilterBlocks:      s.cacheFilters || s.equalMemory,
		DisableReadCompactions: !s.readCompactions,
		Logger:                 slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if s.matched {
		o.Compression = bloomkv.SnappyCompression
		o.L0CompactionThreshold = s.l0Compaction
		o.L0SlowdownWritesThreshold = s.l0Slowdown
		o.L0StopWritesThreshold = s.l0Stop
		o.MaxImmutableMemtables = s.immutableMems
		o.LBaseMaxBytes = s.lBaseBytes
		o.LevelMultiplier = s.multiplier
		o.TargetFileSize = s.tableSize
		o.TargetFileSizeMultiplier = 1
		o.MaxOpenFiles = s.maxOpenFiles
	}
	if rp != nil {
		o.BlockCacheSize = rp.blockCache
		o.CacheFilterBlocks = o.CacheFilterBlocks || rp.cacheFilters
	}
	if n := s.rowPrefix; n > 0 {
		// Filters over rows only, as Pebble's over Comparer.Split prefixes.
		o.FilterKey = func(k []byte) []byte { return k[:min(n, len(k))] }
		o.FilterKeyName = fmt.Sprintf("row%d", n)
	}
	return o
}

func openBloomkv(dir string, s *settings, d durability) (store, error) {
	db, err := bloomkv.Open(dir, bloomkvOptions(s, d, nil))
	if err != nil {
		return nil, err
	}
	return &bloomkvStore{dir: dir, s: s, d: d, db: db}, nil
}

func (b *bloomkvStore) reopen(rp readPhase) error {
	if err := b.db.Close(); err != nil {
		return err
	}
	o := bloomkvOptions(b.s, b.d, &rp)
	// Reopen only to read: the tree is settled and flushed.
	o.ErrorIfNotExists = true
	db, err := bloomkv.Open(b.dir, o)
	if err != nil {
		return err
	}
	b.db = db
	return nil
}

func (b *bloomkvStore) put(key, value []byte) error { return b.db.Put(key, value) }

func (b *bloomkvStore) get(key, dst []byte) ([]byte, bool, error) {
	v, err := b.db.Get(key)
	if errors.Is(err, bloomkv.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	return v, true, nil // already a copy the caller owns
}

func (b *bloomkvStore) newIter() (storeIter, error) {
	it := b.db.NewIterator(nil)
	return &bloomkvIter{it: it}, it.Error()
}

func (b *bloomkvStore) flush() error { return b.db.Flush() }

// background waits for the compactions bloomkv knows are due
// (WaitForCompactions, which also finishes queued read-triggered ones) and
// then reports the tree: an idle compaction that starts later, once writes
// have paused for IdleCompactionDelay, changes it, and the settle's quiet
// period waits longer than that delay.
func (b *bloomkvStore) background() (any, bool) {
	if err := b.db.WaitForCompactions(); err != nil {
		return err.Error(), false
	}
	m := b.db.Metrics()
	return fmt.Sprint(m.Flushes, m.Compactions, b.shape().TablesPerLevel), true
}

func (b *bloomkvStore) compactAll() error { return b.db.Compact(nil, nil) }

func (b *bloomkvStore) shape() treeShape {
	m := b.db.Metrics()
	var sh treeShape
	for _, l := range m.Levels {
		sh.TablesPerLevel = append(sh.TablesPerLevel, int64(l.Files))
		sh.TableBytes += l.Bytes
	}
	return sh
}

func (b *bloomkvStore) counters() engineCounters {
	m := b.db.Metrics()
	return engineCounters{
		Compactions:     int64(m.Compactions),
		ReadCompactions: int64(m.ReadCompactions),
		CompactionBytes: int64(m.CompactionBytesWritten),
		BytesWritten:    int64(m.WALBytesWritten + m.FlushBytesWritten + m.CompactionBytesWritten),
		FilterBytes:     m.FilterBytes,
		IndexBytes:      m.IndexBytesResident,
		// Filters in memory less those charged to the block cache (with
		// CacheFilterBlocks: all of them), and every open table's index.
		OutsideCacheBytes: m.FilterBytesResident - m.FilterBytesCached - m.FilterBytesPinned + m.IndexBytesResident,
		BlockCacheBytes:   m.BlockCacheBytes,
	}
}

func (b *bloomkvStore) close() error { return b.db.Close() }

type bloomkvIter struct{ it *bloomkv.Iterator }

func (i *bloomkvIter) seekGE(key []byte) bool          { return i.it.SeekGE(key) }
func (i *bloomkvIter) seekPrefixGE(prefix []byte) bool { return i.it.SeekPrefixGE(prefix) }
func (i *bloomkvIter) next() bool                      { return i.it.Next() }
func (i *bloomkvIter) key() []byte                     { return i.it.Key() }
func (i *bloomkvIter) err() error                      { return i.it.Error() }
func (i *bloomkvIter) close() error                    { return i.it.Close() }
