package bloomkv

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// The DB: its state, locks and counters, new memtables, writing one table
// (flushes and compactions share it), snapshots, Close, and the causes the
// engine names for the files it writes.

// DB is an open database. All methods are safe for concurrent use.
type DB struct {
	// Constant after Open.
	dirname    string
	opts       Options
	fs         vfs.FS
	dirLock    io.Closer
	blockCache *sstable.BlockCache // nil when disabled
	tableCache *sstable.TableCache
	// events delivers EventListener callbacks and logs (events.go).
	events *events
	// dbID is the database identity, written into every table.
	dbID []byte

	counters dbCounters
	// filterStats caches each live table's filterStats (fileNum -> value);
	// entries go when the table's file is deleted.
	filterStats sync.Map
	// filterPolicy decides each new table's filter from the tree
	// (filterpolicy.go); built from opts at Open.
	filterPolicy *tablePolicy

	closed atomic.Bool
	// closing tells background work to stop early.
	closing atomic.Bool
	// openIters counts iterators not yet closed, for Close to report.
	openIters atomic.Int64

	// readState is the published read state (see loadReadState); replaced
	// under mu, loaded without any lock.
	readState atomic.Pointer[readState]
	// reads spread the point-lookup counters over cache lines (get.go).
	reads readShards
	// tf is the tree-wide filter's state (treefilter.go).
	tf treeFilterState

	// versions is the one owner of the tree's state: the current version
	// and the references readers hold on versions, the sequence numbers
	// (last assigned, visible to reads, synced), file numbers and their
	// reservation in the manifest, compact pointers, and the manifest
	// itself. The DB keeps no copy; it asks. Two of the DB's locks guard
	// it (see manifest.VersionSet, "Locks"): manifestMu its manifest and
	// durable state, mu its in-memory state. The pointer is constant after
	// Open.
	versions *manifest.VersionSet

	// manifestMu, "the manifest lock", serializes version edits: one
	// logAndApply at a time, from reading the base version to installing
	// the new one. It guards the manifest side of versions. Taken before
	// mu.
	manifestMu sync.Mutex
	// obsoleteMu makes file collection one deleter: held by
	// deleteObsoleteFiles from its snapshot of live files to its last
	// removal, so that two collections (the background loop's and a
	// manual Compact's, say) never list the same obsolete file and both
	// remove it. Taken before mu and manifestMu.
	obsoleteMu sync.Mutex

	// mu, "the state lock", guards the fields below and the in-memory state
	// of versions (current version, last and synced sequences, file
	// numbers, compact pointers).
	mu struct {
		sync.Mutex
		// bgCond is broadcast whenever background work finishes, a write
		// stall may be over, or work is scheduled.
		bgCond sync.Cond

		writers []*writer // write queue; writers[0] is the leader
		// groupWait: leaders of synced groups waiting for writers to come
		// back (write.go: "Gathering synced writers").
		groupWait groupWait

		mem *memTable
		imm []*memTable // oldest first, waiting to be flushed
		log *wal.Writer

		snapshots list.List // of *Snapshot, oldest first

		bgErr           error
		flushing        bool
		compacting      bool
		obsoletePending bool
		manualWaiting   int
		flushedMemID    uint64              // ids of memtables flushed so far
		nextMemID       uint64              // id of the next memtable made
		pendingOutputs  map[uint64]struct{} // files being written
		// flushPaused (a test hook) keeps immutable memtables unflushed.
		flushPaused bool
		// idle: the timer that compacts level 0 once writes pause
		// (compaction_triggers.go).
		idle idleState
		// readCompactions: tables reads paid for often enough to merge
		// into the level below, oldest first (compaction_triggers.go).
		readCompactions []readCandidate
		readQuiet       readQuietState
	}
	bgWG sync.WaitGroup
}

// memTable is a memtable with the number of the log that holds its writes.
type memTable struct {
	*memtable.Memtable
	logNum uint64
	id     uint64
	// lastSeq is the last sequence of its writes, set when it is made
	// immutable (no write joins it after that). Its writes are the
	// sequences after the previous memtable's lastSeq up to this one.
	lastSeq uint64
}

