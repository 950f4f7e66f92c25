package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"

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
	open:         openPebble,
	settingNotes: pebbleNotes,
}

// pebbleL6Engine is Pebble answering each Get with an iterator's
// SeekPrefixGE, opened with IterOptions.UseL6Filters: Pebble's DB.Get never
// consults the filters of L6 tables, where most data lives, so an absent key
// costs it a data block there; this row shows what Pebble's filters do for
// absent keys when a reader asks for them. The whole key is the prefix (the
// default Comparer.Split), so the filters hold whole keys, as in the plain
// pebble row. Iterators are kept for reuse between Gets (opening one per Get
// would measure iterator construction): the reads run on a tree no write
// changes.
var pebbleL6Engine = &engine{
	name:   "pebble-l6",
	module: "github.com/cockroachdb/pebble/v2",
	mode:   pebbleEngine.mode,
	open: func(dir string, s *settings, d durability) (store, error) {
		st, err := openPebble(dir, s, d)
		if err == nil {
			st.(*pebbleStore).prefixGets = true
		}
		return st, err
	},
	settingNotes: func(s *settings) []string {
		return []string{"pebble-l6: Pebble as in the pebble row, but each Get is a SeekPrefixGE(key) on an iterator with IterOptions.UseL6Filters (iterators reused between Gets), so its filters are consulted on every level including L6"}
	},
}

func pebbleNotes(s *settings) []string {
	notes := []string{
		fmt.Sprintf("pebble: CacheSize %s while writing: Pebble charges its memtables (the mutable one and one kept for reuse) to the block cache, so %s are left for blocks as with the others; reopened for the reads with -cache_size + what its memtables reserve once reopened (measured: 768 KiB with 4 MiB memtables; the cache_reserved figure in the JSON)",
			mib(pebbleCacheSize(s)), mib(s.cacheSize)),
		"pebble: filters on every level (Levels[i].FilterPolicy = bloom.FilterPolicy(bits); its default is no filter on any level); its bloom filter keeps each key's probes in one 64-byte cache line; index and filter blocks go through its block cache",
		"pebble: DB.Get never reads the filters of L6 tables (only iterators with IterOptions.UseL6Filters do), so an absent key that reaches L6 costs a data block there; the filters are still written",
		"pebble: FormatMajorVersion = FormatNewest (columnar blocks), as a new store would choose; the default is the oldest supported format, kept for old stores",
	}
	if s.matched {
		notes = append(notes,
			"pebble: snappy on every level (Levels[i].Compression; the default is snappy too)",
			fmt.Sprintf("pebble: LBaseMaxBytes %s (default 64 MiB); TargetFileSizes %s on every level (default 2 MiB doubling per level); MaxOpenFiles %d (default 1000); MemTableStopWritesThreshold %d memtables; L0CompactionThreshold %d, L0StopWritesThreshold %d (no slowdown)",
				mib(s.lBaseBytes), mib(s.tableSize), s.maxOpenFiles, s.immutableMems+1, s.l0Compaction, s.l0Stop),
			"pebble: IndexBlockSize = MaxInt32, one index block per table like the others (the default partitions the index at 4 KiB into a two-level index)")
	} else {
		notes = append(notes, "pebble: its defaults otherwise (tables 2 MiB doubling per level, LBaseMaxBytes 64 MiB, dynamic base level, MaxOpenFiles 1000, two-level index past 4 KiB, snappy)")
	}
	if s.readCompactions {
		notes = append(notes, "pebble: read-triggered compactions on (its default, Experimental.ReadSamplingMultiplier 16); they never fire in these workloads: Pebble samples only iterators, reports the samples when one is closed, and the scan keeps one iterator for its whole run; Gets are never sampled")
	} else {
		notes = append(notes, "pebble: read-triggered compactions off (Experimental.ReadSamplingMultiplier = -1)")
	}
	if s.rowPrefix > 0 {
		notes = append(notes, fmt.Sprintf("pebble: rows: Comparer.Split = the first %d bytes (filters hold those prefixes); iterators with IterOptions.UseL6Filters, SeekPrefixGE for the prefix workloads", s.rowPrefix))
	}
	return notes
}

