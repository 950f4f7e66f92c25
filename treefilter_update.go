package bloomkv

// Keeping the tree-wide filter (treefilter.go) up with the tree: a
// background maintainer brings it to each new version, from the keys the
// flushes and compactions that made the change hand over.
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
// that wrote and read those tables (below): no table is read
// back. A table moved down a level unchanged keeps its entries, which
// carry the level they were inserted at (its tag; internal/treefilter). The
// maintainer holds a reference on the version its filter describes. When
// the filter would pass treefilter.MaxLoad (or fall below ShrinkLoad) it
// builds one sized to GrowLoad from all tables instead (the one case,
// beside Open, that reads every table; internal/treefilter/grow.go). So
// flushes and compactions never wait for the filter: the price is a
// window after each install in which Gets use the tables' filters.

import (
	"bytes"
	"errors"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/treefilter"
)

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
		if removed, added := treefilter.Diff(cur.v, nv); len(removed) == 0 && len(added) == 0 {
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
		removed, added := treefilter.Diff(st.base.v, cur)
		keys := db.takeTreeFilterKeys(removed, added) // treefilter_update.go
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
// handed over, or a build from scratch at treefilter.GrowLoad when the
// copy would be too full or too empty, or could not be applied. A table moved to another level unchanged keeps
// its entries (and their tag).
func (db *DB) advanceTreeFilter(t *treeFilter, nv *manifest.Version, removed, added []treefilter.LevelFile, keys tfStepKeys) (*treeFilter, error) {
	st := &db.tf
	start := time.Now()
	if db.treeFilterFits(t, removed, added, keys) {
		c := t.clone(nv)
		ok, err := db.applyTreeFilterDiff(c, removed, added, keys, &st.rng, db.closing.Load)
		st.updateTime.Add(int64(time.Since(start)))
		if err != nil || ok {
			return c, err
		}
		// Too full after all, or out of step: rebuild.
	}
	return db.buildTreeFilter(nv, treefilter.GrowLoad)
}

// treeFilterFits reports whether t, with the keys of removed taken out
// and those of added inserted, may be updated (Filter.Fits: no fuller
// than MaxLoad, and not shrunk below ShrinkLoad/GrowLoad of the entries it
// was built with). Keys handed over
// are counted as they are; other tables by their properties.
func (db *DB) treeFilterFits(t *treeFilter, removed, added []treefilter.LevelFile, keys tfStepKeys) bool {
	count := func(lf treefilter.LevelFile, m map[uint64]*tfKeys) int {
		if k := m[lf.F.FileNum]; k != nil {
			return len(k.hashes)
		}
		return int(db.tableKeys(lf.F))
	}
	moved := treefilter.MovedTables(removed, added)
	expect := t.Entries()
	for _, lf := range removed {
		if _, ok := moved[lf.F.FileNum]; !ok {
			expect -= count(lf, keys.rem)
		}
	}
	for _, lf := range added {
		if _, ok := moved[lf.F.FileNum]; !ok {
			expect += count(lf, keys.add)
		}
	}
	return t.Fits(expect)
}

// applyTreeFilterDiff removes the entries of removed from t and inserts
// those of added, from the keys handed over (keys), reading a table back
// only when its keys were not; it stops with errTreeFilterClosing between
// two tables once stop returns true. A table in both lists moved levels
// unchanged: its entries stay, and t records the move. false: an entry to
// remove was missing or one could not be inserted; t is then unusable.
func (db *DB) applyTreeFilterDiff(t *treeFilter, removed, added []treefilter.LevelFile, keys tfStepKeys, rng *uint64, stop func() bool) (bool, error) {
	ok := true
	moved := treefilter.MovedTables(removed, added)
	for _, lf := range removed {
		n := lf.F.FileNum
		tag := t.TagOf(n, lf.Level)
		rangeDels := t.HasRangeDels(n)
		t.SetRangeDels(n, lf.Level, false)
		if nl, isMoved := moved[n]; isMoved {
			t.SetMoved(n, nl, tag)
			t.SetRangeDels(n, nl, rangeDels)
			continue
		}
		t.SetMoved(n, -1, 0)
		if stop() {
			return false, errTreeFilterClosing // Close waits for the maintainer
		}
		if k := keys.rem[n]; k != nil {
			for _, h := range k.hashes {
				ok = ok && t.Remove(h, tag)
			}
		} else if err := db.readBackTableKeys(lf.F, func(h uint64) { ok = ok && t.Remove(h, tag) }, nil); err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
	}
	for _, lf := range added {
		n := lf.F.FileNum
		if _, isMoved := moved[n]; isMoved {
			continue
		}
		if stop() {
			return false, errTreeFilterClosing
		}
		if k := keys.add[n]; k != nil {
			for _, h := range k.hashes {
				ok = ok && t.Insert(h, lf.Level, rng)
			}
			if k.rangeDels {
				t.SetRangeDels(n, lf.Level, true)
			}
		} else {
			err := db.readBackTableKeys(lf.F, func(h uint64) {
				ok = ok && t.Insert(h, lf.Level, rng)
			}, func() { t.SetRangeDels(n, lf.Level, true) })
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
// moved table (Filter.Moved) that a table carrying the same tag now overlaps,
// checking the tables added (or moved) by this step: a Get for a key in
// the overlap could not tell the two apart by the tag and would read
// both. Such a table's keys are read back (counted in RetagTablesRead
// and RetagBytesRead); a moved table nothing overlaps, as in loads in key
// order, is never read.
func (db *DB) retagOverlappedMoves(t *treeFilter, added []treefilter.LevelFile, rng *uint64, stop func() bool) (bool, error) {
	if !t.AnyMoved() || len(added) == 0 {
		return true, nil
	}
	type tagged struct {
		lf  treefilter.LevelFile
		tag int
	}
	var all []tagged
	for l := range t.v.Levels {
		for _, f := range t.v.Levels[l] {
			all = append(all, tagged{treefilter.LevelFile{Level: l, F: f}, t.TagOf(f.FileNum, l)})
		}
	}
	overlap := func(a, b *manifest.FileMetadata) bool {
		return a.Overlaps(b.SmallestUserKey(), b.LargestUserKey())
	}
	retag := map[uint64]treefilter.LevelFile{}
	for _, lf := range added {
		tag := t.TagOf(lf.F.FileNum, lf.Level)
		_, _, isMoved := t.Moved(lf.F.FileNum)
		for _, o := range all {
			if o.tag != tag || o.lf.F.FileNum == lf.F.FileNum || !overlap(o.lf.F, lf.F) {
				continue
			}
			if _, _, oMoved := t.Moved(o.lf.F.FileNum); oMoved {
				retag[o.lf.F.FileNum] = o.lf
			}
			if isMoved {
				retag[lf.F.FileNum] = lf
			}
		}
	}
	ok := true
	for n, lf := range retag {
		if stop() {
			return false, errTreeFilterClosing
		}
		tag := t.TagOf(n, lf.Level)
		db.tf.retagTablesRead.Add(1)
		db.tf.retagBytesRead.Add(lf.F.Size)
		err := db.scanTableKeys(lf.F, func(h uint64) {
			ok = ok && t.Remove(h, tag) && t.Insert(h, lf.Level, rng)
		}, nil)
		if err != nil || !ok {
			return false, err
		}
		t.SetMoved(n, lf.Level, lf.Level)
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

// Handing keys to the tree filter as tables are written
// and read by the work that makes them, so that no table a flush or a
// merge wrote or removed is read back to keep the filter up to date (a
// table moved down unchanged keeps its entries; see retagOverlappedMoves
// for the one case that reads it).
//
// Each table writer (a flush, a recovery flush, a compaction's outputs)
// hashes the distinct user keys of the point entries it writes, and a
// compaction hashes those of each input table as its merge reads them
// (tfTap). What a flush or compaction captured is staged, by file number,
// in the same manifestMu critical section as the install of its version
// edit, never for an edit that failed: so when the maintainer takes the
// keys of the tables between its last version and the current one (under
// manifestMu too), every table it needs is staged, unless a capture was
// incomplete; it reads such a table back (counted in
// TreeFilterMetrics.UpdateTablesRead and UpdateBytesRead, which stay 0).
// A table made and dropped between two of its steps is unstaged when its
// removal is staged: the maintainer never saw it.

// tfKeys is what was captured of one table: the tree-filter hashes of the
// distinct user keys of its point entries, in key order, and whether it
// holds range tombstones.
type tfKeys struct {
	hashes    []uint64
	rangeDels bool
}

// tfCapture hashes the distinct user keys handed to it, in order.
type tfCapture struct {
	keys tfKeys
	prev []byte
	any  bool
}

// add notes ukey, the user key of the next entry of the table.
func (c *tfCapture) add(ukey []byte) {
	if c.any && bytes.Equal(ukey, c.prev) {
		return // an older version of the same key
	}
	c.any = true
	c.prev = append(c.prev[:0], ukey...)
	c.keys.hashes = append(c.keys.hashes, treefilter.Hash(ukey))
}

// addNew notes ukey, known to differ from the key before it.
func (c *tfCapture) addNew(ukey []byte) {
	c.keys.hashes = append(c.keys.hashes, treefilter.Hash(ukey))
}

// tfTap captures the keys of one compaction input as the merge reads it.
// The capture is complete only when the merge read the table from First to
// its end without a seek (done).
type tfTap struct {
	base.InternalIterator
	c    tfCapture
	done bool // read First to the end, in order, without error
	bad  bool // positioned other than by First and Next
}

func (t *tfTap) note(ok bool) bool {
	if ok {
		t.c.add(base.UserKey(t.Key()))
	} else if !t.bad && t.Error() == nil {
		t.done = true
	}
	return ok
}

func (t *tfTap) First() bool {
	if t.c.any {
		t.bad = true
	}
	return t.note(t.InternalIterator.First())
}

func (t *tfTap) Next() bool { return t.note(t.InternalIterator.Next()) }

func (t *tfTap) SeekGE(k []byte) bool { t.bad = true; return t.InternalIterator.SeekGE(k) }
func (t *tfTap) SeekLT(k []byte) bool { t.bad = true; return t.InternalIterator.SeekLT(k) }
func (t *tfTap) Last() bool           { t.bad = true; return t.InternalIterator.Last() }
func (t *tfTap) Prev() bool           { t.bad = true; return t.InternalIterator.Prev() }

// keys returns the capture, or nil when it is not complete.
func (t *tfTap) keys() *tfKeys {
	if !t.done || t.bad {
		return nil
	}
	return &t.c.keys
}

// capturingTreeFilter says whether table writers should capture keys for
// the tree filter.
func (db *DB) capturingTreeFilter() bool {
	return db.opts.TreeFilter && !db.opts.IgnoreFilters && !db.opts.ReadOnly && !db.tf.broken.Load()
}

// stageTreeFilterKeys stages the keys of tables an edit just installed
// added and removed (by file number; nil entries are skipped: those
// tables will be read back). A removed table whose added keys are still
// staged was made and dropped since the maintainer's last step: both are
// dropped.
// REQUIRES: manifestMu held, in the critical section of the install.
func (db *DB) stageTreeFilterKeys(added, removed map[uint64]*tfKeys) {
	st := &db.tf
	st.stagedMu.Lock()
	defer st.stagedMu.Unlock()
	if st.added == nil {
		st.added, st.removed = map[uint64]*tfKeys{}, map[uint64]*tfKeys{}
	}
	for n, k := range added {
		if k != nil {
			st.added[n] = k
		}
	}
	for n, k := range removed {
		if _, ok := st.added[n]; ok {
			delete(st.added, n)
			continue
		}
		if k != nil {
			st.removed[n] = k
		}
	}
}

// takeTreeFilterKeys removes from the stage and returns the keys of the
// tables of a step: removed (at their old levels) and added (at their new
// ones). A table in both (moved to another level) needs none.
// REQUIRES: manifestMu held.
func (db *DB) takeTreeFilterKeys(removed, added []treefilter.LevelFile) tfStepKeys {
	st := &db.tf
	st.stagedMu.Lock()
	defer st.stagedMu.Unlock()
	rem, add := map[uint64]*tfKeys{}, map[uint64]*tfKeys{}
	for _, lf := range removed {
		if k, ok := st.removed[lf.F.FileNum]; ok {
			rem[lf.F.FileNum] = k
			delete(st.removed, lf.F.FileNum)
		}
	}
	for _, lf := range added {
		if k, ok := st.added[lf.F.FileNum]; ok {
			add[lf.F.FileNum] = k
			delete(st.added, lf.F.FileNum)
		}
	}
	return tfStepKeys{rem, add}
}

// restageTreeFilterKeys puts back what a step took and did not apply (it
// stopped for Close, which then catches up itself).
func (db *DB) restageTreeFilterKeys(keys tfStepKeys) {
	st := &db.tf
	st.stagedMu.Lock()
	defer st.stagedMu.Unlock()
	if st.added == nil {
		st.added, st.removed = map[uint64]*tfKeys{}, map[uint64]*tfKeys{}
	}
	for n, k := range keys.rem {
		st.removed[n] = k
	}
	for n, k := range keys.add {
		st.added[n] = k
	}
}
