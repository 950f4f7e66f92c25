package bloomkv

// The DB's tree-wide filter (Options.TreeFilter): its state and metrics,
// the filter Open loads or builds, Close saves, and Get asks. The filter
// itself, its level code and its saved form (the TREEFILTER file) are
// internal/treefilter; keeping it up with the tree is treefilter_update.go.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/internal/treefilter"
	"github.com/dustin/go-humanize"
)

// treeFilter is the filter of v, the version whose tables it describes.
// Immutable once published (attached to v: a Get reads it without a
// lock); a copy shares the buckets (for a version with the same tables).
type treeFilter struct {
	treefilter.Filter
	v *manifest.Version
}

// clone returns an unpublished copy, for nv, to change.
func (t *treeFilter) clone(nv *manifest.Version) *treeFilter {
	return &treeFilter{Filter: *t.Clone(), v: nv}
}

// errTreeFilterClosing stops a filter update when Close begins.
var errTreeFilterClosing = errors.New("bloomkv: tree filter: closing")

// treeFilterState is the DB's tree-filter bookkeeping.
type treeFilterState struct {
	// latest is the filter of the current version, or nil when it has
	// none (yet). Guarded by manifestMu.
	latest *treeFilter
	// running is set while the maintainer goroutine runs. Guarded by
	// manifestMu.
	running bool
	// base is the maintainer's last filter and baseV the version it
	// describes, referenced. Owned by the maintainer while running, else
	// guarded by manifestMu.
	base  *treeFilter
	baseV *manifest.Version
	// broken is set when a table could not be read to keep the filter up
	// to date: Gets then use the per-table filters until a reopen.
	broken atomic.Bool
	rng    uint64 // the cuckoo kicks' generator; the maintainer's

	// Counters, per P (like readShards).
	probes    pslot.Counter // Gets that asked the tree filter
	negatives pslot.Counter // of those, answered "absent" with no table read
	ambiguous pslot.Counter // of those, naming more than one level
	// Maintenance, atomic so that Metrics takes no lock (it may be
	// called from an event listener).
	rebuilds    atomic.Uint64
	rebuildTime atomic.Int64  // nanoseconds
	updateTime  atomic.Int64  // nanoseconds
	tablesRead  atomic.Uint64 // tables scanned for their keys (builds and updates)
	// Tables (and their bytes) updates read back because their keys were
	// not handed over (treefilter_update.go): 0 unless a capture failed.
	updateTablesRead, updateBytesRead atomic.Uint64
	// Moved tables read back to re-tag them (retagOverlappedMoves).
	retagTablesRead, retagBytesRead atomic.Uint64

	// The keys table writers and compactions handed over, by file number,
	// not yet taken by the maintainer (treefilter_update.go).
	stagedMu       sync.Mutex // guards added and removed; a leaf lock
	added, removed map[uint64]*tfKeys
	// Saved copies (the TREEFILTER file) Open adopted, and rejected as damaged.
	loaded, rejected atomic.Uint64
}

// TreeFilterMetrics describes the tree-wide filter (Options.TreeFilter).
type TreeFilterMetrics struct {
	Enabled bool // the option is on (and the filter not broken)
	// Lagging says the current version has no filter yet: the maintainer
	// is catching up, and Gets use the per-table filters meanwhile. The
	// shape below is then zero.
	Lagging bool
	Bytes   int64 // memory of the current version's filter
	Entries uint64
	// Capacity is its slots; Entries / Capacity is its load.
	Capacity uint64
	// FPRTheory is the chance an absent key matches some entry at the
	// current load.
	FPRTheory float64
	// Probes counts the Gets (not answered by a memtable) that asked the
	// filter; Negatives those it answered "absent" without reading a
	// table; Ambiguous those whose key matched entries of several levels.
	Probes, Negatives, Ambiguous uint64
	// Rebuilds counts whole builds from the tables (Open, growth, or an
	// update that could not be applied); TablesRead the tables scanned for
	// their keys by builds and updates; BuildTime and UpdateTime the time
	// spent on each.
	Rebuilds              uint64
	TablesRead            uint64
	BuildTime, UpdateTime time.Duration
	// UpdateTablesRead and UpdateBytesRead count the tables (and their
	// bytes) updates read back for keys their writers did not hand over:
	// 0 unless a capture was incomplete (flushes and compactions hand the
	// filter the keys they write and read; treefilter_update.go).
	UpdateTablesRead, UpdateBytesRead uint64
	// RetagTablesRead and RetagBytesRead count the tables moved down a
	// level unchanged (their entries carry the level they left) that
	// were read back because a table carrying the same level came to
	// overlap them: else a present Get in the overlap would read both.
	RetagTablesRead, RetagBytesRead uint64
	// Loaded counts saved copies Open adopted instead of a build (at
	// most 1 since Open); Rejected those it found damaged (checksum or
	// shape: it rebuilt instead).
	Loaded, Rejected uint64
}

