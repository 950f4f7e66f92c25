package bloomkv

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
)

// DB iterators: memtables and levels merged, bounds, prefixes, snapshots
// and range deletions.

// IterOptions bound an iterator to [LowerBound, UpperBound): LowerBound is
// inclusive, UpperBound exclusive, and nil means unbounded on that side.
// {LowerBound: "b", UpperBound: "d"} sees "b", "b1" and "c", but not "d";
// every key starting with "user:" is {LowerBound: "user:", UpperBound:
// "user;"} (';' follows ':'), or Prefix: "user:". LowerBound > UpperBound
// is an error (Iterator.Error wraps ErrInvalidArgument), not an empty
// range. Compact, by contrast, takes an inclusive end.
type IterOptions struct {
	LowerBound, UpperBound []byte
	// Prefix, when set, limits the iterator to the keys that start with
	// Prefix: "iterate exactly this row". When Options.FilterKey is set and
	// Prefix is a filter key -- FilterKey of every key that starts with it,
	// a whole row such as "r036/" -- First and SeekGE skip the tables whose
	// filter says the prefix is absent, without reading a block. Any other
	// prefix (part of a row "r036/c0", a row and more, a bare "r03") is
	// answered the same, by reading every table its range overlaps: the
	// filters hold rows (and, with FilterWholeKey, whole keys), and neither
	// can say that no key starts with such a prefix.
	Prefix []byte
}

// Iterator is a consistent point-in-time view of the database, in
// bytewise key order, moving both ways. Key and Value stay valid until the
// next move. An Iterator is not safe for concurrent use; Close it to release
// the tables it pins.
type Iterator struct {
	db        *DB
	vis       *iterator.Visible
	state     *readState
	stateSlot int        // the slot of state's reference
	shard     *readShard // where the iterator's work is counted
	prefix    []byte     // IterOptions.Prefix (owned), nil without one
	// filterPrefix is prefix when it is a filter key (prefixIsFilterKey),
	// the one case in which positioning may skip tables on their filters;
	// nil otherwise. Constant after construction.
	filterPrefix []byte
	err          error
	// levels are the iterators of levels 1 and deeper, shallowest first,
	// whose seeks compaction_triggers.go looks at.
	levels []*levelIter
	// boundsErr: the bounds are inverted; the iterator holds no position
	// until SetBounds gives it valid ones.
	boundsErr error
	closed    bool
	// scan is the bounds the levels see, to skip the tables that cannot
	// hold keys in them (level_iter.go).
	scan *scanBounds
}

// NewIterator returns an iterator over the database as of now.
func (db *DB) NewIterator(o *IterOptions) *Iterator {
	if db.closed.Load() {
		return &Iterator{err: ErrClosed}
	}
	return db.newIterator(o, readNow)
}

// newIterator reads as of seq, or as of now when seq is readNow (loaded after the
// read state, as get explains).
func (db *DB) newIterator(o *IterOptions, seq uint64) *Iterator {
	var lower, upper, prefix []byte
	if o != nil {
		// Copy: the engine keeps no reference to a caller's slice.
		lower, upper, prefix = cloneOrNil(o.LowerBound), cloneOrNil(o.UpperBound), cloneOrNil(o.Prefix)
	}
	if prefix != nil {
		lower, upper = prefixBounds(prefix, lower, upper)
	}
	s, slot := db.loadReadState()
	if seq == readNow {
		seq = db.versions.VisibleSeq()
	}
	sh := db.reads.at(slot)
	scan := &scanBounds{lower: lower, upper: upper, filters: !db.opts.IgnoreRangeFilters}
	iters := []base.InternalIterator{s.mem.NewIter()}
	for _, m := range s.imm {
		iters = append(iters, m.NewIter())
	}
	level := func(l int, files []*manifest.FileMetadata) *levelIter {
		li := newLevelIter(db.tableCache, files)
		li.level = l
		li.stats, li.probes, li.prefixOf = &sh.iterLevels[l], &sh.iterProbes[l], db.opts.FilterKey
		li.ignoreFilters = db.opts.IgnoreFilters
		li.scan = scan
		return li
	}
	// Level-0 tables may overlap: each is its own one-table "level".
	for _, f := range s.v.Levels[0] {
		iters = append(iters, level(0, []*manifest.FileMetadata{f}))
	}
	var sorted []*levelIter
	for l := 1; l < len(s.v.Levels); l++ {
		if len(s.v.Levels[l]) > 0 {
			li := level(l, s.v.Levels[l])
			iters = append(iters, li)
			sorted = append(sorted, li)
		}
	}
	vis := iterator.NewVisible(iterator.NewMerging(iters...), seq, lower, upper)
	vis.SetPrefixExtractor(db.opts.FilterKey)
	it := &Iterator{db: db, vis: vis, state: s, stateSlot: slot, shard: sh, prefix: prefix, levels: sorted, scan: scan}
	if prefix != nil && prefixIsFilterKey(db.opts.FilterKey, prefix) {
		it.filterPrefix = prefix
	}
	if o != nil {
		it.boundsErr = checkBounds(o.LowerBound, o.UpperBound)
	}
	db.openIters.Add(1)
	if it.boundsErr == nil {
		it.setRangeDels(lower, upper)
	}
	return it
}

