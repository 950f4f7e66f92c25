package treefilter

// What one step of the filter's upkeep has to apply: the tables two
// versions of the tree differ by, and which of them only changed level
// (a trivial move, which keeps its entries and their tag).

import "github.com/bloomkv/bloomkv/internal/manifest"

// LevelFile is a table and the level it is in (in the version it was
// taken from).
type LevelFile struct {
	Level int
	F     *manifest.FileMetadata
}

// Diff returns the tables of old that nv lacks (at their old level) and
// those of nv that old lacks (at their new level); a table that moved
// levels is in both.
func Diff(old, nv *manifest.Version) (removed, added []LevelFile) {
	at := map[uint64]int{}
	for l := range nv.Levels {
		for _, f := range nv.Levels[l] {
			at[f.FileNum] = l
		}
	}
	was := map[uint64]int{}
	for l := range old.Levels {
		for _, f := range old.Levels[l] {
			was[f.FileNum] = l
			if nl, ok := at[f.FileNum]; !ok || nl != l {
				removed = append(removed, LevelFile{l, f})
			}
		}
	}
	for l := range nv.Levels {
		for _, f := range nv.Levels[l] {
			if ol, ok := was[f.FileNum]; !ok || ol != l {
				added = append(added, LevelFile{l, f})
			}
		}
	}
	return removed, added
}

// MovedTables returns the tables in both removed and added (moved to
// another level unchanged), with their new level.
func MovedTables(removed, added []LevelFile) map[uint64]int {
	was := make(map[uint64]bool, len(removed))
	for _, lf := range removed {
		was[lf.F.FileNum] = true
	}
	moved := map[uint64]int{}
	for _, lf := range added {
		if was[lf.F.FileNum] {
			moved[lf.F.FileNum] = lf.Level
		}
	}
	return moved
}
