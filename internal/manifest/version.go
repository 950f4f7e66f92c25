package manifest

import (
	"bytes"
	"sort"
	"sync/atomic"
)

// Version is an immutable set of live tables. Levels[0] is ordered newest
// first (by LargestSeq descending, ties by FileNum descending) and may
// overlap; Levels[1..] are sorted by Smallest and never overlap (user-key
// ranges disjoint). Versions share slices and FileMetadata with the versions
// they were built from: never modify one.
//
// A version a VersionSet installed is reference counted: the set holds one
// reference while the version is current, and every reader that must keep
// the version's tables from deletion holds one (Ref, Unref). The set lists
// such a version as live until its last reference is dropped. A version no
// set installed (a Builder's result not yet applied) is not counted.
type Version struct {
	Levels [NumLevels][]*FileMetadata

	refs atomic.Int32
	set  *VersionSet // the set that installed it; nil before
	// attached is engine data kept with the version (see Attach).
	attached atomic.Value
}

// Level returns the tables of level (not to be modified). With it a
// *Version is a compaction.Tree[*FileMetadata]: the picker reads versions
// as they are, with no copy.
func (v *Version) Level(level int) []*FileMetadata { return v.Levels[level] }

// Ref takes a reference. The caller must already hold one, or hold a lock
// under which the version is current (see VersionSet.Current).
func (v *Version) Ref() { v.refs.Add(1) }

// Unref drops a reference. Dropping the last one removes the version from
// its set's live versions (its tables may then be deleted) and calls the
// set's Options.OnRelease, without locks.
func (v *Version) Unref() {
	n := v.refs.Add(-1)
	if n < 0 {
		panic("bloomkv/manifest: version reference count below zero")
	}
	if n == 0 && v.set != nil {
		v.set.release(v)
	}
}

// Refs returns the number of references (for tests and invariant checks).
func (v *Version) Refs() int32 { return v.refs.Load() }

// Attach keeps x with the version: data the engine derives from it (its
// tree-wide filter) and reads without a lock. The manifest never looks at
// it. Every Attach on one version must pass the same dynamic type, and x
// must not be a nil interface (a typed nil pointer clears it).
func (v *Version) Attach(x any) { v.attached.Store(x) }

// Attached returns what Attach last stored, or nil.
func (v *Version) Attached() any { return v.attached.Load() }

// NumFiles returns the number of tables in level.
func (v *Version) NumFiles(level int) int { return len(v.Levels[level]) }

// LevelBytes returns the total size of the tables in level.
func (v *Version) LevelBytes(level int) int64 {
	var n int64
	for _, f := range v.Levels[level] {
		n += int64(f.Size)
	}
	return n
}

// Overlaps returns the files of level whose user-key range intersects
// [smallest, largest] (user keys; nil smallest = -inf, nil largest = +inf),
// in the level's order. For level 0 it returns only the files that
// intersect the range itself (no closure over files that overlap those);
// levels >= 1 are binary searched. The result must not be modified; it may
// share memory with v.
func (v *Version) Overlaps(level int, smallest, largest []byte) []*FileMetadata {
	if smallest != nil && largest != nil && bytes.Compare(smallest, largest) > 0 {
		return nil
	}
	files := v.Levels[level]
	if level == 0 {
		var out []*FileMetadata
		for _, f := range files {
			if f.Overlaps(smallest, largest) {
				out = append(out, f)
			}
		}
		return out
	}
	// Files are disjoint and sorted, so both ends are monotone.
	lo := 0
	if smallest != nil {
		lo = FileFor(files, smallest)
	}
	hi := len(files)
	if largest != nil {
		hi = lo + sort.Search(len(files)-lo, func(i int) bool {
			return bytes.Compare(files[lo+i].SmallestUserKey(), largest) > 0
		})
	}
	if lo == hi {
		return nil
	}
	// Cap the capacity so an append by the caller cannot write into v.
	return files[lo:hi:hi]
}

// FileFor returns the index in files, a sorted level >= 1, of the first file
// whose largest user key is >= key: the only file that can hold key, if its
// smallest user key is <= key too. It returns len(files) when there is none.
func FileFor(files []*FileMetadata, key []byte) int {
	return sort.Search(len(files), func(i int) bool {
		return bytes.Compare(files[i].LargestUserKey(), key) >= 0
	})
}

// Overlaps reports whether f's user-key range meets [smallest, largest]
// (nil smallest = -inf, nil largest = +inf).
func (f *FileMetadata) Overlaps(smallest, largest []byte) bool {
	if smallest != nil && bytes.Compare(f.LargestUserKey(), smallest) < 0 {
		return false
	}
	if largest != nil && bytes.Compare(f.SmallestUserKey(), largest) > 0 {
		return false
	}
	return true
}
