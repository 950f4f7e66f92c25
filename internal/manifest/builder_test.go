package manifest

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func build(t *testing.T, base *Version, edits ...*VersionEdit) (*Version, error) {
	t.Helper()
	b := NewBuilder(base)
	for _, e := range edits {
		if err := b.Apply(e); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

func adds(level int, files ...*FileMetadata) *VersionEdit {
	e := &VersionEdit{}
	for _, f := range files {
		e.NewFiles = append(e.NewFiles, NewFileEntry{level, f})
	}
	return e
}

func TestBuilderOrdersLevels(t *testing.T) {
	v, err := build(t, nil,
		adds(0, meta(1, "a", "m", 10), meta(2, "c", "z", 30)),
		adds(0, meta(3, "b", "c", 20), meta(5, "x", "y", 30)),
		adds(2, meta(7, "p", "q", 1), meta(6, "a", "b", 1), meta(8, "c", "d", 1)),
	)
	if err != nil {
		t.Fatal(err)
	}
	got := fileNums(v)
	if !slices.Equal(got[0], []uint64{5, 2, 3, 1}) {
		t.Fatalf("L0 order %v, want newest first [5 2 3 1]", got[0])
	}
	if !slices.Equal(got[2], []uint64{6, 8, 7}) {
		t.Fatalf("L2 order %v, want by smallest [6 8 7]", got[2])
	}
}

func TestBuilderRejects(t *testing.T) {
	base, err := build(t, nil, adds(1, meta(1, "a", "c", 1)), adds(0, meta(2, "a", "z", 5)))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]*VersionEdit{
		"delete absent":         {DeletedFiles: []DeletedFileEntry{{1, 9}}},
		"delete wrong level":    {DeletedFiles: []DeletedFileEntry{{2, 1}}},
		"delete twice":          {DeletedFiles: []DeletedFileEntry{{1, 1}, {1, 1}}},
		"add live number":       adds(3, meta(2, "x", "y", 1)),
		"add number twice":      adds(3, meta(3, "a", "b", 1), meta(3, "c", "d", 1)),
		"invalid file":          adds(3, meta(4, "z", "a", 1)),
		"level out of range":    adds(NumLevels, meta(4, "a", "b", 1)),
		"missing metadata":      {NewFiles: []NewFileEntry{{Level: 1}}},
		"deleted then re-added": {DeletedFiles: []DeletedFileEntry{{0, 2}}, NewFiles: []NewFileEntry{{3, meta(5, "a", "b", 1)}, {4, meta(5, "a", "b", 1)}}},
	}
	for name, e := range cases {
		b := NewBuilder(base)
		err := b.Apply(e)
		if err == nil || !strings.HasPrefix(err.Error(), "bloomkv/manifest: apply version edit: ") {
			t.Errorf("%s: Apply = %v", name, err)
			continue
		}
		// A failed Apply changes nothing.
		v, err := b.Finish()
		if err != nil {
			t.Fatalf("%s: Finish after a failed Apply: %v", name, err)
		}
		if !reflect.DeepEqual(fileNums(v), fileNums(base)) {
			t.Errorf("%s: failed Apply changed the version: %v", name, fileNums(v))
		}
	}
}

func TestBuilderRejectsL1Overlap(t *testing.T) {
	_, err := build(t, nil, adds(1, meta(1, "a", "c", 1)), adds(1, meta(2, "c", "e", 1)))
	if err == nil || !strings.Contains(err.Error(), "level 1") || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("overlapping L1 files: %v", err)
	}
	// Overlap in L0 is fine.
	if _, err := build(t, nil, adds(0, meta(1, "a", "c", 1)), adds(0, meta(2, "c", "e", 2))); err != nil {
		t.Fatal(err)
	}
}

func TestBuilderMoveInOneEdit(t *testing.T) {
	f := meta(1, "a", "c", 1)
	base, err := build(t, nil, adds(1, f))
	if err != nil {
		t.Fatal(err)
	}
	move := &VersionEdit{DeletedFiles: []DeletedFileEntry{{1, 1}}, NewFiles: []NewFileEntry{{2, f}}}
	v, err := build(t, base, move)
	if err != nil {
		t.Fatal(err)
	}
	if v.NumFiles(1) != 0 || v.NumFiles(2) != 1 || v.Levels[2][0] != f {
		t.Fatalf("after move: %v", fileNums(v))
	}
	if base.NumFiles(1) != 1 {
		t.Fatal("building on base changed base")
	}
}

func TestBuilderSharesUntouchedLevels(t *testing.T) {
	base, err := build(t, nil, adds(1, meta(1, "a", "c", 1)), adds(3, meta(2, "a", "c", 1)))
	if err != nil {
		t.Fatal(err)
	}
	v, err := build(t, base, adds(1, meta(3, "d", "e", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if &v.Levels[3][0] != &base.Levels[3][0] {
		t.Fatal("untouched level 3 was copied")
	}
	if v.NumFiles(1) != 2 || base.NumFiles(1) != 1 {
		t.Fatal("level 1 not rebuilt")
	}
}

// TestBuilderAgainstModel applies random valid and invalid edits and
// compares with a plain map of live files.
func TestBuilderAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for round := range 50 {
		model := map[uint64]int{} // live file -> level
		var v *Version
		next := uint64(1)
		for step := range 30 {
			e := &VersionEdit{}
			for num, l := range model {
				if rng.IntN(4) == 0 {
					e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{l, num})
				}
			}
			wantErr := false
			if rng.IntN(10) == 0 && next > 1 {
				// Delete something that is not live (or not there).
				num := rng.Uint64N(next + 3)
				if l, ok := model[num]; !ok || rng.IntN(2) == 0 {
					e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{(l + 1) % NumLevels, num})
					wantErr = true
				}
			}
			for range rng.IntN(3) {
				e.NewFiles = append(e.NewFiles, NewFileEntry{0, randomFile(rng, next, 100)})
				next++
			}
			b := NewBuilder(v)
			err := b.Apply(e)
			if wantErr != (err != nil) {
				t.Fatalf("round %d step %d: Apply = %v, want error %v", round, step, err, wantErr)
			}
			if err != nil {
				continue
			}
			for _, d := range e.DeletedFiles {
				delete(model, d.FileNum)
			}
			for _, nf := range e.NewFiles {
				model[nf.Meta.FileNum] = nf.Level
			}
			if v, err = b.Finish(); err != nil {
				t.Fatal(err)
			}
			n := 0
			for l, files := range v.Levels {
				for _, f := range files {
					if model[f.FileNum] != l {
						t.Fatalf("file %d at level %d, model says %d", f.FileNum, l, model[f.FileNum])
					}
					n++
				}
			}
			if n != len(model) {
				t.Fatalf("version has %d files, model %d", n, len(model))
			}
		}
	}
}
