package rangedel

import (
	"bytes"
	"slices"
	"sort"
)

// Tombstone deletes every user key in [Start, End) whose versions are
// older than Seq.
type Tombstone struct {
	Start, End []byte
	Seq        uint64
}

// Span is a fragment: a key range [Start, End) that no other span of its
// List overlaps, and the sequences of every tombstone that covers it,
// newest first.
type Span struct {
	Start, End []byte
	Seqs       []uint64 // strictly descending, never empty
}

// List is a fragmented set of tombstones: spans in key order, none
// overlapping another. A nil *List holds nothing. A List is immutable, so
// any number of readers share it.
type List struct {
	spans []Span
	count int // (span, seq) pairs
}

// NewList returns the list of spans, which must already be fragmented (as
// Decode checks); it does not copy them.
func NewList(spans []Span) *List {
	if len(spans) == 0 {
		return nil
	}
	l := &List{spans: spans}
	for _, s := range spans {
		l.count += len(s.Seqs)
	}
	return l
}

// Spans returns the spans in key order; the caller must not modify them.
func (l *List) Spans() []Span {
	if l == nil {
		return nil
	}
	return l.spans
}

// Len returns the number of (span, sequence) pairs: how many tombstone
// fragments the list holds.
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	return l.count
}

// Empty reports whether the list holds no span.
func (l *List) Empty() bool { return l == nil || len(l.spans) == 0 }

// find returns the span that holds key, or nil.
func (l *List) find(key []byte) *Span {
	if l == nil {
		return nil
	}
	// The first span whose end is after key; it holds key if it starts at
	// or before it.
	i := sort.Search(len(l.spans), func(i int) bool { return bytes.Compare(l.spans[i].End, key) > 0 })
	if i < len(l.spans) && bytes.Compare(l.spans[i].Start, key) <= 0 {
		return &l.spans[i]
	}
	return nil
}

// MaxSeq returns the sequence of the newest tombstone covering key that is
// visible at readSeq (sequence <= readSeq), or 0 when there is none.
func (l *List) MaxSeq(key []byte, readSeq uint64) uint64 {
	s := l.find(key)
	if s == nil {
		return 0
	}
	for _, q := range s.Seqs {
		if q <= readSeq {
			return q
		}
	}
	return 0
}

// SeqsAt returns the sequences of the tombstones covering key, newest
// first (nil for none); the caller must not modify them.
func (l *List) SeqsAt(key []byte) []uint64 {
	if s := l.find(key); s != nil {
		return s.Seqs
	}
	return nil
}

// Covers reports whether a version of key with sequence seq is deleted as
// seen at readSeq: a tombstone with seq < its sequence <= readSeq covers
// key.
func (l *List) Covers(key []byte, seq, readSeq uint64) bool {
	return l.MaxSeq(key, readSeq) > seq
}

// Fragment splits tombstones into non-overlapping spans. Empty tombstones
// (Start >= End) are ignored. Spans alias the tombstones' keys.
func Fragment(ts []Tombstone) *List {
	ts = slices.DeleteFunc(slices.Clone(ts), func(t Tombstone) bool { return bytes.Compare(t.Start, t.End) >= 0 })
	if len(ts) == 0 {
		return nil
	}
	bounds := make([][]byte, 0, 2*len(ts))
	for _, t := range ts {
		bounds = append(bounds, t.Start, t.End)
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	slices.SortFunc(ts, func(a, b Tombstone) int { return bytes.Compare(a.Start, b.Start) })

	var spans []Span
	var active []Tombstone // tombstones that started at or before the current bound
	next := 0
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		for next < len(ts) && bytes.Compare(ts[next].Start, lo) <= 0 {
			active = append(active, ts[next])
			next++
		}
		active = slices.DeleteFunc(active, func(t Tombstone) bool { return bytes.Compare(t.End, lo) <= 0 })
		if len(active) == 0 {
			continue
		}
		seqs := make([]uint64, 0, len(active))
		for _, t := range active {
			seqs = append(seqs, t.Seq)
		}
		slices.SortFunc(seqs, func(a, b uint64) int {
			switch {
			case a > b:
				return -1
			case a < b:
				return 1
			}
			return 0
		})
		seqs = slices.Compact(seqs)
		spans = append(spans, Span{Start: lo, End: hi, Seqs: seqs})
	}
	return NewList(spans)
}

// Tombstones returns the tombstones the list holds, one per (span,
// sequence) pair; Fragment of them gives back the same list.
func (l *List) Tombstones() []Tombstone {
	var out []Tombstone
	for _, s := range l.Spans() {
		for _, q := range s.Seqs {
			out = append(out, Tombstone{Start: s.Start, End: s.End, Seq: q})
		}
	}
	return out
}

// Merge returns the fragmented union of lists (one of them when the others
// are empty).
func Merge(lists ...*List) *List {
	var only *List
	n := 0
	for _, l := range lists {
		if !l.Empty() {
			only = l
			n++
		}
	}
	if n <= 1 {
		return only
	}
	var ts []Tombstone
	for _, l := range lists {
		ts = append(ts, l.Tombstones()...)
	}
	return Fragment(ts)
}

// Clip returns the spans of l limited to [lo, hi) (nil lo or hi: unbounded
// on that side), with the sequences keep accepts (nil: all). Spans that end
// up empty are left out.
func (l *List) Clip(lo, hi []byte, keep func(s Span, seq uint64) bool) []Span {
	var out []Span
	for _, s := range l.Spans() {
		if lo != nil && bytes.Compare(s.End, lo) <= 0 {
			continue
		}
		if hi != nil && bytes.Compare(s.Start, hi) >= 0 {
			break
		}
		c := s
		if lo != nil && bytes.Compare(c.Start, lo) < 0 {
			c.Start = lo
		}
		if hi != nil && bytes.Compare(c.End, hi) > 0 {
			c.End = hi
		}
		if keep != nil {
			c.Seqs = nil
			for _, q := range s.Seqs {
				if keep(s, q) {
					c.Seqs = append(c.Seqs, q)
				}
			}
			if len(c.Seqs) == 0 {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// InclusiveEnd returns the largest user key a span ending at end can
// cover, for a table's inclusive key bounds: end itself (one key too many:
// safe, a bound may claim more than a table holds), or, when end is some
// key k followed by a zero byte, k exactly (every key below k\x00 is at
// most k). Compaction cuts spans at such ends so that adjacent tables'
// bounds do not touch.
func InclusiveEnd(end []byte) []byte {
	if n := len(end); n > 1 && end[n-1] == 0 {
		return end[:n-1]
	}
	return end
}
