package bloomkv

import (
	"bytes"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Range filters on the read path (Options.RangeFilterBitsPerKey).
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

// seekGEBounded is SeekGE(ikey) from file i on, for an iterator with an
// upper bound: the tables that cannot hold [UserKey(ikey), upper) -- that
// start at or after upper, or whose range filter rules the range out --
// are not read. When none is left the level is exhausted (skipped), with
// no block read.
func (l *levelIter) seekGEBounded(i int, ikey []byte) bool {
	lo, hi := base.UserKey(ikey), l.scan.upper
	for ; i < len(l.files) && bytes.Compare(lo, hi) < 0 && bytes.Compare(l.files[i].SmallestUserKey(), hi) < 0; i++ {
		r, release := l.find(i)
		if r == nil {
			return false
		}
		may, filtered := true, false
		if l.scan.filters {
			may, filtered = r.RangeMayMatch(lo, hi, l.stats)
		}
		if may {
			l.iter, l.close = r.ReuseIterReleasing(l.spare, true, l.stats), release
			l.spare = nil
			ok := l.iter.SeekGE(ikey)
			if filtered && l.stats != nil && (!ok || bytes.Compare(base.UserKey(l.iter.Key()), hi) >= 0) {
				l.stats.RangeFilterFalsePositives.Add(1)
			}
			return l.skipForward(ok)
		}
		release()
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
		r, release := l.find(i)
		if r == nil {
			return false
		}
		may, filtered := true, false
		if l.scan.filters {
			may, filtered = r.RangeMayMatch(lower, hi, l.stats)
		}
		if may {
			l.iter, l.close = r.ReuseIterReleasing(l.spare, true, l.stats), release
			l.spare = nil
			ok := l.iter.SeekLT(ikey)
			if filtered && l.stats != nil && (!ok || bytes.Compare(base.UserKey(l.iter.Key()), lower) < 0) {
				l.stats.RangeFilterFalsePositives.Add(1)
			}
			return l.skipBackward(ok)
		}
		release()
	}
	l.closeCurrent()
	l.index, l.skipped = -1, true
	return false
}