// checkBounds rejects LowerBound > UpperBound. Such bounds hold no key,
// but they are more likely swapped than meant; an empty answer would hide
// that. Equal bounds are a legitimate empty range.
func checkBounds(lower, upper []byte) error {
	if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 {
		return invalidf("iterator bounds inverted: LowerBound %q > UpperBound %q (UpperBound is exclusive: [LowerBound, UpperBound))", lower, upper)
	}
	return nil
}

// setRangeDels gives the iterator the range tombstones of every source of
// its read state that may overlap [lower, upper): the memtables' and
// those of the tables whose bounds meet the range (tables hold theirs in
// memory once open; opening one that is not fails the iterator with the
// error).
func (it *Iterator) setRangeDels(lower, upper []byte) {
	s := it.state
	// Most sources hold no tombstone: collect without allocating until a
	// second list turns up.
	var first *rangedel.List
	var more []*rangedel.List
	add := func(l *rangedel.List) {
		switch {
		case l.Empty():
		case first == nil:
			first = l
		default:
			more = append(more, l)
		}
	}
	add(s.mem.RangeDels())
	for _, m := range s.imm {
		add(m.RangeDels())
	}
	// Binary searched in levels >= 1: a short scan's SetBounds on a big
	// tree would otherwise compare its bounds with every table's.
	for level := range s.v.Levels {
		for _, f := range s.v.Overlaps(level, lower, upper) {
			// Most tables hold no range tombstone: once a table is known
			// to have none, skip the table-cache lookup (a short seek's
			// SetBounds spent a quarter of its time on them).
			if has, known := f.RangeDelsKnown(); known && !has {
				continue
			}
			r, release, err := findTable(it.db.tableCache, f)
			if err != nil {
				if errors.Is(err, sstable.ErrTableCacheClosed) {
					err = ErrClosed
				}
				it.err = fmt.Errorf("bloomkv: iterator: %w", err)
				return
			}
			l := r.RangeDels()
			f.SetHasRangeDels(!l.Empty())
			add(l)
			release()
		}
	}
	if more != nil {
		first = rangedel.Merge(append(more, first)...)
	}
	it.vis.SetRangeDels(first)
}