func (db *DB) newMemTableLocked(logNum uint64) *memTable {
	db.mu.nextMemID++
	mt := memtable.NewWithFilter(int(db.opts.MemtableFilterRatio*float64(db.opts.MemtableSize)), db.opts.FilterKey)
	return &memTable{Memtable: mt, logNum: logNum, id: db.mu.nextMemID}
}

func (db *DB) path(t base.FileType, num uint64) string {
	return db.fs.PathJoin(db.dirname, base.MakeFilename(t, num))
}

// Close waits for running background work to stop, syncs the write-ahead
// log and releases the directory. Later calls on db return ErrClosed. It
// closes the database even when iterators or snapshots are still open,
// but then returns an error wrapping ErrLeaked that counts them: each was
// a leak of memory and of table files kept from deletion, and its later
// calls return ErrClosed.
func (db *DB) Close() error {
	leaked := db.leaked()
	var flushErr error
	if db.opts.WALMode == WALDisabled && !db.opts.ReadOnly && !db.closed.Load() {
		// No log holds the memtable's writes: flush them, so that a clean
		// Close loses nothing.
		flushErr = db.flush()
	}
	if !db.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	db.closing.Store(true)
	db.mu.Lock()
	db.mu.bgCond.Broadcast()
	for len(db.mu.writers) > 0 {
		db.mu.bgCond.Wait()
	}
	db.mu.Unlock()
	db.bgWG.Wait()

	db.mu.Lock()
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	logSynced := false
	if db.mu.log != nil && db.mu.bgErr == nil {
		err := db.mu.log.Seal()
		keep(err)
		if logSynced = err == nil && db.opts.WALMode != WALDisabled; logSynced {
			db.versions.MarkSynced(db.versions.LastSeq())
		}
	}
	if db.mu.log != nil {
		keep(db.mu.log.Close())
		db.mu.log = nil
	}
	db.mu.Unlock()
	db.manifestMu.Lock()
	if logSynced {
		// Record that every write is durable, so that a later Open can tell
		// a log deleted or cut short from one that was never written.
		keep(db.logAndApply(&manifest.VersionEdit{}, causeClose))
	}
	db.closeTreeFilter() // treefilter.go: save it for the next Open
	db.manifestMu.Unlock()
	if !db.opts.ReadOnly {
		// Background work has stopped, and it may not have collected what
		// the last flushes and compactions made obsolete: logs whose writes
		// are all in tables, tables compacted away, a manifest a roll
		// replaced. Left behind, they cost space until the next Open, and
		// without a manifest kvtool repair cannot tell them from live data.
		db.deleteObsoleteFiles(false)
	}
	db.manifestMu.Lock()
	keep(db.versions.Close())
	db.manifestMu.Unlock()
	keep(db.tableCache.Close())
	keep(db.dirLock.Close())
	// Last: every event of this DB's life is delivered before Close returns.
	db.events.stop()
	if firstErr == nil && flushErr != nil && !errors.Is(flushErr, ErrClosed) {
		firstErr = flushErr
	}
	if leaked != nil {
		firstErr = errors.Join(firstErr, leaked)
	}
	if firstErr != nil {
		return fmt.Errorf("bloomkv: close %s: %w", db.dirname, firstErr)
	}
	return nil
}

// defaultIndexPartitionSize is Options.IndexPartitionSize's default with
// CacheFilterBlocks.
const defaultIndexPartitionSize = 2 << 10

// indexPartitionSize returns the index partition size new tables are
// written with (0: whole index and filter blocks); see
// Options.IndexPartitionSize.
func (o *Options) indexPartitionSize() int {
	switch {
	case o.IndexPartitionSize > 0:
		return o.IndexPartitionSize
	case o.IndexPartitionSize == 0 && o.CacheFilterBlocks:
		return defaultIndexPartitionSize
	}
	return 0
}