// pebbleCacheSize is the Pebble cache that leaves s.cacheSize for blocks
// while writing: Pebble charges its memtables to the block cache, the
// mutable one and one kept for reuse after a flush (db.go, newMemTable), so
// with CacheSize = 8 MiB and 4 MiB memtables no block would stay cached.
func pebbleCacheSize(s *settings) int64 { return s.cacheSize + 2*int64(s.memtableSize) }

// pebbleInitialMemTable is the memtable a freshly opened Pebble reserves
// in its cache (open.go, initialMemTableSize): the first guess of reopen.
const pebbleInitialMemTable = 256 << 10

type pebbleStore struct {
	dir string
	s   *settings
	d   durability
	db  *pebble.DB
	wo  *pebble.WriteOptions

	// wrote is set by put: only then does flush flush. A Pebble flush of
	// an empty memtable still rotates it, and the rotated one is kept for
	// reuse with its reservation in the block cache, which would shrink
	// the cache the reads were given.
	wrote atomic.Bool

	// prefixGets: get seeks an iterator with SeekPrefixGE (pebble-l6).
	prefixGets bool
	// iters are idle iterators for prefix gets, reused so that a Get does
	// not pay for building one; closed on reopen and close.
	itersMu sync.Mutex
	iters   []*pebble.Iterator
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

func pebbleOptions(s *settings, rp *readPhase) *pebble.Options {
	o := &pebble.Options{
		CacheSize:          pebbleCacheSize(s),
		MemTableSize:       uint64(s.memtableSize),
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
	}
	if !s.readCompactions {
		o.Experimental.ReadSamplingMultiplier = -1
	}
	var policy pebble.FilterPolicy = pebble.NoFilterPolicy
	if s.bloomBits > 0 {
		policy = bloom.FilterPolicy(s.bloomBits)
	}
	for i := range o.Levels {
		l := &o.Levels[i]
		l.BlockSize = s.blockSize
		l.FilterPolicy = policy
	}
	if s.matched {
		o.MemTableStopWritesThreshold = s.immutableMems + 1
		o.L0CompactionThreshold = s.l0Compaction
		o.L0StopWritesThreshold = s.l0Stop
		o.LBaseMaxBytes = s.lBaseBytes
		o.MaxOpenFiles = s.maxOpenFiles
		o.Experimental.LevelMultiplier = s.multiplier
		for i := range o.TargetFileSizes {
			o.TargetFileSizes[i] = s.tableSize
		}
		for i := range o.Levels {
			l := &o.Levels[i]
			l.IndexBlockSize = math.MaxInt32
			l.Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
		}
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
	return o
}

func openPebble(dir string, s *settings, d durability) (store, error) {
	wo := pebble.NoSync
	if d == synced {
		wo = pebble.Sync
	}
	db, err := pebble.Open(dir, pebbleOptions(s, nil))
	if err != nil {
		return nil, err
	}
	return &pebbleStore{dir: dir, s: s, d: d, db: db, wo: wo}, nil
}

// prefixGet answers a Get with SeekPrefixGE on an iterator that consults
// every level's filters (UseL6Filters).
func (p *pebbleStore) prefixGet(key, dst []byte) ([]byte, bool, error) {
	p.itersMu.Lock()
	var it *pebble.Iterator
	if n := len(p.iters); n > 0 {
		it, p.iters = p.iters[n-1], p.iters[:n-1]
	}
	p.itersMu.Unlock()
	if it == nil {
		var err error
		if it, err = p.db.NewIter(&pebble.IterOptions{UseL6Filters: true}); err != nil {
			return dst[:0], false, err
		}
	}
	found := it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key)
	dst = dst[:0]
	if found {
		dst = append(dst, it.Value()...)
	}
	if err := it.Error(); err != nil {
		it.Close()
		return dst, false, err
	}
	p.itersMu.Lock()
	p.iters = append(p.iters, it)
	p.itersMu.Unlock()
	return dst, found, nil
}

// closeIters closes the idle prefix-get iterators.
func (p *pebbleStore) closeIters() error {
	p.itersMu.Lock()
	defer p.itersMu.Unlock()
	var errs []error
	for _, it := range p.iters {
		errs = append(errs, it.Close())
	}
	p.iters = nil
	return errors.Join(errs...)
}

// reopen opens Pebble for the reads with a cache of rp.blockCache plus
// what its memtables reserve in it once open: a reopened Pebble reserves
// more than its one empty memtable (768 KiB, not 256 KiB, measured with 4
// MiB memtables), so the reservation is measured after a first open and the
// database opened again with the cache grown by it.
func (p *pebbleStore) reopen(rp readPhase) error {
	if err := p.closeIters(); err != nil {
		return err
	}
	reserved := int64(pebbleInitialMemTable)
	for range 2 {
		if err := p.db.Close(); err != nil {
			return err
		}
		o := pebbleOptions(p.s, &rp)
		o.CacheSize = rp.blockCache + reserved
		o.ErrorIfNotExists = true
		db, err := pebble.Open(p.dir, o)
		if err != nil {
			return err
		}
		p.db = db
		m := db.Metrics()
		now := int64(m.MemTable.Size + m.MemTable.ZombieSize)
		if now == reserved {
			return nil
		}
		reserved = now
	}
	return nil
}

func (p *pebbleStore) put(key, value []byte) error {
	if !p.wrote.Load() {
		p.wrote.Store(true)
	}
	return p.db.Set(key, value, p.wo)
}

func (p *pebbleStore) get(key, dst []byte) ([]byte, bool, error) {
	if p.prefixGets {
		return p.prefixGet(key, dst)
	}
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

func (p *pebbleStore) flush() error {
	if !p.wrote.Swap(false) {
		return nil
	}
	return p.db.Flush()
}

// background reports Pebble's flush and compaction counts: it has no call
// that waits for compactions, but it schedules whatever is due as soon as
// a flush or compaction completes, so a quiet spell with nothing in
// progress means the tree settled.
func (p *pebbleStore) background() (any, bool) {
	m := p.db.Metrics()
	type reading struct{ flushes, compactions int64 }
	return reading{m.Flush.Count, m.Compact.Count}, m.Flush.NumInProgress+m.Compact.NumInProgress == 0
}

// compactAll compacts every key: the keys are at most 1 KiB (-key_size), so
// 1025 bytes of 0xff lie above all of them.
func (p *pebbleStore) compactAll() error {
	return p.db.Compact(context.Background(), nil, bytes.Repeat([]byte{0xff}, 1025), true)
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

func (p *pebbleStore) counters() engineCounters {
	m := p.db.Metrics()
	t := m.Total()
	c := engineCounters{
		Compactions:     m.Compact.Count,
		ReadCompactions: m.Compact.ReadCount,
		CompactionBytes: int64(t.TableBytesCompacted),
		BytesWritten:    int64(m.WAL.BytesWritten + t.TableBytesFlushed + t.TableBytesCompacted),
		BlockCacheBytes: m.BlockCache.Size,
		// Memtables reserve their size in the block cache (the cache's
		// size does not count them; its capacity shrinks by them).
		CacheReserved: int64(m.MemTable.Size + m.MemTable.ZombieSize),
	}
	// Filter and index blocks live in the block cache: what they would
	// take there is their size in the tables' properties.
	levels, err := p.db.SSTables(pebble.WithProperties())
	if err != nil {
		return c
	}
	for _, tables := range levels {
		for _, t := range tables {
			if t.Properties != nil {
				c.FilterBytes += int64(t.Properties.FilterSize)
				c.IndexBytes += int64(t.Properties.IndexSize)
			}
		}
	}
	return c
}

func (p *pebbleStore) close() error {
	return errors.Join(p.closeIters(), p.db.Close())
}

type pebbleIter struct{ it *pebble.Iterator }

func (i *pebbleIter) seekGE(key []byte) bool          { return i.it.SeekGE(key) }
func (i *pebbleIter) seekPrefixGE(prefix []byte) bool { return i.it.SeekPrefixGE(prefix) }
func (i *pebbleIter) next() bool                      { return i.it.Next() }
func (i *pebbleIter) key() []byte                     { return i.it.Key() }
func (i *pebbleIter) err() error                      { return i.it.Error() }
func (i *pebbleIter) close() error                    { return i.it.Close() }

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