// prefixIsFilterKey reports whether every key that starts with prefix has
// prefix as its filter key (fk), so that a filter -- of a table or a
// memtable -- saying the filter key prefix is absent rules out every key of
// the prefix's range. Filters hold filter keys (and, with FilterWholeKey,
// whole keys too), so for any other prefix a "no" proves nothing: "r036/c0"
// is neither the row "r036/" of "r036/c05" nor that whole key, and a bare
// "r02" is the row of none of "r020/...", "r021/...". Whole keys in a
// filter answer only for a lookup of one key (SeekPrefixGE without a
// FilterKey), never for a prefix, which also covers the keys that extend
// it; so without a FilterKey no prefix is a filter key.
//
// fk(prefix) == prefix is necessary but not enough: an extractor that
// returns a key shorter than its row whole (rowPrefix6 of "r02" is "r02")
// calls "r02" its own filter key, yet "r020|c03" starts with "r02" and has
// the row "r020|". The options ask for an extractor whose filter keys are
// the filter keys of their extensions too; the two extensions by the
// smallest and the largest next byte test that where such extractors
// break it, at three calls per iterator. A prefix the extractor panics on
// (a fixed-width extractor given a shorter prefix) is not a filter key:
// callers only promise fk keys, and a prefix is not one.
func prefixIsFilterKey(fk func([]byte) []byte, prefix []byte) (ok bool) {
	if fk == nil || len(prefix) == 0 {
		return false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if !bytes.Equal(fk(prefix), prefix) {
		return false
	}
	ext := make([]byte, len(prefix)+1)
	copy(ext, prefix)
	for _, b := range []byte{0x00, 0xff} {
		ext[len(prefix)] = b
		if !bytes.Equal(fk(ext), prefix) {
			return false
		}
	}
	return true
}

// prefixBounds narrows [lower, upper) to the keys that start with prefix.
func prefixBounds(prefix, lower, upper []byte) ([]byte, []byte) {
	if lower == nil || bytes.Compare(lower, prefix) < 0 {
		lower = prefix
	}
	if end := prefixEnd(prefix); end != nil && (upper == nil || bytes.Compare(end, upper) < 0) {
		upper = end
	}
	return lower, upper
}

// prefixEnd returns the smallest key greater than every key that starts
// with prefix, or nil when there is none (prefix is all 0xff bytes).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func cloneOrNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// usable reports whether the iterator may move: not closed, no error, and
// its DB still open (after DB.Close every move fails with ErrClosed, even
// where the answer is still in memory).
func (it *Iterator) usable() bool {
	if it.err == nil && it.db != nil && it.db.closed.Load() {
		it.err = ErrClosed
	}
	return it.err == nil && it.boundsErr == nil && !it.closed
}

// First moves to the first key; it reports whether the iterator is valid.
func (it *Iterator) First() bool {
	if !it.usable() {
		return false
	}
	it.shard.iterSeeks.Add(1)
	if it.filterPrefix != nil {
		it.shard.iterPrefixSeeks.Add(1)
		return it.vis.SeekPrefixRangeGE(it.filterPrefix, it.filterPrefix)
	}
	return it.vis.First()
}

// Last moves to the last key.
func (it *Iterator) Last() bool {
	if !it.usable() {
		return false
	}
	it.shard.iterSeeks.Add(1)
	return it.vis.Last()
}

// SeekGE moves to the first key >= max(key, LowerBound) below UpperBound.
func (it *Iterator) SeekGE(key []byte) bool {
	if !it.usable() {
		return false
	}
	it.shard.iterSeeks.Add(1)
	if it.filterPrefix != nil {
		it.shard.iterPrefixSeeks.Add(1)
		return it.vis.SeekPrefixRangeGE(it.filterPrefix, key)
	}
	ok := it.vis.SeekGE(key)
	it.db.chargeSeek(it.levels)
	return ok
}

// SeekPrefixGE moves to the first key >= max(key, LowerBound) below
// UpperBound whose filter key (Options.FilterKey; the whole key without one)
// is key's. Next and Prev then stay inside that prefix: the iterator becomes
// invalid at its edges, until positioned again. Tables whose filter says no
// key has the prefix are skipped without reading a block. The keys of one
// prefix must all start with one common byte string (rows of row+column
// keys do). Without a FilterKey it is a point seek: at most key itself.
func (it *Iterator) SeekPrefixGE(key []byte) bool {
	if !it.usable() {
		return false
	}
	it.shard.iterSeeks.Add(1)
	it.shard.iterPrefixSeeks.Add(1)
	return it.vis.SeekPrefixGE(key)
}

// SeekLT moves to the last key < min(key, UpperBound) at or above
// LowerBound.
func (it *Iterator) SeekLT(key []byte) bool {
	if !it.usable() {
		return false
	}
	it.shard.iterSeeks.Add(1)
	return it.vis.SeekLT(key)
}

// SetBounds replaces the iterator's bounds ([lower, upper), nil unbounded;
// both copied), keeping its point-in-time view: reuse one iterator over
// many ranges without re-creating it. The iterator is unpositioned
// afterwards. With IterOptions.Prefix the bounds stay inside the prefix.
// Inverted bounds (lower > upper) make every move fail and Error report
// them, until a later SetBounds gives valid ones.
func (it *Iterator) SetBounds(lower, upper []byte) {
	if it.boundsErr = nil; !it.usable() {
		return
	}
	if it.boundsErr = checkBounds(lower, upper); it.boundsErr != nil {
		return
	}
	if it.prefix != nil {
		lower, upper = prefixBounds(it.prefix, lower, upper)
	}
	it.vis.SetBounds(lower, upper)
	it.scan.lower, it.scan.upper = cloneOrNil(lower), cloneOrNil(upper)
	it.setRangeDels(lower, upper)
}

// Next moves to the next key.
func (it *Iterator) Next() bool { return it.usable() && it.vis.Next() }

// Prev moves to the previous key.
func (it *Iterator) Prev() bool { return it.usable() && it.vis.Prev() }

// Valid reports whether the iterator is on a key.
func (it *Iterator) Valid() bool { return it.usable() && it.vis.Valid() }

// Key returns the current key, valid until the next move.
func (it *Iterator) Key() []byte {
	if !it.Valid() {
		return nil
	}
	return it.vis.Key()
}

// Value returns the current value, valid until the next move: the block
// it points into may be reused for another block once the iterator has
// left it, so copy a value you keep.
func (it *Iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	return it.vis.Value()
}

// Error returns the error that stopped the iterator, if any: ErrClosed,
// damage found while reading (wrapping ErrCorruption), or inverted bounds
// (wrapping ErrInvalidArgument).
func (it *Iterator) Error() error {
	if it.err != nil {
		return it.err
	}
	if it.boundsErr != nil {
		return it.boundsErr
	}
	if it.vis == nil {
		return nil
	}
	return it.vis.Error()
}

// Close releases the iterator. It returns the iterator's error, if any;
// closing twice returns ErrClosed.
func (it *Iterator) Close() error {
	if it.closed {
		return ErrClosed
	}
	it.closed = true
	if it.vis == nil {
		return it.err
	}
	it.db.openIters.Add(-1)
	err := it.err
	if errors.Is(err, ErrClosed) {
		err = nil // the DB closed under the iterator: Close still releases it
	}
	if err == nil {
		err = it.boundsErr
	}
	if err == nil {
		err = it.vis.Error()
	}
	if cerr := it.vis.Close(); err == nil {
		err = cerr
	}
	it.state.unref(it.stateSlot)
	return err
}
