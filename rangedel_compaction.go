package bloomkv

import (
	"bytes"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// How compaction treats range tombstones (see docs/range-deletions.md):
//
//   - a point entry covered by a newer tombstone of the compaction's
//     inputs in the same snapshot stripe (no snapshot at or above the
//     entry's sequence and below the tombstone's) is dropped, whatever the
//     level: no reader can see it;
//   - a tombstone is dropped when no snapshot is older than it (so every
//     entry it covers here was dropped above) and no level below the
//     output overlaps its range (so it covers nothing elsewhere);
//   - the others are written to the outputs, each clipped to its output's
//     share of the key space, so that every output's bounds cover what it
//     holds and adjacent outputs' bounds do not touch.

// stripeOf returns the index of the first snapshot >= seq (len(snaps) when
// none): versions with the same stripe are told apart by no snapshot.
func stripeOf(snaps []uint64, seq uint64) int {
	return sort.Search(len(snaps), func(i int) bool { return snaps[i] >= seq })
}

// rangeDelFilter drops, from a forward walk of a compaction's merged
// inputs, the point entries that a range tombstone of the inputs hides from
// every reader. Only First and Next are used (compaction.Iter).
type rangeDelFilter struct {
	base.InternalIterator
	rd    *rangedel.List
	snaps []uint64 // ascending
}

func (f *rangeDelFilter) First() bool { return f.skip(f.InternalIterator.First()) }
func (f *rangeDelFilter) Next() bool  { return f.skip(f.InternalIterator.Next()) }

func (f *rangeDelFilter) skip(ok bool) bool {
	for ok {
		ukey, seq, _, valid := base.ParseInternalKey(f.Key())
		if !valid || !f.hidden(ukey, seq) {
			return true // malformed keys are compaction.Iter's to report
		}
		ok = f.InternalIterator.Next()
	}
	return false
}

// hidden reports whether a tombstone newer than seq covers ukey within
// seq's snapshot stripe.
func (f *rangeDelFilter) hidden(ukey []byte, seq uint64) bool {
	t := f.rd.MaxSeq(ukey, base.MaxSeq)
	if t <= seq {
		return false
	}
	// The oldest covering tombstone newer than seq has the lowest stripe.
	oldest := t
	for _, q := range f.rd.SeqsAt(ukey) {
		if q > seq {
			oldest = q
		}
	}
	return stripeOf(f.snaps, oldest) == stripeOf(f.snaps, seq)
}

// compactionRangeDels returns the range tombstones of c's inputs that the
// outputs must keep (see above), or nil.
func (db *DB) compactionRangeDels(all *rangedel.List, snaps []uint64, v *manifest.Version, outputLevel int) *rangedel.List {
	if all.Empty() {
		return nil
	}
	bottommost := func(start, end []byte) bool {
		for l := outputLevel + 1; l < manifest.NumLevels; l++ {
			if len(v.Overlaps(l, start, end)) > 0 {
				return false
			}
		}
		return true
	}
	keep := func(s rangedel.Span, seq uint64) bool {
		return !((len(snaps) == 0 || snaps[0] >= seq) && bottommost(s.Start, s.End))
	}
	return rangedel.NewList(all.Clip(nil, nil, keep))
}

// keySuccessor returns the smallest key after k: k followed by a zero byte.
func keySuccessor(k []byte) []byte {
	return append(bytes.Clone(k), 0)
}
