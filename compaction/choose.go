package compaction

import (
	"bytes"
	"sort"
)

// The automatic compaction policy in one place. The engine observes what
// the tree's shape does not show -- writes have paused, reads keep paying
// for a table -- and passes it in as Triggers; Choose decides, by these
// rules in this order of precedence:
//
//  1. Size: a level over its target (level 0: at its table threshold) is
//     compacted first, the most urgent level first (Pick). Writes stall
//     behind these, so nothing else goes ahead of them.
//  2. Idle: once writes have paused (Triggers.IdleDue), all of level 0
//     moves into level 1 (under dynamic targets, Shape.L0Output), unless
//     that would rewrite more than IdleMaxRewrite bytes of that level per
//     byte of level 0 (a small flush overlapping all of it then waits for
//     the threshold).
//  3. Read-triggered: a table that reads kept passing on their way to a
//     deeper level's table (Triggers.ReadQueue, oldest first) is merged
//     into the level below when Triggers.ReadsDue, unless its overlap
//     there exceeds ReadMaxRewrite times its size.
//
// A manual request (Triggers.Manual: the engine's Compact and
// RebuildFilters) goes ahead of all three: its caller holds the
// compaction slot and waits, and the automatic rules are weighed again
// once it is done. Choose is the one entry point: every compaction the
// engine runs is one it returned.

// Reason says which rule chose a compaction.
type Reason int

const (
	ReasonNone   Reason = iota // nothing to do
	ReasonSize                 // a level over its size target
	ReasonIdle                 // writes paused with tables in level 0
	ReasonRead                 // reads paid for a table above a deeper one
	ReasonManual               // a manual merge of a key range into the level below
	ReasonStale                // a manual rewrite, in place, of stale tables
)

func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "none"
	case ReasonSize:
		return "size"
	case ReasonIdle:
		return "idle"
	case ReasonRead:
		return "read"
	case ReasonManual:
		return "manual"
	case ReasonStale:
		return "stale"
	}
	return "unknown"
}

// IdleMaxRewrite bounds what an idle compaction may rewrite of level 1 per
// byte of level 0 it moves down. After a fill, level 0 is a few memtables
// and level 1 about its target: 1-3 bytes per byte.
const IdleMaxRewrite = 10

// ReadMaxRewrite bounds the overlap below, per byte of the table, that a
// read-triggered compaction rewrites: a small level above a large one,
// each table spanning much of the key space, would otherwise rewrite much
// of the level below to save one probe.
const ReadMaxRewrite = 10

// ReadCandidate is a table of Level (1 or deeper, not the last) that reads
// queued for a merge into the level below.
type ReadCandidate[T Table] struct {
	Level int
	File  T
}

// Triggers are what the engine observed besides the tree's shape.
type Triggers[T Table] struct {
	// IdleDue: writes have paused for the idle delay.
	IdleDue bool
	// ReadsDue: read-triggered compactions may run now (writes paused,
	// and their budget allows one).
	ReadsDue bool
	// ReadQueue: the tables reads queued, oldest first.
	ReadQueue []ReadCandidate[T]
	// Manual, when set, is a compaction a caller asked for; Choose then
	// answers it alone (the fields above are not weighed).
	Manual *Manual[T]
}

// Manual is a compaction a caller asked for, of the tables of Level that
// overlap the user-key range [Start, End] (nil = unbounded on that side).
//
// Without Stale, they merge into the level below (level 0: into
// Shape.L0Output, where a size compaction of level 0 writes), with what
// they overlap there: a Choice with Reason ReasonManual, or none when
// Level holds no such table or is level NumLevels-1 (nothing lies below).
//
// With Stale, the tables for which it reports true (their filters or
// compression were written with other settings) are rewritten in Level
// itself (Level == OutputLevel): a Choice with Reason ReasonStale, one
// compaction per run of adjacent stale tables, so that no output can
// overlap a table left alone between two stale ones; with Alone, one per
// stale table, so that each keeps its bounds.
type Manual[T Table] struct {
	Level      int
	Start, End []byte
	Stale      func(T) bool
	Alone      bool
}

// Choice is Choose's answer.
type Choice[T Table] struct {
	// Compaction is nil when nothing is to be done.
	*Compaction[T]
	Reason Reason
	// IdleConsidered: the idle trigger was weighed (its compaction chosen,
	// declined, or nothing in level 0): the engine clears it.
	IdleConsidered bool
	// IdleDeclined: level 0 was judged not worth an idle compaction; the
	// engine need not ask again until the tree changes.
	IdleDeclined bool
	// ReadQueueUsed is how many entries at the head of the read queue were
	// weighed (the chosen one included): the engine drops them.
	ReadQueueUsed int
	// Rest are the compactions to run after Compaction, in order: only a
	// manual rewrite of stale tables (ReasonStale) has more than one.
	Rest []*Compaction[T]
}

