package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/dustin/go-humanize"
)

// The engine side of the tree-wide filter (treefilter.go): built at Open,
// brought to each new version by a background maintainer, read by getFrom.
//
// # Keeping up with the tree
//
// A version is installed without waiting for its filter: logAndApply
// attaches one at once only when the tables did not change (the buckets
// are shared), and otherwise installs the version without one and wakes
// the maintainer. Gets on a version without a filter use the per-table
// filters, exactly as with the option off. The maintainer, outside every
// lock, derives the filter of the newest version from the last one it
// made: it takes out the keys of the tables that left and inserts those
// of the tables that came, skipping any table made and dropped in
// between, and attaches the result to that version (an atomic pointer:
// Gets on it switch over). The keys come from the flushes and compactions
// that wrote and read those tables (treefilter_keys.go): no table is read
// back. A table moved down a level unchanged keeps its entries, which
// carry the level they were inserted at (its tag; treefilter.go). The
// maintainer holds a reference on the version its filter describes. When
// the filter would pass tfMaxLoad it builds a bigger one from all tables
// instead (the one case, beside Open, that reads every table). So
// flushes and compactions never wait for the filter: the price is a
// window after each install in which Gets use the tables' filters.

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
	// not handed over (treefilter_keys.go): 0 unless a capture failed.
	updateTablesRead, updateBytesRead atomic.Uint64
	// Moved tables read back to re-tag them (retagOverlappedMoves).
	retagTablesRead, retagBytesRead atomic.Uint64

	// The keys table writers and compactions handed over, by file number,
	// not yet taken by the maintainer (treefilter_keys.go).
	stagedMu       sync.Mutex // guards added and removed; a leaf lock
	added, removed map[uint64]*tfKeys
	// Saved copies (treefilter_file.go) Open adopted, and rejected as damaged.
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
	// filter the keys they write and read; treefilter_keys.go).
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
		m.Bytes = t.memory()
		m.Entries = uint64(t.entries)
		m.Capacity = uint64(t.capacity())
		m.FPRTheory = t.fprTheory()
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
	t := db.loadTreeFilter(v) // treefilter_file.go
	if t == nil {
		var err error
		if t, err = db.buildTreeFilter(v, tfOpenLoad); err != nil {
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

// nextTreeFilter returns the filter for nv, the version logAndApply is
// about to install: the current version's when nv has the same tables,
// else nil, and the maintainer is woken to make one.
// REQUIRES: manifestMu held.
func (db *DB) nextTreeFilter(nv *manifest.Version) *treeFilter {
	st := &db.tf
	if !db.opts.TreeFilter || st.broken.Load() || db.opts.IgnoreFilters {
		return nil
	}
	if cur := st.latest; cur != nil {
		if removed, added := versionDiff(cur.v, nv); len(removed) == 0 && len(added) == 0 {
			c := *cur // same tables: share the buckets
			c.v = nv
			st.latest = &c
			return st.latest
		}
	}
	st.latest = nil
	if !st.running && !db.closing.Load() && st.baseV != nil {
		// Close waits for it. The Add cannot race Close's Wait: version
		// edits run as background work (counted in bgWG) or in Close
		// itself, after closing is set.
		st.running = true
		db.bgWG.Add(1)
		go db.maintainTreeFilter()
	}
	return nil
}

// maintainTreeFilter brings the filter to the current version, again and
// again until it is there (or Close), then exits.
func (db *DB) maintainTreeFilter() {
	defer db.bgWG.Done()
	st := &db.tf
	for {
		db.manifestMu.Lock()
		db.mu.Lock()
		cur := db.versions.Current()
		db.mu.Unlock()
		if cur == st.baseV || db.closing.Load() || st.broken.Load() {
			st.running = false
			db.manifestMu.Unlock()
			return
		}
		cur.Ref() // its tables stay while they are read
		removed, added := versionDiff(st.base.v, cur)
		keys := db.takeTreeFilterKeys(removed, added) // treefilter_keys.go
		db.manifestMu.Unlock()

		start := time.Now()
		t, err := db.advanceTreeFilter(st.base, cur, removed, added, keys)
		if err != nil {
			if errors.Is(err, errTreeFilterClosing) {
				db.restageTreeFilterKeys(keys) // for closeTreeFilter
			} else {
				db.breakTreeFilter(err)
			}
			cur.Unref()
			continue // exits above
		}
		db.manifestMu.Lock()
		setTreeFilter(cur, t)
		db.mu.Lock()
		if db.versions.Current() == cur {
			st.latest = t
		}
		db.mu.Unlock()
		old := st.baseV
		st.base, st.baseV = t, cur
		db.manifestMu.Unlock()
		old.Unref() // without locks: it may collect files
		// Rest as long as the step took (up to tfMaxRest): at most half a
		// core for the filter while writes keep the tree changing, and
		// the versions made and dropped meanwhile cost no step.
		if d := min(time.Since(start), tfMaxRest); d > 0 && !db.closing.Load() {
			time.Sleep(d)
		}
	}
}

// tfMaxRest caps the maintainer's rest between two steps.
const tfMaxRest = 500 * time.Millisecond

// tfStepKeys are the keys handed over for one step's tables, by file
// number: rem for the tables removed, add for those added.
type tfStepKeys struct{ rem, add map[uint64]*tfKeys }

// advanceTreeFilter returns the filter of nv from t, the filter of an
// older version whose tables are still live: a copy with the tables nv
// dropped (removed) taken out and those it added inserted, from the keys
// handed over, or a build from scratch when the copy would be too full
// or could not be applied. A table moved to another level unchanged keeps
// its entries (and their tag).
func (db *DB) advanceTreeFilter(t *treeFilter, nv *manifest.Version, removed, added []levelFile, keys tfStepKeys) (*treeFilter, error) {
	st := &db.tf
	start := time.Now()
	if db.treeFilterFits(t, removed, added, keys) {
		c := t.clone()
		c.v = nv
		ok, err := db.applyTreeFilterDiff(c, removed, added, keys, &st.rng, db.closing.Load)
		st.updateTime.Add(int64(time.Since(start)))
		if err != nil || ok {
			return c, err
		}
		// Too full after all, or out of step: rebuild.
	}
	return db.buildTreeFilter(nv, tfGrowLoad)
}

// treeFilterFits reports whether t, with the keys of removed taken out
// and those of added inserted, stays within tfMaxLoad. Keys handed over
// are counted as they are; other tables by their properties.
func (db *DB) treeFilterFits(t *treeFilter, removed, added []levelFile, keys tfStepKeys) bool {
	count := func(lf levelFile, m map[uint64]*tfKeys) int {
		if k := m[lf.f.FileNum]; k != nil {
			return len(k.hashes)
		}
		return int(db.tableKeys(lf.f))
	}
	moved := movedTables(removed, added)
	expect := t.entries
	for _, lf := range removed {
		if _, ok := moved[lf.f.FileNum]; !ok {
			expect -= count(lf, keys.rem)
		}
	}
	for _, lf := range added {
		if _, ok := moved[lf.f.FileNum]; !ok {
			expect += count(lf, keys.add)
		}
	}
	return float64(expect) <= tfMaxLoad*float64(t.capacity())
}

// movedTables returns the tables in both removed and added (moved to
// another level unchanged), with their new level.
func movedTables(removed, added []levelFile) map[uint64]int {
	was := make(map[uint64]bool, len(removed))
	for _, lf := range removed {
		was[lf.f.FileNum] = true
	}
	moved := map[uint64]int{}
	for _, lf := range added {
		if was[lf.f.FileNum] {
			moved[lf.f.FileNum] = lf.level
		}
	}
	return moved
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
		removed, added := versionDiff(st.base.v, cur)
		keys := db.takeTreeFilterKeys(removed, added)
		if db.treeFilterFits(st.base, removed, added, keys) {
			c := st.base.clone()
			c.v = cur
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

// applyTreeFilterDiff removes the entries of removed from t and inserts
// those of added, from the keys handed over (keys), reading a table back
// only when its keys were not; it stops with errTreeFilterClosing between
// two tables once stop returns true. A table in both lists moved levels
// unchanged: its entries stay, and t records the move. false: an entry to
// remove was missing or one could not be inserted; t is then unusable.
func (db *DB) applyTreeFilterDiff(t *treeFilter, removed, added []levelFile, keys tfStepKeys, rng *uint64, stop func() bool) (bool, error) {
	ok := true
	moved := movedTables(removed, added)
	for _, lf := range removed {
		n := lf.f.FileNum
		tag := t.tagOf(n, lf.level)
		_, rangeDels := t.rangeDelFiles[n]
		t.setRangeDels(n, lf.level, false)
		if nl, isMoved := moved[n]; isMoved {
			t.setMoved(n, nl, tag)
			t.setRangeDels(n, nl, rangeDels)
			continue
		}
		t.setMoved(n, -1, 0)
		if stop() {
			return false, errTreeFilterClosing // Close waits for the maintainer
		}
		if k := keys.rem[n]; k != nil {
			for _, h := range k.hashes {
				ok = ok && t.remove(h, tag)
			}
		} else if err := db.readBackTableKeys(lf.f, func(h uint64) { ok = ok && t.remove(h, tag) }, nil); err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
	}
	for _, lf := range added {
		n := lf.f.FileNum
		if _, isMoved := moved[n]; isMoved {
			continue
		}
		if stop() {
			return false, errTreeFilterClosing
		}
		if k := keys.add[n]; k != nil {
			for _, h := range k.hashes {
				ok = ok && t.insert(h, lf.level, rng)
			}
			if k.rangeDels {
				t.setRangeDels(n, lf.level, true)
			}
		} else {
			err := db.readBackTableKeys(lf.f, func(h uint64) {
				ok = ok && t.insert(h, lf.level, rng)
			}, func() { t.setRangeDels(n, lf.level, true) })
			if err != nil {
				return false, err
			}
		}
		if !ok {
			return false, nil
		}
	}
	return db.retagOverlappedMoves(t, added, rng, stop)
}

// retagOverlappedMoves re-inserts, at their level, the entries of each
// moved table (t.moved) that a table carrying the same tag now overlaps,
// checking the tables added (or moved) by this step: a Get for a key in
// the overlap could not tell the two apart by the tag and would read
// both. Such a table's keys are read back (counted in RetagTablesRead
// and RetagBytesRead); a moved table nothing overlaps, as in loads in key
// order, is never read.
func (db *DB) retagOverlappedMoves(t *treeFilter, added []levelFile, rng *uint64, stop func() bool) (bool, error) {
	if len(t.moved) == 0 || len(added) == 0 {
		return true, nil
	}
	type tagged struct {
		lf  levelFile
		tag int
	}
	var all []tagged
	for l := range t.v.Levels {
		for _, f := range t.v.Levels[l] {
			all = append(all, tagged{levelFile{l, f}, t.tagOf(f.FileNum, l)})
		}
	}
	overlap := func(a, b *manifest.FileMetadata) bool {
		return a.Overlaps(b.SmallestUserKey(), b.LargestUserKey())
	}
	retag := map[uint64]levelFile{}
	for _, lf := range added {
		tag := t.tagOf(lf.f.FileNum, lf.level)
		_, isMoved := t.moved[lf.f.FileNum]
		for _, o := range all {
			if o.tag != tag || o.lf.f.FileNum == lf.f.FileNum || !overlap(o.lf.f, lf.f) {
				continue
			}
			if _, oMoved := t.moved[o.lf.f.FileNum]; oMoved {
				retag[o.lf.f.FileNum] = o.lf
			}
			if isMoved {
				retag[lf.f.FileNum] = lf
			}
		}
	}
	ok := true
	for n, lf := range retag {
		if stop() {
			return false, errTreeFilterClosing
		}
		tag := t.tagOf(n, lf.level)
		db.tf.retagTablesRead.Add(1)
		db.tf.retagBytesRead.Add(lf.f.Size)
		err := db.scanTableKeys(lf.f, func(h uint64) {
			ok = ok && t.remove(h, tag) && t.insert(h, lf.level, rng)
		}, nil)
		if err != nil || !ok {
			return false, err
		}
		t.setMoved(n, lf.level, lf.level)
	}
	return true, nil
}

// readBackTableKeys is scanTableKeys for an update whose table's keys were
// not handed over: counted in UpdateTablesRead and UpdateBytesRead
// (builds read every table with scanTableKeys, counted in TablesRead
// alone).
func (db *DB) readBackTableKeys(f *manifest.FileMetadata, fn func(h uint64), rangeDels func()) error {
	db.tf.updateTablesRead.Add(1)
	db.tf.updateBytesRead.Add(f.Size)
	return db.scanTableKeys(f, fn, rangeDels)
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
	var added []levelFile
	var perLevel [manifest.NumLevels]float64
	expect := 0
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			added = append(added, levelFile{l, f})
			n := db.tableKeys(f)
			expect += int(n)
			perLevel[l] += n
		}
	}
	code := chooseTFCode(perLevel) // treefilter_code.go
	for attempt := 0; ; attempt++ {
		t := newTreeFilter(expect, load, code)
		t.v = v
		ok := true
		for _, lf := range added {
			if db.closing.Load() {
				return nil, errTreeFilterClosing
			}
			err := db.scanTableKeys(lf.f, func(h uint64) {
				ok = ok && t.insert(h, lf.level, &rng)
			}, func() { t.setRangeDels(lf.f.FileNum, lf.level, true) })
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
		}
		if ok {
			return t, nil
		}
		// The key estimate (the per-table filters' counts) was short:
		// grow. Growing cannot help a key with more copies (tables
		// holding it) than its two buckets' 8 slots: give up then.
		if attempt == 3 {
			return nil, fmt.Errorf("bloomkv: tree filter: %d entries do not fit in %d slots", t.entries, t.capacity())
		}
		expect = max(expect, t.entries) * 2
	}
}

type levelFile struct {
	level int
	f     *manifest.FileMetadata
}

// versionDiff returns the tables of old that nv lacks (at their old
// level) and those of nv that old lacks (at their new level); a table
// that moved levels is in both.
func versionDiff(old, nv *manifest.Version) (removed, added []levelFile) {
	at := map[uint64]int{}
	for l := range nv.Levels {
		for _, f := range nv.Levels[l] {
			at[f.FileNum] = l
		}
	}
	was := map[uint64]int{}
	for l := range old.Levels {
		for _, f := range old.Levels[l] {
			was[f.FileNum] = l
			if nl, ok := at[f.FileNum]; !ok || nl != l {
				removed = append(removed, levelFile{l, f})
			}
		}
	}
	for l := range nv.Levels {
		for _, f := range nv.Levels[l] {
			if ol, ok := was[f.FileNum]; !ok || ol != l {
				added = append(added, levelFile{l, f})
			}
		}
	}
	return removed, added
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
		fn(tfHash(uk))
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
	mask := t.levels(tfHash(key))
	if mask == 0 {
		db.tf.negatives.Add(slot, 1)
		return nil, ErrNotFound
	}
	if mask&(mask-1) != 0 {
		db.tf.ambiguous.Add(slot, 1)
	}
	want := t.probeLevels(mask)
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
		if len(t.moved) > 0 && mask&(1<<t.tagOf(f.FileNum, level)) == 0 && t.rangeDelLevels&(1<<level) == 0 {
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
