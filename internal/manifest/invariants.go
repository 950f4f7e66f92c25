package manifest

import (
	"bytes"
	"fmt"
)

// CheckInvariants verifies the ordering rules of Version, that every file's
// Smallest <= Largest (with well-formed internal keys and sequence bounds),
// and that no file number is listed twice. It returns a descriptive error.
func (v *Version) CheckInvariants() error {
	if err := v.checkInvariants(); err != nil {
		return fmt.Errorf("bloomkv/manifest: version invariant violated: %w", err)
	}
	return nil
}

func (v *Version) checkInvariants() error {
	n := 0
	for _, files := range v.Levels {
		n += len(files)
	}
	seen := make(map[uint64]int, n) // file number -> level
	for level, files := range v.Levels {
		for i, f := range files {
			if f == nil {
				return fmt.Errorf("level %d: file %d of %d is nil", level, i, len(files))
			}
			if prev, ok := seen[f.FileNum]; ok {
				return fmt.Errorf("file %06d is listed twice (levels %d and %d)", f.FileNum, prev, level)
			}
			seen[f.FileNum] = level
			if err := f.validate(); err != nil {
				return fmt.Errorf("level %d: %w", level, err)
			}
			if i == 0 {
				continue
			}
			prev := files[i-1]
			if level == 0 {
				if !newerL0(prev, f) {
					return fmt.Errorf("level 0: file %s is not newer than the file after it, %s", prev, f)
				}
			} else if bytes.Compare(prev.LargestUserKey(), f.SmallestUserKey()) >= 0 {
				return fmt.Errorf("level %d: files %s and %s overlap or are out of order", level, prev, f)
			}
		}
	}
	return nil
}

// newerL0 reports whether a comes before b in level 0: larger LargestSeq
// first, ties broken by larger FileNum.
func newerL0(a, b *FileMetadata) bool {
	if a.LargestSeq != b.LargestSeq {
		return a.LargestSeq > b.LargestSeq
	}
	return a.FileNum > b.FileNum
}
