package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// Level iterators: a sorted level's tables walked as one iterator, opening
// each only when the walk reaches it; bounded seeks that skip tables on
// their range filters (below), and the metrics counting what those did.

// levelIter walks the tables of one sorted, non-overlapping level as one
// base.InternalIterator, opening a table only when the walk reaches it and
// keeping at most one open.
type levelIter struct {
	tc    *sstable.TableCache
	level int
	files []*manifest.FileMetadata
	index int // file of iter; -1 or len(files) when outside
	iter  base.InternalIterator
	close func()
	err   error
	// spare is the iterator of the table closed last, reinitialized for
	// the next one (sstable.Reader.ReuseIterReleasing) so that moving to
	// another table, as nearly every seek does, allocates nothing.
	spare base.InternalIterator

	// stats counts the iterator work in this level's tables and probes the
	// tables prefix seeks consider; both may be nil.
	stats  *sstable.ReadStats
	probes *atomic.Uint64
	// prefixOf is the database's FilterKey (nil: a prefix is a whole key).
	prefixOf func([]byte) []byte
	// ignoreFilters (Options.IgnoreFilters): prefix seeks do not consult
	// filters, so their cost without filters can be measured.
	ignoreFilters bool
	// seekFile is the table whose key range held the target of the last
	// SeekGE, nil when the target fell between tables or outside them
	// (compaction_triggers.go charges it when a deeper level held it too).
	seekFile *manifest.FileMetadata
	// scan holds the iterator's bounds (nil: seeks ignore them); skipped
	// says the last SeekGE or SeekLT left the level exhausted without
	// positioning on entries it holds beyond the bounds or on tables its
	// range filters skipped (below).
	scan    *scanBounds
	skipped bool
}

func newLevelIter(tc *sstable.TableCache, files []*manifest.FileMetadata) *levelIter {
	return &levelIter{tc: tc, files: files, index: -1}
}

// open positions the iterator on file i (closing the previous one). It
// returns false on an error or when i is out of range.
func (l *levelIter) open(i int) bool {
	r, release := l.find(i)
	if r == nil {
		return false
	}
	l.iter, l.close = r.ReuseIterReleasing(l.spare, true, l.stats), release
	l.spare = nil
	return true
}

// find closes the current file and returns the reader of file i (and its
// release), or nil on an error or when i is out of range.
func (l *levelIter) find(i int) (*sstable.Reader, func()) {
	l.closeCurrent()
	l.index = i
	if i < 0 || i >= len(l.files) {
		return nil, nil
	}
	r, release, err := findTableStats(l.tc, l.files[i], l.stats)
	if errors.Is(err, sstable.ErrTableCacheClosed) {
		err = fmt.Errorf("%w: %w", ErrClosed, err) // the DB closed under this iterator
	}
	if err != nil {
		l.err = err
		return nil, nil
	}
	return r, release
}

func (l *levelIter) closeCurrent() {
	if l.iter != nil {
		if err := l.iter.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.close()
		l.spare = l.iter
		l.iter, l.close = nil, nil
	}
}

// settle checks the current file's iterator for an error.
func (l *levelIter) settle(ok bool) bool {
	if !ok && l.iter != nil && l.iter.Error() != nil && l.err == nil {
		l.err = l.iter.Error()
	}
	return ok && l.err == nil
}

// skipForward moves to the first entry of the following files when the
// current one is exhausted.
func (l *levelIter) skipForward(ok bool) bool {
	for !ok && l.err == nil {
		if l.iter != nil && l.iter.Error() != nil {
			l.err = l.iter.Error()
			return false
		}
		if !l.open(l.index + 1) {
			return false
		}
		ok = l.iter.First()
	}
	return l.settle(ok)
}

func (l *levelIter) skipBackward(ok bool) bool {
	for !ok && l.err == nil {
		if l.iter != nil && l.iter.Error() != nil {
			l.err = l.iter.Error()
			return false
		}
		if !l.open(l.index - 1) {
			return false
		}
		ok = l.iter.Last()
	}
	return l.settle(ok)
}

func (l *levelIter) SeekGE(ikey []byte) bool {
	// The first file whose largest key is >= ikey.
	i := sort.Search(len(l.files), func(i int) bool {
		return base.CompareInternal(l.files[i].Largest, ikey) >= 0
	})
	l.seekFile = nil
	if i < len(l.files) && base.CompareInternal(l.files[i].Smallest, ikey) <= 0 {
		l.seekFile = l.files[i]
	}
	if l.skipped = false; l.scan != nil && l.scan.upper != nil {
		return l.seekGEBounded(i, ikey)
	}
	if !l.open(i) {
		return false
	}
	return l.skipForward(l.iter.SeekGE(ikey))
}

