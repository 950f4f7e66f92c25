package compaction

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// benchVersion builds a tree of 4 overlapping level-0 tables and levels
// 1..5 of perLevel disjoint tables each (keys k0000000..), sized so that
// only level 0 is due.
func benchVersion(perLevel int) *manifest.Version {
	v := &manifest.Version{}
	key := func(i int) []byte { return fmt.Appendf(nil, "k%07d", i) }
	n := uint64(1)
	for i := 0; i < 4; i++ {
		v.Levels[0] = append(v.Levels[0], &manifest.FileMetadata{FileNum: n, Size: 1 << 20,
			Smallest: base.MakeInternalKey(key(i*perLevel/8), n, base.KindSet),
			Largest:  base.MakeInternalKey(key((i+1)*perLevel/8), n, base.KindSet)})
		n++
	}
	for l := 1; l < 6; l++ {
		for i := 0; i < perLevel; i++ {
			v.Levels[l] = append(v.Levels[l], &manifest.FileMetadata{FileNum: n, Size: 1 << 10,
				Smallest: base.MakeInternalKey(key(i*10), 1, base.KindSet),
				Largest:  base.MakeInternalKey(key(i*10+9), 1, base.KindSet)})
			n++
		}
	}
	return v
}

var benchOpts = Options{L0CompactionThreshold: 4, LBaseMaxBytes: 64 << 20, LevelMultiplier: 10, TargetFileSize: 2 << 20}

// BenchmarkChoose asks the picker what to do with a tree of 1000 tables
// per level: a size compaction of level 0 (expand, overlaps below), and a
// read-triggered one (InLevel, pickRange) when nothing is due.
func BenchmarkChoose(b *testing.B) {
	v := benchVersion(1000)
	b.Run("size", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ch := Choose(v, nil, benchOpts, Triggers[*manifest.FileMetadata]{}); ch.Compaction == nil {
				b.Fatal("no compaction")
			}
		}
	})
	idle := &manifest.Version{Levels: v.Levels}
	idle.Levels[0] = nil
	q := []ReadCandidate[*manifest.FileMetadata]{{Level: 2, File: v.Levels[2][500]}}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ch := Choose(idle, nil, benchOpts, Triggers[*manifest.FileMetadata]{ReadsDue: true, ReadQueue: q}); ch.Compaction == nil {
				b.Fatal("no compaction")
			}
		}
	})
}
