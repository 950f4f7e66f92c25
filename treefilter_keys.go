package bloomkv

import (
	"bytes"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Handing keys to the tree filter (treefilter_db.go) as tables are written
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
	c.keys.hashes = append(c.keys.hashes, tfHash(ukey))
}

// addNew notes ukey, known to differ from the key before it.
func (c *tfCapture) addNew(ukey []byte) {
	c.keys.hashes = append(c.keys.hashes, tfHash(ukey))
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
func (db *DB) takeTreeFilterKeys(removed, added []levelFile) tfStepKeys {
	st := &db.tf
	st.stagedMu.Lock()
	defer st.stagedMu.Unlock()
	rem, add := map[uint64]*tfKeys{}, map[uint64]*tfKeys{}
	for _, lf := range removed {
		if k, ok := st.removed[lf.f.FileNum]; ok {
			rem[lf.f.FileNum] = k
			delete(st.removed, lf.f.FileNum)
		}
	}
	for _, lf := range added {
		if k, ok := st.added[lf.f.FileNum]; ok {
			add[lf.f.FileNum] = k
			delete(st.added, lf.f.FileNum)
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