// sub returns m - earlier for the counters.
func (m TreeFilterMetrics) sub(earlier TreeFilterMetrics) TreeFilterMetrics {
	m.Probes -= earlier.Probes
	m.Negatives -= earlier.Negatives
	m.Ambiguous -= earlier.Ambiguous
	m.Rebuilds -= earlier.Rebuilds
	m.TablesRead -= earlier.TablesRead
	m.UpdateTablesRead -= earlier.UpdateTablesRead
	m.UpdateBytesRead -= earlier.UpdateBytesRead
	m.RetagTablesRead -= earlier.RetagTablesRead
	m.RetagBytesRead -= earlier.RetagBytesRead
	m.BuildTime -= earlier.BuildTime
	m.UpdateTime -= earlier.UpdateTime
	return m
}

// writeTo adds the tree filter's line to Metrics.String, when it is on.
func (m TreeFilterMetrics) writeTo(sb *strings.Builder) {
	if !m.Enabled {
		return
	}
	load := 0.0
	if m.Capacity > 0 {
		load = float64(m.Entries) / float64(m.Capacity)
	}
	lag := ""
	if m.Lagging {
		lag = " (the current version's is being made)"
	}
	fmt.Fprintf(sb, "tree filter%s: %s for %d entries (load %.1f%%, FP theory %.4f%%); %d probes, %d negatives, %d ambiguous; %d builds (%s), %d tables read, updates %s (%d tables read back, %d moved tables re-tagged)\n",
		lag, humanize.IBytes(uint64(m.Bytes)), m.Entries, 100*load, 100*m.FPRTheory, m.Probes, m.Negatives, m.Ambiguous,
		m.Rebuilds, m.BuildTime.Round(time.Millisecond), m.TablesRead, m.UpdateTime.Round(time.Millisecond), m.UpdateTablesRead, m.RetagTablesRead)
}

// treeFilterMetrics reads the counters and the shape of t, the filter of
// the version Metrics reads.
func (db *DB) treeFilterMetrics(t *treeFilter) TreeFilterMetrics {
	st := &db.tf
	if !db.opts.TreeFilter || db.opts.IgnoreFilters || st.broken.Load() {
		return TreeFilterMetrics{}
	}
	m := TreeFilterMetrics{
		Enabled:   true,
		Lagging:   t == nil,
		Probes:    uint64(st.probes.Sum()),
		Negatives: uint64(st.negatives.Sum()),
		Ambiguous: uint64(st.ambiguous.Sum()),
	}
	m.Rebuilds, m.TablesRead = st.rebuilds.Load(), st.tablesRead.Load()
	m.UpdateTablesRead, m.UpdateBytesRead = st.updateTablesRead.Load(), st.updateBytesRead.Load()
	m.RetagTablesRead, m.RetagBytesRead = st.retagTablesRead.Load(), st.retagBytesRead.Load()
	m.Loaded, m.Rejected = st.loaded.Load(), st.rejected.Load()
	m.BuildTime = time.Duration(st.rebuildTime.Load())
	m.UpdateTime = time.Duration(st.updateTime.Load())
	if t != nil {
		m.Bytes = t.Memory()
		m.Entries = uint64(t.Entries())
		m.Capacity = uint64(t.Capacity())
		m.FPRTheory = t.FPRTheory()
	}
	return m
}

// initTreeFilter loads or builds the filter of v, the version Open
// recovered, and attaches it. REQUIRES: Open, before any read or version
// edit.
func (db *DB) initTreeFilter(v *manifest.Version) {
	if !db.opts.TreeFilter {
		return
	}
	st := &db.tf
	st.probes.Init()
	st.negatives.Init()
	st.ambiguous.Init()
	st.rng = 0x2545f4914f6cdd1d
	if db.opts.IgnoreFilters {
		return // reads consult no filter; Metrics report it off
	}
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()
	t := db.loadTreeFilter(v) // the saved copy, if it describes v
	if t == nil {
		var err error
		if t, err = db.buildTreeFilter(v, treefilter.OpenLoad); err != nil {
			db.breakTreeFilter(err)
			return
		}
	}
	v.Ref()
	st.base, st.baseV, st.latest = t, v, t
	setTreeFilter(v, t)
}

