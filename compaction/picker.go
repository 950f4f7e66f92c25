package compaction

import (
	"bytes"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Options are the shape parameters of the leveled tree.
type Options struct {
	// L0CompactionThreshold: level 0 is compacted when it holds this many
	// tables.
	L0CompactionThreshold int
	// LBaseMaxBytes is level 1's size target; level n's is
	// LBaseMaxBytes * LevelMultiplier^(n-1).
	LBaseMaxBytes   int64
	LevelMultiplier int
	// TargetFileSize is where outputs into level 1 (and level 0) are
	// split; level n's outputs are split at TargetFileSize *
	// TargetFileSizeMultiplier^(n-1) (a multiplier of 0 counts as 1).
	TargetFileSize           int64
	TargetFileSizeMultiplier int
}

// TargetFileSizeAt returns where outputs into level are split. Tables grow
// with depth so that a large tree holds a few thousand tables, not tens of
// thousands (every open table holds a descriptor, an index and a filter):
// each level is LevelMultiplier times the one above, and its tables
// TargetFileSizeMultiplier times larger, so deep levels do not multiply
// the table count by LevelMultiplier each.
func (o Options) TargetFileSizeAt(level int) int64 {
	t := o.TargetFileSize
	for l := 1; l < level && o.TargetFileSizeMultiplier > 1; l++ {
		t *= int64(o.TargetFileSizeMultiplier)
	}
	return t
}

// MaxGrandparentOverlapBytes bounds how much of the level after the output
// level one output table into level may overlap, so that a later
// compaction of that table stays small.
func (o Options) MaxGrandparentOverlapBytes(level int) int64 { return 10 * o.TargetFileSizeAt(level) }

// LevelMaxBytes returns the size target of level (>= 1).
func (o Options) LevelMaxBytes(level int) float64 {
	t := float64(o.LBaseMaxBytes)
	for l := 1; l < level; l++ {
		t *= float64(o.LevelMultiplier)
	}
	return t
}

// Compaction describes one merge: Inputs[0] from Level and Inputs[1], their
// overlap, from OutputLevel = Level+1.
type Compaction struct {
	Level, OutputLevel int
	Inputs             [2][]*manifest.FileMetadata
	// Grandparents are the files of OutputLevel+1 overlapping the inputs.
	Grandparents []*manifest.FileMetadata
	Score        float64
}

// Scores returns each level's compaction score: level 0 by table count over
// the threshold, deeper levels by bytes over their target. A score >= 1
// means the level is due. The last level is never scored.
func Scores(v *manifest.Version, o Options) [manifest.NumLevels]float64 {
	var s [manifest.NumLevels]float64
	s[0] = float64(len(v.Levels[0])) / float64(o.L0CompactionThreshold)
	for l := 1; l < manifest.NumLevels-1; l++ {
		s[l] = float64(v.LevelBytes(l)) / o.LevelMaxBytes(l)
	}
	return s
}

// Pick returns the compaction the tree needs most, or nil when no level is
// due. pointers[level] is the largest user key of the last compaction of
// that level; the next one starts after it (round robin).
func Pick(v *manifest.Version, pointers map[int][]byte, o Options) *Compaction {
	scores := Scores(v, o)
	best := -1
	for l := 0; l < manifest.NumLevels-1; l++ {
		if scores[l] >= 1 && (best < 0 || scores[l] > scores[best]) {
			best = l
		}
	}
	if best < 0 {
		return nil
	}
	c := &Compaction{Level: best, OutputLevel: best + 1, Score: scores[best]}
	files := v.Levels[best]
	if best == 0 {
		// The oldest table, with every level-0 table overlapping it (so that
		// newer versions of a key never stay above older ones).
		c.Inputs[0] = expandL0(files, files[len(files)-1])
	} else {
		pick := files[0]
		if p, ok := pointers[best]; ok {
			for _, f := range files {
				if bytes.Compare(base.UserKey(f.Largest), p) > 0 {
					pick = f
					break
				}
			}
		}
		c.Inputs[0] = []*manifest.FileMetadata{pick}
	}
	c.fill(v)
	return c
}

// PickRange returns a compaction of every file of level overlapping the
// user-key range [start, end] (nil = unbounded) into level+1, or nil when
// level holds none or is the last level (nothing lies below it).
func PickRange(v *manifest.Version, level int, start, end []byte) *Compaction {
	if level < 0 || level >= manifest.NumLevels-1 {
		return nil
	}
	in := v.Overlaps(level, start, end)
	if len(in) == 0 {
		return nil
	}
	if level == 0 {
		// Take the transitive overlap closure within level 0.
		in = expandL0(v.Levels[0], in...)
	}
	c := &Compaction{Level: level, OutputLevel: level + 1, Inputs: [2][]*manifest.FileMetadata{in}}
	c.fill(v)
	return c
}

// fill adds the overlapping files of the output level and the grandparents.
func (c *Compaction) fill(v *manifest.Version) {
	lo, hi := KeyRange(c.Inputs[0])
	c.Inputs[1] = v.Overlaps(c.OutputLevel, lo, hi)
	all := append(append([]*manifest.FileMetadata{}, c.Inputs[0]...), c.Inputs[1]...)
	lo, hi = KeyRange(all)
	if c.OutputLevel+1 < manifest.NumLevels {
		c.Grandparents = v.Overlaps(c.OutputLevel+1, lo, hi)
	}
}

// expandL0 returns the level-0 files overlapping the seeds, transitively.
func expandL0(l0 []*manifest.FileMetadata, seeds ...*manifest.FileMetadata) []*manifest.FileMetadata {
	in := map[*manifest.FileMetadata]bool{}
	for _, s := range seeds {
		in[s] = true
	}
	for changed := true; changed; {
		changed = false
		lo, hi := KeyRange(keys(in))
		for _, f := range l0 {
			if !in[f] && f.Overlaps(lo, hi) {
				in[f] = true
				changed = true
			}
		}
	}
	var out []*manifest.FileMetadata
	for _, f := range l0 { // keep level-0 order (newest first)
		if in[f] {
			out = append(out, f)
		}
	}
	return out
}

func keys(m map[*manifest.FileMetadata]bool) []*manifest.FileMetadata {
	out := make([]*manifest.FileMetadata, 0, len(m))
	for f := range m {
		out = append(out, f)
	}
	return out
}

// KeyRange returns the smallest and largest user keys of files.
func KeyRange(files []*manifest.FileMetadata) (lo, hi []byte) {
	for i, f := range files {
		s, l := base.UserKey(f.Smallest), base.UserKey(f.Largest)
		if i == 0 || bytes.Compare(s, lo) < 0 {
			lo = s
		}
		if i == 0 || bytes.Compare(l, hi) > 0 {
			hi = l
		}
	}
	return lo, hi
}

// TotalSize sums the files' sizes.
func TotalSize(files []*manifest.FileMetadata) int64 {
	var n int64
	for _, f := range files {
		n += int64(f.Size)
	}
	return n
}

// IsTrivialMove reports whether the compaction can move its single input
// table down a level without rewriting it: nothing in the output level
// overlaps and the grandparent overlap is small. A move keeps the table's
// old filter, so it is not used when filters must be rebuilt.
func (c *Compaction) IsTrivialMove(o Options) bool {
	return len(c.Inputs[0]) == 1 && len(c.Inputs[1]) == 0 &&
		TotalSize(c.Grandparents) <= o.MaxGrandparentOverlapBytes(c.OutputLevel)
}
