package compaction

import "math"

// Level size targets: static (from the top down) or dynamic (from the
// bottom up).
//
// Static targets (bloomkv.Options.StaticLevelBytes; the engine's default
// until 2026-12): level 1's target is LBaseMaxBytes and each
// level below is LevelMultiplier times the one above. Level 0 compacts into
// level 1. A tree's size decides how deep it reaches, and the last level
// holds whatever is left over: at 1.16 GB with the defaults, L1 9 MiB, L2
// 100 MiB, L3 993 MiB and L4 113 MiB, so the last level holds 9% of the
// data, and the 90% above it carries the older versions and tombstones
// that make space amplification, and the filters and probes of a level
// that need not exist.
//
// Dynamic targets (Options.DynamicLevelBytes, which the engine sets by
// default; RocksDB's
// level_compaction_dynamic_level_bytes, Pebble's only mode) size the tree
// from its last level up:
//
//   - the last level is the deepest level holding a table; its target is
//     its actual size (it is never due: nothing lies below it);
//   - each level above it is the one below divided by LevelMultiplier;
//   - the base level is the shallowest level whose target is still at
//     least LBaseMaxBytes/sqrt(LevelMultiplier) (the last level itself
//     when it is smaller than that). Levels above the base stay empty:
//     level 0 compacts straight into the base level. The base level's
//     target is thus within a factor sqrt(LevelMultiplier) of
//     LBaseMaxBytes either way ([3.2, 32) MiB with the defaults): the
//     level whose target is nearest LBaseMaxBytes on a log scale. Why not
//     bound it from below at LBaseMaxBytes (this rule's first version) or
//     from above (RocksDB, Pebble)? A level-0 compaction rewrites the
//     whole base level (level-0 tables span the key space), so a base up
//     to 10x LBaseMaxBytes made a 10M-key fill rewrite a 100 MiB level 5
//     for every 16 MiB of level 0 while level 6 was under 1 GiB, and gave
//     level 6 the small tables of a deep base; a base bounded from above
//     passes through one more level than needed. Measured on the same
//     10M-key fill (kvbench, docs/design-notes.md): write amplification
//     12.06 -> 11.77, tables 337 -> 208, tables per present Get 2.41 ->
//     1.94, CPU per present Get 5.83 -> 5.26 us; at 1M keys write
//     amplification 7.10 -> 6.46.
//
// About LevelMultiplier/(LevelMultiplier-1) of the data then sits in the
// last level (90% with the default multiplier), and as the tree grows the
// base level moves up one level each time the last level grows by
// LevelMultiplier.
//
// The decisions around that rule:
//
//   - An empty tree (no table below level 0) has its base and last level
//     at NumLevels-1: the first level-0 compactions write the deepest
//     level, which from then on is the last level, and the base moves up
//     from there. The last level never moves deeper afterwards (nothing
//     compacts out of it; Compact stops at the deepest level holding a
//     table); it moves up only if it empties. A tree built with static
//     targets and opened with dynamic ones keeps its last level where it
//     is (say level 4): the levels above drain toward it (below), and once
//     the base reaches level 1, level 1's target grows past LBaseMaxBytes
//     with the tree (the tree has run out of levels, as a RocksDB tree
//     does).
//   - Level 0 writes into the base level, unless a level above the base
//     still holds tables (the base moved down when the last level shrank,
//     or the tree was built with static targets): then into the shallowest
//     such level, so that newer versions of a key never land below older
//     ones.
//   - Scores: level 0 by table count, as with static targets; a level
//     from the base down to the one above the last by bytes over target;
//     an empty level above the base scores 0; a level above the base that
//     holds tables is due and drains into the level below: its score is
//     its bytes over the target it would have (the division continued
//     above the base, so below LBaseMaxBytes), and at least 1.
//   - Table sizes (TargetFileSizeMultiplier) count from the base level:
//     level 0's and the base level's outputs split at TargetFileSize, each
//     level below at TargetFileSizeMultiplier times the one above (levels
//     above the base, when draining, at TargetFileSize). A compaction's
//     tables are as large, relative to its levels, as with static targets
//     at the same depth below level 0, so compactions stay as short (one
//     runs at a time, and level 0 waits behind it); with the defaults at
//     1.16 GB the dynamic tree's bulk (L6, base L4) is in 8 MiB tables, as
//     the static tree's (L3 of L1-L4).
//   - Everything else is unchanged: a trivial move is still a single input
//     table with nothing to merge in the output level and little
//     grandparent overlap (the first level-0 tables of an empty tree move
//     to the last level unchanged); a level >= 1 always compacts into the
//     level below it, for size, read-triggered, range and manual
//     compactions alike; idle and range compactions of level 0 write where
//     a size compaction of level 0 would (Compact(nil, nil) thus leaves
//     one run in the last level). The engine's per-level settings
//     (LevelCompression, the per-level filter policy) stay keyed by the
//     absolute level; FilterSkipLastLevel's last level is the deepest
//     level holding a table, as Shape.Last. The engine's invariant checks
//     add one: a compaction that passes over levels (level 0 into the
//     base) overlaps no table in them.

// Shape is where a tree's levels stand under Options' size targets.
type Shape struct {
	// Base is the level level 0 compacts into when no level above it
	// holds a table: 1 under static targets.
	Base int
	// L0Output is the level a compaction of level 0 writes: Base, or
	// under dynamic targets the shallowest level above it that still
	// holds a table.
	L0Output int
	// Last is the deepest level holding a table (0: none). An empty tree
	// under dynamic targets has Base and L0Output NumLevels-1 and Last 0.
	Last int
	// MaxBytes[l] is level l's size target (l >= 1; MaxBytes[0] is 0).
	// Under dynamic targets the last level's is its size and the levels
	// below it have none (0).
	MaxBytes [NumLevels]float64
}

// ShapeOf returns tree's shape under o's targets.
func ShapeOf[T Table](tree Tree[T], o Options) Shape {
	s, _ := shapeOf(tree, o)
	return s
}

// shapeOf is ShapeOf, with each level's bytes (level 0's left 0).
func shapeOf[T Table](tree Tree[T], o Options) (s Shape, bytes [NumLevels]int64) {
	for l := 1; l < NumLevels; l++ {
		bytes[l] = tree.LevelBytes(l)
		if len(tree.Level(l)) > 0 {
			s.Last = l
		}
	}
	if !o.DynamicLevelBytes {
		s.Base, s.L0Output = 1, 1
		for l := 1; l < NumLevels; l++ {
			s.MaxBytes[l] = o.LevelMaxBytes(l)
		}
		return s, bytes
	}
	if s.Last == 0 {
		s.Base, s.L0Output = NumLevels-1, NumLevels-1
		return s, bytes
	}
	baseFloor := float64(o.LBaseMaxBytes) / math.Sqrt(float64(o.LevelMultiplier))
	s.Base = s.Last
	t := float64(bytes[s.Last])
	s.MaxBytes[s.Last] = t
	for l := s.Last - 1; l >= 1; l-- {
		t /= float64(o.LevelMultiplier)
		s.MaxBytes[l] = t
		if t >= baseFloor {
			s.Base = l
		}
	}
	s.L0Output = s.Base
	for l := 1; l < s.Base; l++ {
		if len(tree.Level(l)) > 0 {
			s.L0Output = l
			break
		}
	}
	return s, bytes
}

// OutputLevel returns the level a compaction of level writes: L0Output
// for level 0, the next level for the others.
func (s Shape) OutputLevel(level int) int {
	if level == 0 {
		return s.L0Output
	}
	return level + 1
}