// breakTreeFilter turns the filter off until a reopen: a table it needed
// could not be read. Reads then use the per-table filters, which never
// depended on it.
func (db *DB) breakTreeFilter(err error) {
	db.opts.Logger.Warn("bloomkv: tree filter off until reopen: a table could not be read", "error", err)
	db.tf.broken.Store(true)
}

// closeTreeFilter saves the current version's filter for the next Open
// and drops the maintainer's version reference.
// REQUIRES: manifestMu held, background work stopped (Close).
func (db *DB) closeTreeFilter() {
	st := &db.tf
	t := st.latest
	if t == nil && st.base != nil && !st.broken.Load() && !db.opts.ReadOnly {
		// The maintainer stopped behind (a flush just before Close, say):
		// catch up here when no rebuild is needed, so the next Open can
		// load the filter instead of reading every table.
		db.mu.Lock()
		cur := db.versions.Current()
		db.mu.Unlock()
		removed, added := treefilter.Diff(st.base.v, cur)
		keys := db.takeTreeFilterKeys(removed, added)
		if db.treeFilterFits(st.base, removed, added, keys) {
			c := st.base.clone(cur)
			never := func() bool { return false }
			if ok, err := db.applyTreeFilterDiff(c, removed, added, keys, &st.rng, never); ok && err == nil {
				t = c
			}
		}
	}
	if t != nil && !st.broken.Load() {
		db.saveTreeFilter(t)
	}
	if st.baseV != nil {
		st.baseV.Unref()
		st.base, st.baseV = nil, nil
	}
}

// saveTreeFilter writes the current filter to TREEFILTER (a temporary
// file renamed over it) so the next Open can load it instead of reading
// every table; loadTreeFilter adopts it only if it is intact and names
// exactly the recovered tables. A failure costs the next Open a rebuild,
// nothing else, so it is logged, not returned.
// REQUIRES: manifestMu held, background work stopped (Close).
func (db *DB) saveTreeFilter(t *treeFilter) {
	if db.opts.ReadOnly {
		return
	}
	name := filepath.Join(db.dirname, treefilter.FileName)
	if err := treefilter.WriteFile(db.fs, name, t.Encode(t.v)); err != nil {
		db.opts.Logger.Warn("bloomkv: could not save the tree filter; the next Open rebuilds it", "file", name, "error", err)
	}
}

// loadTreeFilter returns the saved filter if it describes v, else nil: no
// file, a stale one (other tables), or a damaged one (logged: the tables
// are the truth and Open rebuilds from them). Open writes nothing, so the
// file stays: it describes these tables for as long as they are the tree's
// (file numbers are never reused), and the next Close replaces it.
func (db *DB) loadTreeFilter(v *manifest.Version) *treeFilter {
	name := filepath.Join(db.dirname, treefilter.FileName)
	data, err := treefilter.ReadFile(db.fs, name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		db.opts.Logger.Warn("bloomkv: could not read the saved tree filter; rebuilding it", "file", name, "error", err)
		return nil
	}
	saved, tables, err := treefilter.Decode(name, data)
	if err != nil {
		db.opts.Logger.Warn("bloomkv: saved tree filter rejected; rebuilding it", "error", err)
		db.tf.rejected.Add(1)
		return nil
	}
	if !treefilter.MatchesVersion(tables, v) {
		return nil // saved before a crash left other tables: stale
	}
	db.tf.loaded.Add(1)
	return &treeFilter{Filter: *saved, v: v}
}

