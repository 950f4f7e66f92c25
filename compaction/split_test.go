package compaction

import (
	"fmt"
	"testing"
)

// splitStarts feeds keys "k000".."k999" (one new user key each) to a
// splitter over grandparents gp, the output growing by step bytes per
// key, and returns the keys each output starts at.
func splitStarts(t *testing.T, gp []*TableDesc, target int64, step int64, keys int) []string {
	t.Helper()
	c := &Compaction[*TableDesc]{Level: 4, OutputLevel: 5, Base: 5, Grandparents: gp}
	o := Options{TargetFileSize: target, TargetFileSizeMultiplier: 2}
	s := c.Splitter(o)
	var starts []string
	var size int64
	for i := range keys {
		k := fmt.Sprintf("k%03d", i)
		if s.SplitBefore([]byte(k), size) || size == 0 {
			starts = append(starts, k)
			size = 0
		}
		size += step
	}
	return starts
}

func gpTable(lo, hi string, size uint64) *TableDesc {
	return &TableDesc{Smallest: []byte(lo), Largest: []byte(hi), Size: size}
}

func TestSplitterTargetSize(t *testing.T) {
	// No grandparents: outputs end at the target size only.
	got := splitStarts(t, nil, 100, 10, 35)
	want := []string{"k000", "k010", "k020", "k030"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("starts %v, want %v", got, want)
	}
}

func TestSplitterAlignsAtGrandparentBoundaries(t *testing.T) {
	// Grandparents end after k006, k013 and k027. An output ends at a
	// boundary once it is at least half the target (50 bytes, 5 keys):
	// k000-k006 (70 bytes at k007) ends there; k007-k013 (70) too; k014
	// reaches the target at k024 before the next boundary; k024-k027 is
	// 40 bytes at k028, too small, so it runs on to the target.
	gp := []*TableDesc{
		gpTable("k000", "k006", 1), gpTable("k007", "k013", 1),
		gpTable("k014", "k027", 1), gpTable("k028", "k999", 1),
	}
	got := splitStarts(t, gp, 100, 10, 40)
	want := []string{"k000", "k007", "k014", "k024", "k034"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("starts %v, want %v", got, want)
	}
}

func TestSplitterBoundaryBeforeFirstKeyIgnored(t *testing.T) {
	// Grandparents ending before the compaction's first key are not
	// overlapped: passing them must not end the first output early.
	gp := []*TableDesc{gpTable("a", "b", 1), gpTable("c", "d", 1), gpTable("k000", "k999", 1)}
	got := splitStarts(t, gp, 100, 10, 25)
	want := []string{"k000", "k010", "k020"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("starts %v, want %v", got, want)
	}
}

func TestSplitterGrandparentOverlapLimit(t *testing.T) {
	// Tiny outputs (1 byte a key, far below half the target) over large
	// grandparents: the overlap limit (10x the target of 100 = 1,000
	// bytes) ends an output once it has passed more than that, whatever
	// its size. Each grandparent is 900 bytes and two keys wide, so an
	// output passes its second at its fifth key.
	var gp []*TableDesc
	for i := 0; i < 20; i += 2 {
		gp = append(gp, gpTable(fmt.Sprintf("k%03d", i), fmt.Sprintf("k%03d", i+1), 900))
	}
	got := splitStarts(t, gp, 100, 1, 20)
	want := []string{"k000", "k004", "k008", "k012", "k016"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("starts %v, want %v", got, want)
	}
}
