package filterpolicy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// Property tests of the per-level policy on random trees described by
// hand (testdata/policy holds worked examples).

type descTree = Levels[*TableDesc]

func newDescPolicy(s Settings) *Policy[*TableDesc, *descTree] {
	return New[*TableDesc, *descTree](s, (*TableDesc).TableStats)
}

// randomTree returns a tree of up to 3 level-0 tables over the whole key
// space and levels 1..depth, each of disjoint tables over random parts of
// keys k0000..k9999, with random key counts growing with depth and
// random bits per key around 5.
func randomTree(r *rand.Rand, withL0 bool) *descTree {
	t := &descTree{}
	name := 0
	table := func(lo, hi int, keys uint64) *TableDesc {
		name++
		return &TableDesc{
			Name:     fmt.Sprint("t", name),
			Smallest: fmt.Appendf(nil, "k%04d", lo),
			Largest:  fmt.Appendf(nil, "k%04d", hi),
			Stats:    TableStats{FilterKeys: keys, Entries: keys, BitsPerKey: 2 + 6*r.Float64()},
		}
	}
	if withL0 {
		for range r.IntN(4) {
			t[0] = append(t[0], table(r.IntN(100), 9900+r.IntN(100), uint64(100+r.IntN(1000))))
		}
	}
	depth := 2 + r.IntN(4)
	scale := 1000.0
	for l := 1; l <= depth; l++ {
		scale *= 2 + 10*r.Float64()
		// Disjoint ranges: cut points over the key space, a table between
		// some pairs of them.
		cuts := []int{0, 9999}
		for range r.IntN(8) {
			cuts = append(cuts, r.IntN(10000))
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		for i := 0; i+1 < len(cuts); i++ {
			if l < depth && r.IntN(3) == 0 {
				continue // a gap: this level leaves part of the range
			}
			lo, hi := cuts[i], cuts[i+1]-1
			if i+2 == len(cuts) {
				hi = cuts[i+1]
			}
			frac := float64(hi-lo+1) / 10000
			t[l] = append(t[l], table(lo, hi, uint64(1+scale*frac)))
		}
	}
	return t
}

// levelKeys returns the keys of level l's tables.
func levelKeys(t *descTree, l int) float64 {
	var n float64
	for _, f := range t[l] {
		n += f.Stats.Keys()
	}
	return n
}

// TestPerLevelSpendsTheBudget: without level 0, the per-level choices for
// the levels of a tree (no write under way) spend the uniform setting's
// memory over its keys, up to the rounding to hundredths.
func TestPerLevelSpendsTheBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		tree := randomTree(r, false)
		uniform := 1 + 14*r.Float64()
		p := newDescPolicy(Settings{BitsPerKey: uniform, PerLevel: true})
		var keys, spent float64
		for l := 1; l < NumLevels; l++ {
			n := levelKeys(tree, l)
			if n == 0 {
				continue
			}
			b := p.BitsPerKey(tree, Write[*TableDesc]{Level: l})
			if b < 0 || b > MaxBits {
				t.Fatalf("tree %d: level %d gets %.2f bits/key", i, l, b)
			}
			keys += n
			spent += n * b
		}
		if got := spent / keys; math.Abs(got-uniform) > 0.005+1e-9 {
			t.Errorf("tree %d: levels spend %.4f bits/key, the uniform setting %.4f", i, got, uniform)
		}
	}
}

// TestPerLevelFavoursFewerKeysPerProbe: a level with fewer keys per absent
// key that probes it never gets fewer bits than one with more.
func TestPerLevelFavoursFewerKeysPerProbe(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	compared := 0
	for i := range 200 {
		tree := randomTree(r, r.IntN(2) == 0)
		p := newDescPolicy(Settings{BitsPerKey: 2 + 8*r.Float64(), PerLevel: true})
		keys, probed, _ := p.Shape(tree, 1, 0, nil)
		first := len(tree[0]) // runs: level-0 tables, then levels 1..
		bits := map[int]float64{}
		for l := 1; l < NumLevels; l++ {
			if len(tree[l]) > 0 {
				bits[l] = p.BitsPerKey(tree, Write[*TableDesc]{Level: l})
			}
		}
		for a := range bits {
			for b := range bits {
				pa, pb := keys[first+a-1]/probed[first+a-1], keys[first+b-1]/probed[first+b-1]
				if pa < pb {
					compared++
					if bits[a] < bits[b] {
						t.Errorf("tree %d: level %d (%.0f keys per probe) gets %.2f bits/key, level %d (%.0f) %.2f",
							i, a, pa, bits[a], b, pb, bits[b])
					}
				}
			}
		}
	}
	if compared < 200 {
		t.Fatalf("only %d comparisons", compared)
	}
}

