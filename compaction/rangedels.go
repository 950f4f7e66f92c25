package compaction

import (
	"sort"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/rangedel"
)

// How compaction treats range tombstones (see docs/range-deletions.md):
//
//   - a point entry covered by a newer tombstone of the compaction's
//     inputs in the same snapshot stripe (no snapshot at or above the
//     entry's sequence and below the tombstone's) is dropped, whatever the
//     level: no reader can see it (NewRangeDelFilter);
//   - a tombstone is dropped when no snapshot is older than it (so every
//     entry it covers here was dropped above) and no level below the
//     output overlaps its range (so it covers nothing elsewhere)
//     (KeptRangeDels);
//   - the others are written to the outputs, each clipped to its output's
//     share of the key space (the engine's output writer), so that every
//     output's bounds cover what it holds and adjacent outputs' bounds do
//     not touch.

// Stripe returns the index of the snapshot stripe holding seq: the first of
// snapshots (ascending) >= seq, or len(snapshots) for a version newer than
// every snapshot. Versions in one stripe are told apart by no snapshot.
func Stripe(snapshots []uint64, seq uint64) int {
	return sort.Search(len(snapshots), func(i int) bool { return snapshots[i] >= seq })
}

// NewRangeDelFilter wraps a compaction's merged inputs and drops, from a
// forward walk, the point entries that a range tombstone of rd (the inputs'
// tombstones) hides from every reader. Only First and Next may be used (as
// Iter does); snapshots are ascending.
func NewRangeDelFilter(in Input, rd *rangedel.List, snapshots []uint64) Input {
	return &rangeDelFilter{Input: in, rd: rd, snaps: snapshots}
}

type rangeDelFilter struct {
	Input
	rd    *rangedel.List
	snaps []uint64
}

func (f *rangeDelFilter) First() bool { return f.skip(f.Input.First()) }
func (f *rangeDelFilter) Next() bool  { return f.skip(f.Input.Next()) }

func (f *rangeDelFilter) skip(ok bool) bool {
	for ok {
		ukey, seq, _, valid := kv.ParseInternalKey(f.Key())
		if !valid || !f.hidden(ukey, seq) {
			return true // malformed keys are Iter's to report
		}
		ok = f.Input.Next()
	}
	return false
}

// hidden reports whether a tombstone newer than seq covers ukey within
// seq's snapshot stripe.
func (f *rangeDelFilter) hidden(ukey []byte, seq uint64) bool {
	t := f.rd.MaxSeq(ukey, kv.MaxSeq)
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
	return Stripe(f.snaps, oldest) == Stripe(f.snaps, seq)
}

// KeptRangeDels returns the range tombstones of a compaction's inputs (all)
// that its outputs in outputLevel of tree must keep, or nil: a tombstone
// goes when no snapshot is older than it and no level below the output
// overlaps its range.
func KeptRangeDels[T Table](all *rangedel.List, snapshots []uint64, tree Tree[T], outputLevel int) *rangedel.List {
	if all.Empty() {
		return nil
	}
	bottommost := func(start, end []byte) bool {
		for l := outputLevel + 1; l < NumLevels; l++ {
			if len(overlaps(tree, l, start, end)) > 0 {
				return false
			}
		}
		return true
	}
	keep := func(s rangedel.Span, seq uint64) bool {
		return !((len(snapshots) == 0 || snapshots[0] >= seq) && bottommost(s.Start, s.End))
	}
	return rangedel.NewList(all.Clip(nil, nil, keep))
}