// sstWriterOptions returns the options every new table is written with:
// the current filter settings, so compaction rebuilds filters with them,
// the compression of the level it is written to, and filterBits, the
// policy's bits per key for the table's level (0 = no filter; see
// filterpolicy.go).
func (db *DB) sstWriterOptions(fileNum uint64, level int, filterBits float64) sstable.WriterOptions {
	o := sstable.WriterOptions{
		BlockSize:             db.opts.BlockSize,
		IndexPartitionSize:    db.opts.indexPartitionSize(),
		Compression:           db.opts.compressionAt(level),
		BloomBitsPerKey:       max(0, db.opts.BloomBitsPerKey),
		FilterKey:             db.opts.FilterKey,
		FilterKeyName:         db.opts.FilterKeyName,
		FilterWholeKey:        db.opts.FilterWholeKey,
		FilterVariant:         db.opts.FilterVariant,
		RangeFilterBitsPerKey: db.opts.RangeFilterBitsPerKey,
		FileNum:               fileNum,
		DBID:                  db.dbID,
	}
	switch {
	case filterBits == 0:
		o.BloomBitsPerKey = 0
	case db.opts.fractionalFilterBits() || filterBits != db.opts.filterBitsPerKey():
		o.FilterBitsPerKey = filterBits
	}
	return o
}

// writeTable writes the entries of it (internal keys in order; keys of
// them) and the range tombstones rd to level-0 table num. It returns nil
// metadata when it holds neither (no file is left), and with
// Options.TreeFilter the keys for the tree filter (treefilter_update.go).
func (db *DB) writeTable(num uint64, it base.InternalIterator, keys int, rd *rangedel.List, cause writeCause) (*manifest.FileMetadata, *tfKeys, error) {
	db.hookBeforeTable(num, cause)
	name := db.path(base.FileTypeTable, num)
	f, err := db.fs.Create(name)
	if err != nil {
		return nil, nil, fmt.Errorf("bloomkv: create table %s: %w", name, err)
	}
	db.counters.lastFlushKeys.Store(uint64(keys))
	// Flushes and recovery write level 0.
	w := sstable.NewWriter(f, db.sstWriterOptions(num, 0, db.policyFilterBits(0, float64(keys))))
	w.SetRangeDels(rd.Spans())
	n := rd.Len()
	var tfc *tfCapture
	if db.capturingTreeFilter() {
		tfc = &tfCapture{keys: tfKeys{hashes: make([]uint64, 0, keys), rangeDels: n > 0}}
	}
	for ok := it.First(); ok; ok = it.Next() {
		if tfc != nil {
			tfc.add(base.UserKey(it.Key()))
		}
		if err := w.Add(it.Key(), it.Value()); err != nil {
			_ = w.Abort()
			_ = db.fs.Remove(name)
			return nil, nil, fmt.Errorf("bloomkv: write table %s: %w", name, err)
		}
		n++
	}
	if err := it.Error(); err != nil {
		_ = w.Abort()
		_ = db.fs.Remove(name)
		return nil, nil, err
	}
	meta, err := w.Finish()
	if err != nil {
		_ = db.fs.Remove(name)
		return nil, nil, fmt.Errorf("bloomkv: finish table %s: %w", name, err)
	}
	if n == 0 {
		_ = db.fs.Remove(name)
		return nil, nil, nil
	}
	db.events.tableCreated(TableCreateInfo{Reason: cause.String(), Path: name, FileNum: num, Size: meta.Size})
	if tfc == nil {
		return metaFromWriter(num, meta), nil, nil
	}
	return metaFromWriter(num, meta), &tfc.keys, nil
}

func metaFromWriter(num uint64, m sstable.WriterMeta) *manifest.FileMetadata {
	return &manifest.FileMetadata{
		FileNum:     num,
		Size:        m.Size,
		Smallest:    m.Smallest,
		Largest:     m.Largest,
		SmallestSeq: m.SmallestSeq,
		LargestSeq:  m.LargestSeq,
	}
}

// Snapshot is a fixed point in time: its Get and iterators see exactly the
// writes acknowledged before NewSnapshot returned. While it is open,
// compaction keeps the versions it can see. Close it when done.
type Snapshot struct {
	db     *DB
	seq    uint64
	elem   *list.Element
	closed atomic.Bool
}

