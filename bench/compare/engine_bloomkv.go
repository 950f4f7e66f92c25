package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

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
	open: openBloomkv,
	settingNotes: func(s *settings) []string {
		notes := []string{
			"bloomkv: every setting is its default except WALMode; it keeps each open table's index and filter blocks in memory outside the block cache (Pebble and goleveldb keep theirs in the cache)",
			"bloomkv: reads open tables through read-only memory maps (a copy per block instead of a pread) and, write-through on 64-bit Linux, writes its log through a shared memory map (a copy per write instead of a write call); Options.DisableMmap turns both off; Pebble and goleveldb pread and write",
			"bloomkv: to settle, Flush and WaitForCompactions, then wait until its idle compaction (IdleCompactionDelay, 1 s after the last write) has moved level 0 into level 1",
		}
		if s.noReadCompactions {
			notes = append(notes, "bloomkv: read-triggered compactions off (Options.DisableReadCompactions, -no_read_compactions)")
		} else {
			notes = append(notes, "bloomkv: read-triggered compactions on (its default: Options.DisableReadCompactions false), as in the other engines")
		}
		if s.rowPrefix > 0 {
			notes = append(notes, fmt.Sprintf("bloomkv: rows: FilterKey = the first %d bytes, so filters hold rows only (FilterWholeKey off, as Pebble's hold only Split prefixes: an absent column of a present row costs a data block in both); SeekPrefixGE for the prefix workloads", s.rowPrefix))
		}
		return notes
	},
}

type bloomkvStore struct{ db *bloomkv.DB }

func openBloomkv(dir string, s *settings, d durability) (store, error) {
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
		MemtableSize:              s.memtableSize,
		BlockSize:                 s.blockSize,
		Compression:               bloomkv.SnappyCompression,
		BloomBitsPerKey:           bits,
		BlockCacheSize:            s.cacheSize,
		WALMode:                   modes[d],
		L0CompactionThreshold:     s.l0Compaction,
		L0SlowdownWritesThreshold: s.l0Slowdown,
		L0StopWritesThreshold:     s.l0Stop,
		MaxImmutableMemtables:     s.immutableMems,
		LBaseMaxBytes:             s.lBaseBytes,
		LevelMultiplier:           s.multiplier,
		TargetFileSize:            s.tableSize,
		MaxOpenFiles:              s.maxOpenFiles,
		CacheFilterBlocks:         s.cacheFilters,
		DisableReadCompactions:    s.noReadCompactions,
		Logger:                    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if n := s.rowPrefix; n > 0 {
		// Filters over rows only, as Pebble's over Comparer.Split prefixes.
		o.FilterKey = func(k []byte) []byte { return k[:min(n, len(k))] }
		o.FilterKeyName = fmt.Sprintf("row%d", n)
	}
	db, err := bloomkv.Open(dir, o)
	if err != nil {
		return nil, err
	}
	return &bloomkvStore{db: db}, nil
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

func (b *bloomkvStore) settle() error {
	if err := b.db.Flush(); err != nil {
		return err
	}
	if err := b.db.WaitForCompactions(); err != nil {
		return err
	}
	// Level-0 tables left below the compaction threshold are compacted
	// into level 1 once no write has come for IdleCompactionDelay (1 s by
	// default): wait for that too, as a reader arriving a second after the
	// fill would find it done.
	deadline := time.Now().Add(30 * time.Second)
	for b.db.Metrics().Levels[0].Files > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return b.db.WaitForCompactions()
}

func (b *bloomkvStore) shape() treeShape {
	m := b.db.Metrics()
	var sh treeShape
	for _, l := range m.Levels {
		sh.TablesPerLevel = append(sh.TablesPerLevel, int64(l.Files))
		sh.TableBytes += l.Bytes
	}
	// Filters in memory less those charged to the block cache (with
	// -bloomkv_cache_filters: all of them).
	sh.OutsideCacheBytes = m.FilterBytesResident - m.FilterBytesCached - m.FilterBytesPinned
	return sh
}

func (b *bloomkvStore) close() error { return b.db.Close() }

type bloomkvIter struct{ it *bloomkv.Iterator }

func (i *bloomkvIter) seekGE(key []byte) bool          { return i.it.SeekGE(key) }
func (i *bloomkvIter) seekPrefixGE(prefix []byte) bool { return i.it.SeekPrefixGE(prefix) }
func (i *bloomkvIter) next() bool                      { return i.it.Next() }
func (i *bloomkvIter) key() []byte                     { return i.it.Key() }
func (i *bloomkvIter) err() error                      { return i.it.Error() }
func (i *bloomkvIter) close() error                    { return i.it.Close() }
