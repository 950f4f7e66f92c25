package manifest

import (
	"fmt"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Builder accumulates edits on top of a base version. Levels no edit
// touches are shared with the base in the finished version.
type Builder struct {
	base *Version // constant after construction; never modified
	// level records, for every live file number, the level holding it.
	level map[uint64]int
	// touched holds the live files of each level some edit changed,
	// materialized on first change; nil for untouched levels.
	touched [NumLevels]map[uint64]*FileMetadata
}

// NewBuilder returns a builder starting from base (nil = empty version).
func NewBuilder(base *Version) *Builder {
	if base == nil {
		base = &Version{}
	}
	n := 0
	for _, files := range base.Levels {
		n += len(files)
	}
	b := &Builder{base: base, level: make(map[uint64]int, n)}
	for l, files := range base.Levels {
		for _, f := range files {
			b.level[f.FileNum] = l
		}
	}
	return b
}

// Apply applies e: first its deletions, then its additions. It fails, and
// changes nothing, if e is invalid (see VersionEdit.Validate), deletes a file
// that is not at that level, or adds a file number that is already live.
func (b *Builder) Apply(e *VersionEdit) error {
	if err := b.apply(e); err != nil {
		return fmt.Errorf("bloomkv/manifest: apply version edit: %w", err)
	}
	return nil
}

func (b *Builder) apply(e *VersionEdit) error {
	if err := e.validate(); err != nil {
		return err
	}
	// Check everything before changing anything.
	deleted := make(map[uint64]bool, len(e.DeletedFiles))
	for _, d := range e.DeletedFiles {
		l, ok := b.level[d.FileNum]
		if !ok || l != d.Level || deleted[d.FileNum] {
			return fmt.Errorf("deleting file %06d from level %d: no such live file there", d.FileNum, d.Level)
		}
		deleted[d.FileNum] = true
	}
	added := make(map[uint64]bool, len(e.NewFiles))
	for _, nf := range e.NewFiles {
		num := nf.Meta.FileNum
		if _, live := b.level[num]; (live && !deleted[num]) || added[num] {
			return fmt.Errorf("adding file %06d to level %d: file number already live", num, nf.Level)
		}
		added[num] = true
	}
	for _, d := range e.DeletedFiles {
		delete(b.touch(d.Level), d.FileNum)
		delete(b.level, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		b.touch(nf.Level)[nf.Meta.FileNum] = nf.Meta
		b.level[nf.Meta.FileNum] = nf.Level
	}
	return nil
}

// touch returns the live-file map of level, copying it from the base on
// first use.
func (b *Builder) touch(level int) map[uint64]*FileMetadata {
	if b.touched[level] == nil {
		m := make(map[uint64]*FileMetadata, len(b.base.Levels[level]))
		for _, f := range b.base.Levels[level] {
			m[f.FileNum] = f
		}
		b.touched[level] = m
	}
	return b.touched[level]
}

// Finish returns the resulting version, each level sorted per the rules of
// Version, after checking its invariants.
func (b *Builder) Finish() (*Version, error) {
	v, err := b.finish()
	if err != nil {
		return nil, fmt.Errorf("bloomkv/manifest: %w", err)
	}
	return v, nil
}

func (b *Builder) finish() (*Version, error) {
	v := &Version{}
	for l := range v.Levels {
		live := b.touched[l]
		if live == nil {
			v.Levels[l] = b.base.Levels[l]
			continue
		}
		files := make([]*FileMetadata, 0, len(live))
		for _, f := range live {
			// Sorting compares keys; make sure they are well formed
			// (files from the base were not checked by Apply).
			if err := f.validate(); err != nil {
				return nil, fmt.Errorf("version invariant violated: level %d: %w", l, err)
			}
			files = append(files, f)
		}
		if l == 0 {
			slices.SortFunc(files, compareL0)
		} else {
			slices.SortFunc(files, compareBySmallest)
		}
		if len(files) > 0 {
			v.Levels[l] = files
		}
	}
	if err := v.checkInvariants(); err != nil {
		return nil, fmt.Errorf("version invariant violated: %w", err)
	}
	return v, nil
}

// compareL0 orders level 0 newest first.
func compareL0(a, b *FileMetadata) int {
	switch {
	case a == b:
		return 0
	case newerL0(a, b):
		return -1
	}
	return 1
}

// compareBySmallest orders levels >= 1; ties (only possible in an invalid
// version, which the invariant check then rejects) by file number.
func compareBySmallest(a, b *FileMetadata) int {
	if c := base.CompareInternal(a.Smallest, b.Smallest); c != 0 {
		return c
	}
	switch {
	case a.FileNum < b.FileNum:
		return -1
	case a.FileNum > b.FileNum:
		return 1
	}
	return 0
}
