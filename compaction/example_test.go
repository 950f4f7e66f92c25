package compaction_test

import (
	"fmt"

	"github.com/bloomkv/bloomkv/compaction"
)

func nums(ts []*compaction.TableDesc) []uint64 {
	var out []uint64
	for _, t := range ts {
		out = append(out, t.FileNum)
	}
	return out
}

// Describe a tree by hand and ask the picker what to compact.
func Example() {
	const mb = 1 << 20
	tree := &compaction.Levels[*compaction.TableDesc]{
		// Level 0, newest first: tables 9 and 7 overlap in [f, h].
		0: {
			{FileNum: 9, Size: 2 * mb, Smallest: []byte("f"), Largest: []byte("m")},
			{FileNum: 8, Size: 2 * mb, Smallest: []byte("t"), Largest: []byte("z")},
			{FileNum: 7, Size: 2 * mb, Smallest: []byte("a"), Largest: []byte("h")},
		},
		// Level 1, sorted, disjoint.
		1: {
			{FileNum: 4, Size: 3 * mb, Smallest: []byte("a"), Largest: []byte("d")},
			{FileNum: 5, Size: 3 * mb, Smallest: []byte("e"), Largest: []byte("k")},
			{FileNum: 6, Size: 3 * mb, Smallest: []byte("p"), Largest: []byte("s")},
		},
		2: {
			{FileNum: 2, Size: 20 * mb, Smallest: []byte("a"), Largest: []byte("g")},
			{FileNum: 3, Size: 20 * mb, Smallest: []byte("h"), Largest: []byte("z")},
		},
	}
	opts := compaction.Options{
		L0CompactionThreshold: 4,
		LBaseMaxBytes:         8 * mb,
		LevelMultiplier:       10,
		TargetFileSize:        2 * mb,
	}
	scores := compaction.Scores(tree, opts)
	fmt.Printf("scores: L0 %.2f, L1 %.2f, L2 %.2f\n", scores[0], scores[1], scores[2])

	// Level 1 holds 9 MiB against a target of 8: it is due. The table
	// with the least overlap in level 2 for its size goes down (6: 20 MiB
	// below its 3, where 5 has 40), with what it overlaps; among equals,
	// the first after the compact pointer ("d", the end of the last one).
	ch := compaction.Choose(tree, map[int][]byte{1: []byte("d")}, opts, compaction.Triggers[*compaction.TableDesc]{})
	fmt.Printf("choose: %s, L%d %v + L%d %v, score %.3f\n",
		ch.Reason, ch.Level, nums(ch.Inputs[0]), ch.OutputLevel, nums(ch.Inputs[1]), ch.Score)

	// Writes have paused: with level 1 below its target, Choose moves all
	// of level 0 down (the oldest table brings the ones overlapping it).
	tree[1] = tree[1][:2]
	ch = compaction.Choose(tree, nil, opts, compaction.Triggers[*compaction.TableDesc]{IdleDue: true})
	fmt.Printf("choose: %s, L%d %v + L%d %v\n",
		ch.Reason, ch.Level, nums(ch.Inputs[0]), ch.OutputLevel, nums(ch.Inputs[1]))

	// A caller asks for the range [a, c] of level 1 to be rewritten where
	// it is (RebuildFilters does, for tables whose filters are stale):
	// here table 4 is stale.
	ch = compaction.Choose(tree, nil, opts, compaction.Triggers[*compaction.TableDesc]{
		Manual: &compaction.Manual[*compaction.TableDesc]{
			Level: 1, Start: []byte("a"), End: []byte("c"),
			Stale: func(t *compaction.TableDesc) bool { return t.FileNum == 4 },
		},
	})
	fmt.Printf("choose: %s, L%d %v -> L%d\n", ch.Reason, ch.Level, nums(ch.Inputs[0]), ch.OutputLevel)
	// Output:
	// scores: L0 0.75, L1 1.12, L2 0.50
	// choose: size, L1 [6] + L2 [3], score 1.125
	// choose: idle, L0 [9 8 7] + L1 [4 5]
	// choose: stale, L1 [4] -> L1
}
