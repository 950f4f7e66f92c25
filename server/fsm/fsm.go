package fsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv"
	"github.com/hashicorp/raft"
)

// Key space of the state database (see doc.go).
const (
	metaPrefix = 0x00
	userPrefix = 0x01
)

var (
	appliedKey    = []byte{metaPrefix, 'a'}
	nodeKeyPrefix = []byte{metaPrefix, 'n'}
)

// Options configure an FSM. The zero value means the defaults.
type Options struct {
	// DB are the options of the state database (nil: bloomkv's defaults).
	// Writes need no fsync: the raft log is the durable record, and the
	// state database only has to hold a prefix of it after a crash.
	DB *bloomkv.Options
	// FilterCacheBytes bounds the decoded filters kept in memory (default
	// 64 MiB). Filters are decoded from the database on a miss.
	FilterCacheBytes int
	// StringCacheBytes bounds the string values kept in memory for Get
	// (default 64 MiB, negative: none), counted with their keys and a
	// per-entry overhead. A Get that misses reads the database and puts
	// what it read; an applied write drops the key.
	StringCacheBytes int
	// MaxFilterBytes bounds one filter's size (default 32 MiB): a reserve
	// that would need more, or growth past it, is refused.
	MaxFilterBytes int
	// Logger gets what the state machine reports (default slog.Default()).
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.FilterCacheBytes <= 0 {
		r.FilterCacheBytes = 64 << 20
	}
	if r.StringCacheBytes == 0 {
		r.StringCacheBytes = 64 << 20
	}
	if r.MaxFilterBytes <= 0 {
		r.MaxFilterBytes = 32 << 20
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r
}

// FSM is the replicated key-value state machine: a raft.BatchingFSM whose
// state is a bloomkv database. Its read methods are safe to call from any
// goroutine, alongside raft's calls.
type FSM struct {
	dir  string  // constant after Open
	opts Options // constant after Open

	// stateMu guards cur and dbSeq: readers take the current handle under
	// it, Restore swaps it. No I/O under it.
	stateMu sync.Mutex
	cur     *handle
	dbSeq   int // number of the newest state directory

	applied atomic.Uint64 // index of the last applied log entry
	// appliedCh is closed and replaced whenever applied grows.
	appliedMu sync.Mutex
	appliedCh chan struct{}

	cache   filterCache // decoded filters
	strings stringCache // string values for Get; limit 0: off

	// The apply goroutine's scratch (raft calls ApplyBatch from one
	// goroutine): the batch each commit writes and the bytes of its keys
	// and string values, kept between commits so that a commit allocates
	// no per-key buffers and does not grow a new batch from 256 bytes
	// (issue 29: 15% of the bytes allocated under pipelined SETs).
	batch        bloomkv.Batch
	keyBuf, vBuf []byte

	restores, restoresSkipped, snapshots atomic.Uint64
	closed                               atomic.Bool
}

var _ raft.BatchingFSM = (*FSM)(nil)

// handle is one state database, counted so that Restore can swap in a new
// one while reads and snapshot streams still use the old one, which is
// closed (and, when replaced, removed) when the last of them lets go. The
// FSM holds one reference to the current handle until Close or a swap.
type handle struct {
	db      *bloomkv.DB  // constant after construction
	dir     string       // constant after construction
	logger  *slog.Logger // constant after construction
	refs    atomic.Int64
	done    atomic.Bool // dispose when refs reach zero
	replace atomic.Bool // and remove dir: a restore replaced this state
	once    sync.Once
	gone    chan struct{} // closed once disposed
}

func newHandle(db *bloomkv.DB, dir string, logger *slog.Logger) *handle {
	h := &handle{db: db, dir: dir, logger: logger, gone: make(chan struct{})}
	h.refs.Store(1)
	return h
}

func (h *handle) release() {
	if h.refs.Add(-1) == 0 && h.done.Load() {
		h.dispose()
	}
}

// retire drops the FSM's reference; removeDir also deletes the database.
func (h *handle) retire(removeDir bool) {
	h.replace.Store(removeDir)
	h.done.Store(true)
	h.release()
}

func (h *handle) dispose() {
	h.once.Do(func() {
		if err := h.db.Close(); err != nil && !errors.Is(err, bloomkv.ErrClosed) {
			h.logger.Error("bloomkv/fsm: closing a state database", "dir", h.dir, "err", err)
		}
		if h.replace.Load() {
			if err := os.RemoveAll(h.dir); err != nil {
				h.logger.Error("bloomkv/fsm: removing a replaced state database", "dir", h.dir, "err", err)
			}
		}
		close(h.gone)
	})
}

// acquire returns the current state database, which the caller releases.
func (f *FSM) acquire() (*handle, error) {
	f.stateMu.Lock()
	defer f.stateMu.Unlock()
	if f.cur == nil {
		return nil, bloomkv.ErrClosed
	}
	f.cur.refs.Add(1)
	return f.cur, nil
}

const currentFile = "CURRENT"

func dbDirName(seq int) string { return fmt.Sprintf("db-%06d", seq) }

// Open opens the state machine kept in dir, creating it when missing.
//
// The directory holds CURRENT, naming the state database in use, and that
// database (db-NNNNNN). Restore builds a new database beside it and
// switches CURRENT atomically; Open removes any other db-* directory, the
// leftover of a restore cut short.
func Open(dir string, o *Options) (*FSM, error) {
	opts := o.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bloomkv/fsm: %w", err)
	}
	f := &FSM{dir: dir, opts: opts, appliedCh: make(chan struct{})}
	f.cache.init(opts.FilterCacheBytes)
	f.strings.init(max(opts.StringCacheBytes, 0))
	name, err := os.ReadFile(filepath.Join(dir, currentFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		f.dbSeq = 1
		if err := writeCurrent(dir, dbDirName(1)); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("bloomkv/fsm: %w", err)
	default:
		cur := strings.TrimSpace(string(name))
		if _, err := fmt.Sscanf(cur, "db-%06d", &f.dbSeq); err != nil || dbDirName(f.dbSeq) != cur {
			return nil, fmt.Errorf("%w: bloomkv/fsm: %s names %q, not a state database", bloomkv.ErrCorruption, filepath.Join(dir, currentFile), cur)
		}
	}
	if err := f.removeStale(); err != nil {
		return nil, err
	}
	db, err := bloomkv.Open(filepath.Join(dir, dbDirName(f.dbSeq)), opts.DB)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/fsm: %w", err)
	}
	applied, err := readApplied(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	f.applied.Store(applied)
	f.cur = newHandle(db, filepath.Join(dir, dbDirName(f.dbSeq)), opts.Logger)
	return f, nil
}

// removeStale removes state directories other than the current one.
func (f *FSM) removeStale() error {
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return fmt.Errorf("bloomkv/fsm: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "db-") && e.Name() != dbDirName(f.dbSeq) {
			if err := os.RemoveAll(filepath.Join(f.dir, e.Name())); err != nil {
				return fmt.Errorf("bloomkv/fsm: removing a leftover state directory: %w", err)
			}
		}
	}
	return nil
}