// buildTreeFilter builds the filter of v from its tables' keys, at load,
// with the level code that suits v's shape, growing it if insertions
// fail. v's tables must stay live meanwhile
// (manifestMu held, or v referenced).
func (db *DB) buildTreeFilter(v *manifest.Version, load float64) (*treeFilter, error) {
	rng := uint64(0x9e3779b97f4a7c15) // its own: it may run outside manifestMu
	start := time.Now()
	defer func() {
		db.tf.rebuilds.Add(1)
		db.tf.rebuildTime.Add(int64(time.Since(start)))
	}()
	var added []treefilter.LevelFile
	var perLevel [manifest.NumLevels]float64
	expect := 0
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			added = append(added, treefilter.LevelFile{Level: l, F: f})
			n := db.tableKeys(f)
			expect += int(n)
			perLevel[l] += n
		}
	}
	code := treefilter.ChooseCode(perLevel) // the level code that suits v
	for attempt := 0; ; attempt++ {
		t := &treeFilter{Filter: *treefilter.New(expect, load, code), v: v}
		ok := true
		for _, lf := range added {
			if db.closing.Load() {
				return nil, errTreeFilterClosing
			}
			err := db.scanTableKeys(lf.F, func(h uint64) {
				ok = ok && t.Insert(h, lf.Level, &rng)
			}, func() { t.SetRangeDels(lf.F.FileNum, lf.Level, true) })
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
		}
		if ok {
			t.MarkBuilt()
			return t, nil
		}
		// The key estimate (the per-table filters' counts) was short:
		// grow. Growing cannot help a key with more copies (tables
		// holding it) than its two buckets' 8 slots: give up then.
		if attempt == 3 {
			return nil, fmt.Errorf("bloomkv: tree filter: %d entries do not fit in %d slots", t.Entries(), t.Capacity())
		}
		expect = max(expect, t.Entries()) * 2
	}
}

// scanTableKeys calls fn with the hash of each distinct user key of a
// point entry in table f (values and point tombstones: both answer a
// Get), and rangeDels (if not nil) when the table holds range tombstones.
func (db *DB) scanTableKeys(f *manifest.FileMetadata, fn func(h uint64), rangeDels func()) error {
	db.tf.tablesRead.Add(1)
	r, release, err := findTable(db.tableCache, f)
	if err != nil {
		return fmt.Errorf("bloomkv: tree filter: %w", err)
	}
	defer release()
	if rangeDels != nil && r.RangeDels() != nil {
		rangeDels()
	}
	it := r.NewCompactionIter()
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		uk := base.UserKey(it.Key())
		if prev != nil && bytes.Equal(uk, prev) {
			continue // an older version of the same key
		}
		prev = append(prev[:0], uk...)
		fn(treefilter.Hash(uk))
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return fmt.Errorf("bloomkv: tree filter: read %s: %w", db.path(base.FileTypeTable, f.FileNum), err)
	}
	return it.Close()
}

// getFromTreeFilter is getFrom's table part for a version with a tree
// filter: it asks the filter once which levels may hold key (the tags of
// its entries, and where tables carrying them moved) and reads only those
// (and, above the deepest of them, the levels holding range tombstones). The order and the tombstone rule are getFrom's: levels
// newest first, level 0's tables newest first; a level skipped holds no
// point entry for key, so it cannot be the answer, and its tombstones are
// read whenever it has any.
func (db *DB) getFromTreeFilter(sh *readShard, slot int, s *readState, t *treeFilter, key []byte, seq uint64, tomb *uint64) ([]byte, error) {
	db.tf.probes.Add(slot, 1)
	mask := t.Lookup(treefilter.Hash(key))
	if mask == 0 {
		db.tf.negatives.Add(slot, 1)
		return nil, ErrNotFound
	}
	if mask&(mask-1) != 0 {
		db.tf.ambiguous.Add(slot, 1)
	}
	want := t.ProbeLevels(mask)
	if want&1 != 0 {
		for _, f := range s.v.Levels[0] {
			if !f.Overlaps(key, key) {
				continue
			}
			if v, kind, ok, err := db.getFromTable(sh, slot, f, 0, key, seq, tomb); err != nil || ok {
				if err != nil {
					return nil, err
				}
				return valueOrNotFound(v, kind)
			}
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		if want&(1<<level) == 0 {
			continue
		}
		f := findFile(s.v.Levels[level], key)
		if f == nil {
			continue
		}
		// A table carrying another tag than the key's entries (moved
		// there, or the one a moved table's tag sent the Get to) holds
		// no point entry for key: only its range tombstones may count.
		if t.AnyMoved() && mask&(1<<t.TagOf(f.FileNum, level)) == 0 && t.RangeDelLevels()&(1<<level) == 0 {
			continue
		}
		if v, kind, ok, err := db.getFromTable(sh, slot, f, level, key, seq, tomb); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return valueOrNotFound(v, kind)
		}
	}
	return nil, ErrNotFound
}
