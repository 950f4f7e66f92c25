package iterator

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// benchChildren builds n children holding perChild entries each, interleaved
// so that the merge alternates between children; each user key has one
// version, and every tenth is a tombstone when withDeletes is set.
func benchChildren(n, perChild int, withDeletes bool) []base.InternalIterator {
	children := make([]base.InternalIterator, n)
	for c := 0; c < n; c++ {
		keys := make([][]byte, perChild)
		vals := make([][]byte, perChild)
		for i := 0; i < perChild; i++ {
			j := i*n + c
			kind := base.KindSet
			if withDeletes && j%10 == 0 {
				kind = base.KindDelete
			}
			keys[i] = base.MakeInternalKey(fmt.Appendf(nil, "key%08d", j), uint64(j+1), kind)
			vals[i] = fmt.Appendf(nil, "value%08d-padding-to-32-bytes", j)
		}
		children[c] = NewSliceIter(keys, vals)
	}
	return children
}

func BenchmarkMergingNext4(b *testing.B) {
	it := NewMerging(benchChildren(4, 25000, false)...)
	b.ReportAllocs()
	it.First()
	for b.Loop() {
		if !it.Next() {
			it.First()
		}
	}
}

func BenchmarkMergingPrev4(b *testing.B) {
	it := NewMerging(benchChildren(4, 25000, false)...)
	b.ReportAllocs()
	it.Last()
	for b.Loop() {
		if !it.Prev() {
			it.Last()
		}
	}
}

func BenchmarkMergingSeekGE4(b *testing.B) {
	it := NewMerging(benchChildren(4, 25000, false)...)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = base.MakeSearchKey(fmt.Appendf(nil, "key%08d", (i*7919)%100000), base.MaxSeq)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		it.SeekGE(keys[i%len(keys)])
		i++
	}
}

func BenchmarkVisibleNext4(b *testing.B) {
	v := NewVisible(NewMerging(benchChildren(4, 25000, true)...), base.MaxSeq, nil, nil)
	b.ReportAllocs()
	v.First()
	for b.Loop() {
		if !v.Next() {
			v.First()
		}
	}
}

func BenchmarkVisiblePrev4(b *testing.B) {
	v := NewVisible(NewMerging(benchChildren(4, 25000, true)...), base.MaxSeq, nil, nil)
	b.ReportAllocs()
	v.Last()
	for b.Loop() {
		if !v.Prev() {
			v.Last()
		}
	}
}