// SeekPrefixGE is SeekGE(ikey) for a caller that only looks at keys whose
// filter key is prefix (every such key starts with one common byte string,
// so they are contiguous). Tables whose filter says the prefix is absent
// are skipped without reading a block: the first file that can hold ikey,
// then the following ones while their smallest key has the prefix. When
// every candidate is skipped the iterator is invalid. A table that a
// filter let through but that holds no key of the prefix at or after ikey
// is a false positive, counted in stats.
func (l *levelIter) SeekPrefixGE(prefix, ikey []byte) bool {
	i := sort.Search(len(l.files), func(i int) bool {
		return base.CompareInternal(l.files[i].Largest, ikey) >= 0
	})
	for ; i < len(l.files); i++ {
		r, release := l.find(i)
		if r == nil {
			return false
		}
		if l.probes != nil {
			l.probes.Add(1)
		}
		may, filtered := true, false
		if !l.ignoreFilters {
			may, filtered = r.PrefixMayMatch(prefix, l.stats)
		}
		if !may {
			release()
			if i+1 < len(l.files) && bytes.Equal(l.prefix(l.files[i+1].SmallestUserKey()), prefix) {
				continue // the prefix may go on in the next table
			}
			l.index = len(l.files)
			return false
		}
		l.iter, l.close = r.ReuseIterReleasing(l.spare, true, l.stats), release
		l.spare = nil
		ok := l.skipForward(l.iter.SeekGE(ikey))
		if filtered && l.stats != nil && (!ok || !bytes.Equal(l.prefix(base.UserKey(l.iter.Key())), prefix)) {
			l.stats.FilterFalsePositives.Add(1)
		}
		return ok
	}
	l.closeCurrent()
	l.index = len(l.files)
	return false
}

// prefix returns the filter key of user key k.
func (l *levelIter) prefix(k []byte) []byte {
	if l.prefixOf == nil {
		return k
	}
	return l.prefixOf(k)
}

func (l *levelIter) SeekLT(ikey []byte) bool {
	// The last file whose smallest key is < ikey.
	i := sort.Search(len(l.files), func(i int) bool {
		return base.CompareInternal(l.files[i].Smallest, ikey) >= 0
	}) - 1
	if l.skipped = false; l.scan != nil && l.scan.lower != nil {
		return l.seekLTBounded(i, ikey)
	}
	if !l.open(i) {
		return false
	}
	return l.skipBackward(l.iter.SeekLT(ikey))
}

func (l *levelIter) First() bool {
	if !l.open(0) {
		return false
	}
	return l.skipForward(l.iter.First())
}

func (l *levelIter) Last() bool {
	if !l.open(len(l.files) - 1) {
		return false
	}
	return l.skipBackward(l.iter.Last())
}

func (l *levelIter) Next() bool {
	if l.iter == nil {
		return false
	}
	return l.skipForward(l.iter.Next())
}

func (l *levelIter) Prev() bool {
	if l.iter == nil {
		return false
	}
	return l.skipBackward(l.iter.Prev())
}

func (l *levelIter) Valid() bool   { return l.err == nil && l.iter != nil && l.iter.Valid() }
func (l *levelIter) Key() []byte   { return l.iter.Key() }
func (l *levelIter) Value() []byte { return l.iter.Value() }
func (l *levelIter) Error() error  { return l.err }

func (l *levelIter) Close() error {
	l.closeCurrent()
	l.spare = nil
	return l.err
}

// Range filters on the read path (Options.RangeFilterBitsPerKey), and
// the metrics that count what they did (RangeFilterMetrics).
//
// A bounded seek asks each candidate table's range filter whether the
// table holds any entry in the range the seek can show -- [key, UpperBound)
// for SeekGE, [LowerBound, key] for SeekLT -- and skips it, unread, on a
// "no". What makes that safe:
//
//   - The filters hold the user key of every point entry, tombstones and
//     every version included, so a skipped table holds nothing the seek
//     could show or that could hide something shown (a point tombstone in
//     range keeps its table). Range tombstones are not in the filters and
//     need not be: the iterator takes them from every table its bounds
//     overlap (Iterator.setRangeDels), skipped or not. Snapshots change
//     nothing: a table with no key in range has none at any sequence.
//   - Memtables are never skipped.
//   - A level left exhausted by skipping (l.skipped) is not where the
//     merging iterator's direction switch expects an exhausted child to
//     be: it may hold keys beyond the bounds, or before the seek key. The
//     merging iterator therefore re-seeks every child when it turns around
//     after such a seek (internal/iterator, SeekSkipped), as it does after
//     prefix seeks; and Visible never shows a key outside its bounds.
//
// A table that the filter let through but that holds no entry in the
// range is a range-filter false positive, counted per level.

// scanBounds are an iterator's bounds as its levels see them: shared by
// the Iterator and its levelIters, replaced by SetBounds. nil: unbounded.
// filters is false with Options.IgnoreRangeFilters: the levels then stop
// at the bounds but never ask a range filter, so the two modes differ
// only in what the filters do.
type scanBounds struct {
	lower, upper []byte
	filters      bool
	scratch      []byte // SeekLT's inclusive end
}

// SeekSkipped reports whether the last SeekGE or SeekLT left the level
// exhausted while it holds entries it did not position on: tables skipped
// on their range filter, or a table beyond the bounds.
func (l *levelIter) SeekSkipped() bool { return l.skipped }