// writeCurrent makes dir/CURRENT name name, atomically and durably.
func writeCurrent(dir, name string) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	fd, err := os.Create(tmp)
	if err == nil {
		_, err = io.WriteString(fd, name+"\n")
		if err == nil {
			err = fd.Sync()
		}
		if cerr := fd.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, currentFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("bloomkv/fsm: switching %s to %s: %w", currentFile, name, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func readApplied(db interface{ Get([]byte) ([]byte, error) }) (uint64, error) {
	v, err := db.Get(appliedKey)
	if errors.Is(err, bloomkv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bloomkv/fsm: reading the applied index: %w", err)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: bloomkv/fsm: applied index of %d bytes", bloomkv.ErrCorruption, len(v))
	}
	return binary.LittleEndian.Uint64(v), nil
}

// Close closes the state database, waiting for reads and snapshot
// streams that still use it.
func (f *FSM) Close() error {
	if f.closed.Swap(true) {
		return bloomkv.ErrClosed
	}
	f.stateMu.Lock()
	h := f.cur
	f.cur = nil
	f.stateMu.Unlock()
	h.retire(false)
	<-h.gone
	return nil
}

// Applied returns the index of the last log entry applied.
func (f *FSM) Applied() uint64 { return f.applied.Load() }

// setApplied publishes a new applied index and wakes WaitApplied.
func (f *FSM) setApplied(index uint64) {
	f.appliedMu.Lock()
	f.applied.Store(index)
	close(f.appliedCh)
	f.appliedCh = make(chan struct{})
	f.appliedMu.Unlock()
}

// WaitApplied returns once the entry at index has been applied, or ctx is
// done.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	for {
		f.appliedMu.Lock()
		ch := f.appliedCh
		done := f.applied.Load() >= index
		f.appliedMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Metrics counts what the state machine did since Open.
type Metrics struct {
	Applied         uint64 // index of the last applied entry
	Snapshots       uint64 // snapshots taken
	Restores        uint64 // snapshots restored (state replaced)
	RestoresSkipped uint64 // restores skipped: the state was already as new
	CachedFilters   int    // decoded filters in memory
	CachedBytes     int
	CachedStrings   int // string values in memory for Get
	CachedStrBytes  int // their bytes as counted against StringCacheBytes
}

// Metrics returns the counters.
func (f *FSM) Metrics() Metrics {
	n, b := f.cache.stats()
	sn, sb := f.strings.stats()
	return Metrics{
		Applied: f.applied.Load(), Snapshots: f.snapshots.Load(),
		Restores: f.restores.Load(), RestoresSkipped: f.restoresSkipped.Load(),
		CachedFilters: n, CachedBytes: b, CachedStrings: sn, CachedStrBytes: sb,
	}
}

// DBMetrics returns the state database's metrics.
func (f *FSM) DBMetrics() (bloomkv.Metrics, error) {
	h, err := f.acquire()
	if err != nil {
		return bloomkv.Metrics{}, err
	}
	defer h.release()
	return h.db.Metrics(), nil
}

// Apply applies one log entry (raft.FSM).
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed log entries in order, in one atomic write
// to the state database that also records the last entry's index: after a
// crash the state holds exactly the entries up to the recorded index, and
// entries at or below it are skipped when raft replays them. The result of
// each command entry is a *Result; other entries give nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	applied := f.applied.Load()
	h, err := f.acquire()
	if err != nil {
		panic(fmt.Sprintf("bloomkv/fsm: apply after Close: %v", err))
	}
	defer h.release()
	tx := newTx(f, h.db)
	last := applied
	for i, l := range logs {
		if l.Index <= applied {
			continue // replayed: its effect is already in the state
		}
		last = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		out[i] = tx.apply(l.Data)
	}
	if last == applied {
		return out
	}
	if err := tx.commit(last); err != nil {
		// The state database failed under a write: this node's state can
		// no longer follow the log. Stop here; a restart replays the log
		// from the last recorded index.
		panic(fmt.Sprintf("bloomkv/fsm: cannot apply log entries up to %d: %v", last, err))
	}
	f.setApplied(last)
	return out
}