// All returns the chosen compactions in the order to run them: Compaction,
// then Rest. It is empty when nothing is to be done.
func (ch Choice[T]) All() []*Compaction[T] {
	if ch.Compaction == nil {
		return nil
	}
	return append([]*Compaction[T]{ch.Compaction}, ch.Rest...)
}

// Choose returns the compaction the automatic policy wants now, by the
// rules above. pointers[level] is the largest user key of the last size
// compaction of that level (round robin).
func Choose[T Table](tree Tree[T], pointers map[int][]byte, o Options, t Triggers[T]) Choice[T] {
	if m := t.Manual; m != nil {
		return chooseManual(tree, ShapeOf(tree, o), m)
	}
	c, shape := pick(tree, pointers, o)
	if c != nil {
		return Choice[T]{Compaction: c, Reason: ReasonSize}
	}
	var ch Choice[T]
	if t.IdleDue {
		ch.IdleConsidered = true
		c := pickRange(tree, shape, 0, nil, nil)
		switch {
		case c == nil:
		case TotalSize(c.Inputs[1]) > IdleMaxRewrite*TotalSize(c.Inputs[0]):
			ch.IdleDeclined = true
		default:
			ch.Compaction, ch.Reason = c, ReasonIdle
			return ch
		}
	}
	if t.ReadsDue {
		var c *Compaction[T]
		c, ch.ReadQueueUsed = pickRead(tree, shape, t.ReadQueue)
		if c != nil {
			ch.Compaction, ch.Reason = c, ReasonRead
		}
	}
	return ch
}

// pickRead returns the compaction of the first queued table still where it
// was read into the level below, and how many queue entries it weighed.
func pickRead[T Table](tree Tree[T], shape Shape, queue []ReadCandidate[T]) (*Compaction[T], int) {
	for i, rc := range queue {
		if !InLevel(tree, rc.Level, rc.File) {
			continue
		}
		// Tables of levels >= 1 do not overlap: the range of rc.File picks
		// exactly rc.File.
		c := pickRange(tree, shape, rc.Level, rc.File.SmallestUserKey(), rc.File.LargestUserKey())
		if c == nil || TotalSize(c.Inputs[1]) > ReadMaxRewrite*TotalSize(c.Inputs[0]) {
			continue
		}
		return c, i + 1
	}
	return nil, len(queue)
}

// InLevel reports whether f is a table of level (>= 1) of tree.
func InLevel[T Table](tree Tree[T], level int, f T) bool {
	if level < 1 || level >= NumLevels {
		return false
	}
	// Levels >= 1 are sorted with disjoint user-key ranges: only the first
	// table whose largest user key is >= f's can be f.
	files := tree.Level(level)
	largest := f.LargestUserKey()
	i := sort.Search(len(files), func(i int) bool {
		return bytes.Compare(files[i].LargestUserKey(), largest) >= 0
	})
	return i < len(files) && files[i] == f
}

// chooseManual answers a manual request (see Manual).
func chooseManual[T Table](tree Tree[T], shape Shape, m *Manual[T]) Choice[T] {
	if m.Stale == nil {
		if c := pickRange(tree, shape, m.Level, m.Start, m.End); c != nil {
			return Choice[T]{Compaction: c, Reason: ReasonManual}
		}
		return Choice[T]{}
	}
	cs := pickStale(tree, shape, m)
	if len(cs) == 0 {
		return Choice[T]{}
	}
	return Choice[T]{Compaction: cs[0], Rest: cs[1:], Reason: ReasonStale}
}

// pickStale returns the in-place compactions of m.Level's stale tables in
// [m.Start, m.End]: one per run of adjacent stale tables, or with m.Alone
// one per table.
func pickStale[T Table](tree Tree[T], shape Shape, m *Manual[T]) []*Compaction[T] {
	var out []*Compaction[T]
	var run []T
	flush := func() {
		if len(run) > 0 {
			out = append(out, &Compaction[T]{Level: m.Level, OutputLevel: m.Level, Base: shape.Base, Inputs: [2][]T{run}})
			run = nil
		}
	}
	for _, f := range overlaps(tree, m.Level, m.Start, m.End) {
		if !m.Stale(f) {
			flush()
			continue
		}
		run = append(run, f)
		if m.Alone {
			flush()
		}
	}
	flush()
	return out
}