// NewSnapshot pins the current point in time. After Close of the DB it
// returns a snapshot whose Get reports ErrClosed.
func (db *DB) NewSnapshot() *Snapshot {
	s := &Snapshot{db: db}
	if db.closed.Load() {
		s.closed.Store(true)
		return s
	}
	db.mu.Lock()
	s.seq = db.versions.VisibleSeq()
	s.elem = db.mu.snapshots.PushBack(s)
	db.mu.Unlock()
	return s
}

// Get returns a copy of key's value as of the snapshot, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.closed.Load() || s.db.closed.Load() {
		return nil, ErrClosed
	}
	return s.db.get(key, s.seq)
}

// NewIterator returns an iterator over the snapshot's point in time.
func (s *Snapshot) NewIterator(o *IterOptions) *Iterator {
	if s.closed.Load() || s.db.closed.Load() {
		return &Iterator{err: ErrClosed}
	}
	return s.db.newIterator(o, s.seq)
}

// Close releases the snapshot; a second Close returns ErrClosed.
func (s *Snapshot) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	s.db.mu.Lock()
	s.db.mu.snapshots.Remove(s.elem)
	s.db.mu.Unlock()
	return nil
}

// snapshotSeqs returns the sequence numbers of open snapshots, ascending.
func (db *DB) snapshotSeqs() []uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	seqs := make([]uint64, 0, db.mu.snapshots.Len())
	for e := db.mu.snapshots.Front(); e != nil; e = e.Next() {
		seqs = append(seqs, e.Value.(*Snapshot).seq)
	}
	return seqs
}

// writeCause says on whose behalf the engine writes a table or a manifest
// edit. Test hooks use it to attribute file-system operations to a part of
// the engine (a flush, a compaction, ...) without guessing.
type writeCause int

const (
	causeRecovery   writeCause = iota // Open replaying logs, starting a manifest
	causeFlush                        // a memtable flush
	causeCompaction                   // a compaction or a trivial move
	causeLogSwitch                    // a memtable switch starting a new log
	causeClose                        // Close recording that every write is durable
)

func (c writeCause) String() string {
	switch c {
	case causeRecovery:
		return "recovery"
	case causeFlush:
		return "flush"
	case causeCompaction:
		return "compaction"
	case causeLogSwitch:
		return "log switch"
	case causeClose:
		return "close"
	}
	return "unknown"
}

// testHooks lets tests see which part of the engine does what. Production
// code leaves Options.testHooks nil; every call site checks.
type testHooks struct {
	// beforeTable is called before a table file is created.
	beforeTable func(fileNum uint64, cause writeCause)
	// beforeEdit is called with manifestMu held before the version set
	// writes a manifest edit or snapshot: every manifest, CURRENT and
	// directory-sync operation until the next call is on behalf of cause.
	beforeEdit func(cause writeCause)
}

func (db *DB) hookBeforeTable(fileNum uint64, cause writeCause) {
	if h := db.opts.testHooks; h != nil && h.beforeTable != nil {
		h.beforeTable(fileNum, cause)
	}
}

// REQUIRES: manifestMu held.
func (db *DB) hookBeforeEdit(cause writeCause) {
	if h := db.opts.testHooks; h != nil && h.beforeEdit != nil {
		h.beforeEdit(cause)
	}
}

// dbCounters are the DB's own atomics (the SSTable reader keeps the
// per-block ones in sstable.ReadStats).
type dbCounters struct {
	flushes, compactions, idleCompactions        atomic.Uint64
	readCompactions                              atomic.Uint64
	writeStalls, writeStallNanos, writeSlowdowns atomic.Uint64
	userBytes, walBytes, flushBytes              atomic.Uint64
	walRecords, walSyncs                         atomic.Uint64
	walRecoveryDroppedBytes                      atomic.Uint64
	rangeDeletions                               atomic.Uint64
	levelCompIn, levelCompOut, levelCompactions  [manifest.NumLevels]atomic.Uint64
	lastFlushKeys                                atomic.Uint64 // entries of the last level-0 table written
}
