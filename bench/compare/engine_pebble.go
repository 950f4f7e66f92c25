package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

var pebbleEngine = &engine{
	name:   "pebble",
	module: "github.com/cockroachdb/pebble/v2",
	mode: func(d durability) (string, bool) {
		switch d {
		case writeThrough:
			return "no write-through mode: with NoSync a write is in the log's memory buffer when Set returns and a background flusher hands it to the OS; with Sync it is fsynced", false
		case buffered:
			return "WriteOptions pebble.NoSync", true
		case synced:
			return "WriteOptions pebble.Sync (commit pipeline syncs groups)", true
		}
		return "", false
	},
	open: openPebble,
	settingNotes: func(s *settings) []string {
		notes := []string{
			fmt.Sprintf("pebble: CacheSize %s: Pebble charges its memtables (the mutable one and one kept for reuse) to the block cache, so %s are left for blocks as with the others (at CacheSize = %s no block stayed cached: 0 hits)",
				mib(pebbleCacheSize(s)), mib(s.cacheSize), mib(s.cacheSize)),
			"pebble: filters on every level (Levels[i].FilterPolicy = bloom.FilterPolicy(bits); its default is no filter on any level); its bloom filter keeps each key's probes in one 64-byte cache line",
			"pebble: snappy on every level (Levels[i].Compression; the default is snappy too)",
			fmt.Sprintf("pebble: LBaseMaxBytes %s (default 64 MiB); TargetFileSizes %s on every level (default doubles per level); MaxOpenFiles %d (default 1000); MemTableStopWritesThreshold %d memtables (one mutable + %d waiting, default 2)",
				mib(s.lBaseBytes), mib(s.tableSize), s.maxOpenFiles, s.immutableMems+1, s.immutableMems),
			"pebble: IndexBlockSize = MaxInt32, one index block per table like the others (the default partitions the index at BlockSize into a two-level index)",
			"pebble: DB.Get never reads the filters of L6 tables (only iterators with IterOptions.UseL6Filters do, file_cache.go), so an absent key that reaches L6 costs a data block there; the filters are still written",
			"pebble: FormatMajorVersion = FormatNewest (columnar blocks; the default is the oldest supported format); memtables start at 256 KiB and double up to MemTableSize; no write slowdown at a level-0 count, only the stop",
		}
		if s.noReadCompactions {
			notes = append(notes, "pebble: read-triggered compactions off (Experimental.ReadSamplingMultiplier = -1, -no_read_compactions)")
		} else {
			notes = append(notes, "pebble: read-triggered compactions on (its default, Experimental.ReadSamplingMultiplier 16), as in the other engines")
		}
		if s.rowPrefix > 0 {
			notes = append(notes, fmt.Sprintf("pebble: rows: Comparer.Split = the first %d bytes (filters hold those prefixes); iterators with IterOptions.UseL6Filters, SeekPrefixGE for the prefix workloads", s.rowPrefix))
		}
		return notes
	},
}

// pebbleCacheSize is the Pebble cache that leaves s.cacheSize for blocks:
// Pebble charges its memtables to the block cache, the mutable one and one
// kept for reuse after a flush (db.go, newMemTable), so with CacheSize = 8
// MiB and 4 MiB memtables no block would stay cached at all.
func pebbleCacheSize(s *settings) int64 { return s.cacheSize + 2*int64(s.memtableSize) }

type pebbleStore struct {
	db *pebble.DB
	wo *pebble.WriteOptions
}

