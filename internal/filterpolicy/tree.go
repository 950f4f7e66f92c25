package filterpolicy

import (
	"bytes"
	"sort"
)

// The policy's view of a tree: Table and Tree, what it knows of a table
// (TableStats), and a tree described by hand (Levels of *TableDesc).

// NumLevels is the number of levels of a Tree.
const NumLevels = 7

// Table is one table of a Tree, by handle: == is identity.
type Table interface {
	comparable
	// SmallestUserKey and LargestUserKey bound every user key the table
	// holds, inclusive.
	SmallestUserKey() []byte
	LargestUserKey() []byte
}

// Tree is the live tables by level (see the package doc for the
// invariants it keeps). It is comparable: the policy remembers its
// coverage estimate for the last tree it was asked about.
type Tree[T Table] interface {
	comparable
	Level(level int) []T
}

// TableStats is what the policy knows of a table's filter. The zero value
// stands for a table that cannot be read: it counts nowhere.
type TableStats struct {
	// FilterKeys is the number of keys its filter indexes (0 without a
	// filter).
	FilterKeys uint64
	// Entries is the table's entries: what a filter would index, near
	// enough, for a table without one.
	Entries uint64
	// BitsPerKey is the bits per key its filter was written with (0: no
	// filter).
	BitsPerKey float64
}

// Keys returns the keys the table's filter indexes, or without a filter
// its entries.
func (s TableStats) Keys() float64 {
	if s.FilterKeys > 0 {
		return float64(s.FilterKeys)
	}
	return float64(s.Entries)
}

// TableDesc describes one table by hand: *TableDesc is a Table, and
// (*TableDesc).TableStats is a stats function for New.
type TableDesc struct {
	Name              string
	Smallest, Largest []byte // user keys, inclusive
	Stats             TableStats
}

// SmallestUserKey returns t.Smallest.
func (t *TableDesc) SmallestUserKey() []byte { return t.Smallest }

// LargestUserKey returns t.Largest.
func (t *TableDesc) LargestUserKey() []byte { return t.Largest }

// TableStats returns t.Stats.
func (t *TableDesc) TableStats() TableStats { return t.Stats }

// Levels is a Tree held in an array, e.g. of *TableDesc for a tree
// described by hand; *Levels is the Tree.
type Levels[T Table] [NumLevels][]T

// Level returns the tables of level.
func (l *Levels[T]) Level(level int) []T { return l[level] }

// LastLevel returns the deepest level of v holding a table (0 if none).
func LastLevel[T Table, V Tree[T]](v V) int {
	for l := NumLevels - 1; l > 0; l-- {
		if len(v.Level(l)) > 0 {
			return l
		}
	}
	return 0
}

// isLastLevel reports whether a table written to level would be in the
// tree's last level: level 1 or deeper, with nothing below it. Level 0 is
// never the last level (flushes keep their filters).
func isLastLevel[T Table, V Tree[T]](v V, level int) bool {
	return level >= 1 && level >= LastLevel[T](v)
}

// overlaps reports whether t's user-key range meets [smallest, largest]
// (nil smallest = -inf, nil largest = +inf).
func overlaps[T Table](t T, smallest, largest []byte) bool {
	if smallest != nil && bytes.Compare(t.LargestUserKey(), smallest) < 0 {
		return false
	}
	if largest != nil && bytes.Compare(t.SmallestUserKey(), largest) > 0 {
		return false
	}
	return true
}

// tableFor returns the index of the first of a level's sorted tables whose
// largest user key is at or after key (len(tables) if none).
func tableFor[T Table](tables []T, key []byte) int {
	return sort.Search(len(tables), func(i int) bool {
		return bytes.Compare(tables[i].LargestUserKey(), key) >= 0
	})
}