// openInRange makes table i the level's iterator (unpositioned) unless
// its range filter rules out every user key in [lo, hi): opened says it
// did, filtered that a range filter was asked and said maybe, failed that
// the table could not be opened (l.find recorded the error).
func (l *levelIter) openInRange(i int, lo, hi []byte) (opened, filtered, failed bool) {
	r, release := l.find(i)
	if r == nil {
		return false, false, true
	}
	may := true
	if l.scan.filters {
		may, filtered = r.RangeMayMatch(lo, hi, l.stats)
	}
	if !may {
		release()
		return false, false, false
	}
	l.iter, l.close = r.ReuseIterReleasing(l.spare, true, l.stats), release
	l.spare = nil
	return true, filtered, false
}

// seekGEBounded is SeekGE(ikey) from file i on, for an iterator with an
// upper bound: the tables that cannot hold [UserKey(ikey), upper) -- that
// start at or after upper, or whose range filter rules the range out --
// are not read. When none is left the level is exhausted (skipped), with
// no block read.
func (l *levelIter) seekGEBounded(i int, ikey []byte) bool {
	lo, hi := base.UserKey(ikey), l.scan.upper
	for ; i < len(l.files) && bytes.Compare(lo, hi) < 0 && bytes.Compare(l.files[i].SmallestUserKey(), hi) < 0; i++ {
		opened, filtered, failed := l.openInRange(i, lo, hi)
		if failed {
			return false
		}
		if opened {
			ok := l.iter.SeekGE(ikey)
			if filtered && l.stats != nil && (!ok || bytes.Compare(base.UserKey(l.iter.Key()), hi) >= 0) {
				l.stats.RangeFilterFalsePositives.Add(1)
			}
			return l.skipForward(ok)
		}
		if l.files[i] == l.seekFile {
			l.seekFile = nil // the seek read nothing there
		}
	}
	// Nothing of this level lies in range; it may hold entries beyond it
	// (or in skipped tables) that a turn must not miss.
	l.closeCurrent()
	l.index, l.skipped = len(l.files), true
	return false
}

// seekLTBounded is SeekGE's mirror for an iterator with a lower bound:
// entries before ikey have user keys up to UserKey(ikey) (newer versions
// of it sort before it), so the range is [lower, UserKey(ikey)].
func (l *levelIter) seekLTBounded(i int, ikey []byte) bool {
	lower := l.scan.lower
	u := base.UserKey(ikey)
	hi := append(append(l.scan.scratch[:0], u...), 0)
	l.scan.scratch = hi
	for ; i >= 0 && bytes.Compare(lower, hi) < 0 && bytes.Compare(l.files[i].LargestUserKey(), lower) >= 0; i-- {
		opened, filtered, failed := l.openInRange(i, lower, hi)
		if failed {
			return false
		}
		if opened {
			ok := l.iter.SeekLT(ikey)
			if filtered && l.stats != nil && (!ok || bytes.Compare(base.UserKey(l.iter.Key()), lower) < 0) {
				l.stats.RangeFilterFalsePositives.Add(1)
			}
			return l.skipBackward(ok)
		}
	}
	l.closeCurrent()
	l.index, l.skipped = -1, true
	return false
}

// RangeFilterMetrics count what range filters did for bounded seeks
// (Options.RangeFilterBitsPerKey), per level in LevelMetrics and summed
// in Metrics. Measured in the level iterators where the tables are
// skipped or read.
type RangeFilterMetrics struct {
	// Probes counts the tables whose range filter a bounded seek asked.
	Probes uint64
	// Negatives counts those skipped: the filter said the range was
	// empty, and no index or data block of the table was read.
	Negatives uint64
	// FalsePositives counts tables the filter let through that held no
	// entry in the range (the seek read a block for nothing).
	FalsePositives uint64
}

func (a RangeFilterMetrics) sub(b RangeFilterMetrics) RangeFilterMetrics {
	return RangeFilterMetrics{a.Probes - b.Probes, a.Negatives - b.Negatives, a.FalsePositives - b.FalsePositives}
}

func (a *RangeFilterMetrics) add(b RangeFilterMetrics) {
	a.Probes += b.Probes
	a.Negatives += b.Negatives
	a.FalsePositives += b.FalsePositives
}

// FPR returns FalsePositives / (FalsePositives + Negatives): of the
// tables that held nothing in range (as far as the filter was asked),
// the share it let through. 0 without any.
func (a RangeFilterMetrics) FPR() float64 {
	if a.FalsePositives+a.Negatives == 0 {
		return 0
	}
	return float64(a.FalsePositives) / float64(a.FalsePositives+a.Negatives)
}

// rangeFilterMetrics fills m's range-filter counters from the read shards.
func (db *DB) rangeFilterMetrics(m *Metrics) {
	for l := range m.Levels {
		var lm RangeFilterMetrics
		for i := range db.reads {
			is := &db.reads[i].iterLevels[l]
			lm.Probes += is.RangeFilterProbes.Load()
			lm.Negatives += is.RangeFilterNegatives.Load()
			lm.FalsePositives += is.RangeFilterFalsePositives.Load()
		}
		m.Levels[l].RangeFilter = lm
		m.RangeFilter.add(lm)
	}
}
