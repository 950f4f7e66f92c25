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
type scanBounds struct {
	lower, upper []byte
	scratch      []byte // SeekLT's inclusive end
}

// SeekSkipped reports whether the last SeekGE or SeekLT left the level
// exhausted after skipping a table on its range filter.
func (l *levelIter) SeekSkipped() bool { return l.skipped }

// seekGEFiltered is SeekGE(ikey) from file i on, skipping the tables whose
// range filter rules out [UserKey(ikey), upper).
func (l *levelIter) seekGEFiltered(i int, ikey []byte) bool {
	lo, hi := base.UserKey(ikey), l.scan.upper
	skipped := false
	for ; i < len(l.files) && bytes.Compare(lo, hi) < 0 && bytes.Compare(l.files[i].SmallestUserKey(), hi) < 0; i++ {
		r, release := l.find(i)
		if r == nil {
			return false
		}
		may, filtered := r.RangeMayMatch(lo, hi, l.stats)
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
		skipped = true
		if l.files[i] == l.seekFile {
			l.seekFile = nil // the seek read nothing there
		}
	}
	if !skipped {
		if !l.open(i) {
			return false
		}
		return l.skipForward(l.iter.SeekGE(ikey))
	}
	// Tables holding nothing in range were skipped up to one that starts
	// at or after upper (or the end): nothing of this level is in range.
	l.closeCurrent()
	l.index, l.skipped = len(l.files), true
	return false
}

// seekLTFiltered is SeekLT(ikey) from file i back, skipping the tables
// whose range filter rules out [lower, UserKey(ikey)]: entries before
// ikey have user keys up to UserKey(ikey) (newer versions of it sort
// before it).
func (l *levelIter) seekLTFiltered(i int, ikey []byte) bool {
	lower := l.scan.lower
	u := base.UserKey(ikey)
	hi := append(append(l.scan.scratch[:0], u...), 0)
	l.scan.scratch = hi
	skipped := false
	for ; i >= 0 && bytes.Compare(lower, hi) < 0 && bytes.Compare(l.files[i].LargestUserKey(), lower) >= 0; i-- {
		r, release := l.find(i)
		if r == nil {
			return false
		}
		may, filtered := r.RangeMayMatch(lower, hi, l.stats)
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
		skipped = true
	}
	if !skipped {
		if !l.open(i) {
			return false
		}
		return l.skipBackward(l.iter.SeekLT(ikey))
	}
	l.closeCurrent()
	l.index, l.skipped = -1, true
	return false
}