// quietLogger drops Pebble's informational messages and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func openPebble(dir string, s *settings, d durability) (store, error) {
	wo := pebble.NoSync
	if d == synced {
		wo = pebble.Sync
	}
	o := &pebble.Options{
		CacheSize:                   pebbleCacheSize(s),
		MemTableSize:                uint64(s.memtableSize),
		MemTableStopWritesThreshold: s.immutableMems + 1,
		L0CompactionThreshold:       s.l0Compaction,
		L0StopWritesThreshold:       s.l0Stop,
		LBaseMaxBytes:               s.lBaseBytes,
		MaxOpenFiles:                s.maxOpenFiles,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      quietLogger{},
	}
	o.Experimental.LevelMultiplier = s.multiplier
	if s.noReadCompactions {
		o.Experimental.ReadSamplingMultiplier = -1
	}
	for i := range o.TargetFileSizes {
		o.TargetFileSizes[i] = s.tableSize
	}
	var policy pebble.FilterPolicy = pebble.NoFilterPolicy
	if s.bloomBits > 0 {
		policy = bloom.FilterPolicy(s.bloomBits)
	}
	for i := range o.Levels {
		l := &o.Levels[i]
		l.BlockSize = s.blockSize
		l.IndexBlockSize = math.MaxInt32
		l.Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
		l.FilterPolicy = policy
	}
	if n := s.rowPrefix; n > 0 {
		// Rows: the filters hold Split prefixes, and SeekPrefixGE seeks
		// them. Keys still compare bytewise (an 8-byte prefix, then the
		// column), so the default comparer's other functions stay valid.
		c := *pebble.DefaultComparer
		c.Split = func(k []byte) int { return min(n, len(k)) }
		c.Name = fmt.Sprintf("bloomkv-compare.row%d", n)
		o.Comparer = &c
	}
	db, err := pebble.Open(dir, o)
	if err != nil {
		return nil, err
	}
	return &pebbleStore{db: db, wo: wo}, nil
}

func (p *pebbleStore) put(key, value []byte) error { return p.db.Set(key, value, p.wo) }

func (p *pebbleStore) get(key, dst []byte) ([]byte, bool, error) {
	v, closer, err := p.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	// The value is valid until closer.Close: copy it, as a caller keeping
	// it would (bloomkv and goleveldb return copies).
	dst = append(dst[:0], v...)
	return dst, true, closer.Close()
}

func (p *pebbleStore) newIter() (storeIter, error) {
	// UseL6Filters: Pebble skips the filters of L6 tables in iterators
	// unless asked (and in Get always); SeekPrefixGE needs them.
	it, err := p.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return nil, err
	}
	return &pebbleIter{it: it}, nil
}

// settle flushes the memtables, then waits until no flush or compaction
// has run for settleQuiet: Pebble has no call that waits for compactions.
// After a flush or compaction completes Pebble schedules whatever is due at
// once, so a quiet spell with nothing in progress means the tree settled.
func (p *pebbleStore) settle() error {
	if err := p.db.Flush(); err != nil {
		return err
	}
	type reading struct{ flushes, compactions, inProgress int64 }
	read := func() reading {
		m := p.db.Metrics()
		return reading{m.Flush.Count, m.Compact.Count, m.Flush.NumInProgress + m.Compact.NumInProgress}
	}
	return waitQuiet(func() (any, bool) {
		r := read()
		return r, r.inProgress == 0
	})
}

func (p *pebbleStore) shape() treeShape {
	m := p.db.Metrics()
	var sh treeShape
	for _, l := range m.Levels {
		sh.TablesPerLevel = append(sh.TablesPerLevel, l.TablesCount)
		sh.TableBytes += l.TablesSize
	}
	return sh
}

func (p *pebbleStore) close() error { return p.db.Close() }

type pebbleIter struct{ it *pebble.Iterator }

func (i *pebbleIter) seekGE(key []byte) bool          { return i.it.SeekGE(key) }
func (i *pebbleIter) seekPrefixGE(prefix []byte) bool { return i.it.SeekPrefixGE(prefix) }
func (i *pebbleIter) next() bool                      { return i.it.Next() }
func (i *pebbleIter) key() []byte                     { return i.it.Key() }
func (i *pebbleIter) err() error                      { return i.it.Error() }
func (i *pebbleIter) close() error                    { return i.it.Close() }

// Settling peers that cannot be asked to wait: poll every settlePoll until
// settleQuiet has passed with the reading unchanged and idle. (Variables so
// that the smoke test can wait less.)
var (
	settlePoll    = 50 * time.Millisecond
	settleQuiet   = 300 * time.Millisecond
	settleTimeout = 10 * time.Minute
)

// waitQuiet polls read until it reports idle with the same (comparable)
// state for settleQuiet.
func waitQuiet(read func() (state any, idle bool)) error {
	deadline := time.Now().Add(settleTimeout)
	var last any
	var quietSince time.Time
	for {
		state, idle := read()
		switch {
		case !idle || state != last:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) >= settleQuiet:
			return nil
		}
		last = state
		if time.Now().After(deadline) {
			return fmt.Errorf("background work still running after %s", settleTimeout)
		}
		time.Sleep(settlePoll)
	}
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