// TestBudgetClosesTheGap: a write replacing a level's tables moves at most
// MaxBudgetCorrection from the per-level choice, and when within that
// bound leaves the tree spending the uniform setting's memory exactly
// (up to rounding), computed here from the tables' own bits.
func TestBudgetClosesTheGap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	closed := 0
	for i := range 300 {
		tree := randomTree(r, r.IntN(2) == 0)
		uniform := 2 + 8*r.Float64()
		p := newDescPolicy(Settings{BitsPerKey: uniform, PerLevel: true})
		l := 1 + r.IntN(LastLevel[*TableDesc](tree))
		replaced := tree[l]
		written := levelKeys(tree, l)
		if written == 0 {
			continue // an empty level: nothing replaced, nothing to correct by
		}
		monkey := p.BitsPerKey(tree, Write[*TableDesc]{Level: l})
		b := p.BitsPerKey(tree, Write[*TableDesc]{Level: l, Written: written, Replaced: replaced})
		if math.Abs(b-monkey) > MaxBudgetCorrection+0.01 {
			t.Fatalf("tree %d: level %d: %.2f bits/key, per-level choice %.2f: moved more than %d", i, l, b, monkey, MaxBudgetCorrection)
		}
		if math.Abs(b-monkey) >= MaxBudgetCorrection-0.01 || b <= 0.01 {
			continue // clamped
		}
		var keys, spent float64
		for ll := range NumLevels {
			if ll == l {
				continue
			}
			for _, f := range tree[ll] {
				keys += f.Stats.Keys()
				spent += f.Stats.BitsPerKey * float64(f.Stats.FilterKeys)
			}
		}
		after := (spent + written*b) / (keys + written)
		if math.Abs(after-uniform) > 0.005 {
			t.Errorf("tree %d: after a write of %.2f bits/key to level %d the tree spends %.4f bits/key, want %.4f",
				i, b, l, after, uniform)
		}
		closed++
	}
	if closed < 50 {
		t.Fatalf("only %d writes within the bound", closed)
	}
}

// TestCoverageMemo: a policy that remembers its last estimate answers
// every question as one that never saw the tree, whatever was asked
// before (writes to other levels, flushes, compactions, another tree).
func TestCoverageMemo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s := Settings{BitsPerKey: 5, PerLevel: true}
	warm := newDescPolicy(s)
	trees := []*descTree{randomTree(r, true), randomTree(r, true), randomTree(r, false)}
	for i := range 500 {
		tree := trees[r.IntN(len(trees))]
		w := Write[*TableDesc]{Level: r.IntN(NumLevels)}
		switch r.IntN(3) {
		case 0: // a flush
			w.Level, w.Incoming = 0, float64(r.IntN(2000))
		case 1: // a compaction from the level above
			if w.Level >= 2 && len(tree[w.Level-1]) > 0 {
				w.Leaving = tree[w.Level-1][:1]
				w.Incoming = w.Leaving[0].Stats.Keys()
			}
		}
		got := warm.BitsPerKey(tree, w)
		gotKeys, gotProbed, _ := warm.Shape(tree, w.Level, w.Incoming, w.Leaving)
		fresh := newDescPolicy(s)
		want := fresh.BitsPerKey(tree, w)
		wantKeys, wantProbed, _ := newDescPolicy(s).Shape(tree, w.Level, w.Incoming, w.Leaving)
		if got != want || !slices.Equal(gotKeys, wantKeys) || !slices.Equal(gotProbed, wantProbed) {
			t.Fatalf("query %d (%+v): warm policy %.2f bits/key, probed %v; fresh %.2f, %v", i, w, got, gotProbed, want, wantProbed)
		}
	}
}

// TestPolicyConcurrent asks one policy about two trees from several
// goroutines (run under -race): the memo is shared.
func TestPolicyConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	trees := []*descTree{randomTree(r, true), randomTree(r, true)}
	p := newDescPolicy(Settings{BitsPerKey: 5, PerLevel: true})
	want := make([][NumLevels]float64, len(trees))
	for i, tree := range trees {
		for l := range NumLevels {
			want[i][l] = newDescPolicy(p.Settings).BitsPerKey(tree, Write[*TableDesc]{Level: l})
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				k, l := (g+i)%len(trees), i%NumLevels
				if got := p.BitsPerKey(trees[k], Write[*TableDesc]{Level: l}); got != want[k][l] {
					t.Errorf("tree %d level %d: %.2f bits/key, want %.2f", k, l, got, want[k][l])
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkBitsPerKey is the cost a flush or compaction pays to start a
// table: a tree of about a hundred tables, the memo warm for flushes.
func BenchmarkBitsPerKey(b *testing.B) {
	tree := &descTree{}
	for l := 1; l <= 3; l++ {
		n := 4 * l * l * l
		for i := range n {
			tree[l] = append(tree[l], &TableDesc{
				Smallest: fmt.Appendf(nil, "k%06d", i*1000000/n),
				Largest:  fmt.Appendf(nil, "k%06d", (i+1)*1000000/n-1),
				Stats:    TableStats{FilterKeys: 10000, Entries: 10000, BitsPerKey: 5},
			})
		}
	}
	p := newDescPolicy(Settings{BitsPerKey: 5, PerLevel: true})
	b.Run("flush", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.BitsPerKey(tree, Write[*TableDesc]{Incoming: 5000, Written: 5000})
		}
	})
	b.Run("compaction", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.CompactionBits(tree, 2, 3, tree[2][:1], tree[3][:8])
		}
	})
}
