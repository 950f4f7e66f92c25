package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func ikey(ukey string, seq uint64, kind base.Kind) []byte {
	return base.MakeInternalKey([]byte(ukey), seq, kind)
}

// meta returns a file over user keys [lo, hi] with the given largest seq.
func meta(num uint64, lo, hi string, largestSeq uint64) *FileMetadata {
	return &FileMetadata{
		FileNum: num, Size: 100 * num,
		Smallest: ikey(lo, largestSeq, base.KindSet), Largest: ikey(hi, largestSeq, base.KindSet),
		SmallestSeq: largestSeq, LargestSeq: largestSeq,
	}
}

// userKey returns the i-th key of a small sorted key space.
func userKey(i int) string { return fmt.Sprintf("k%04d", i) }

// randomFile returns a file over a random user-key range within [0, space).
func randomFile(rng *rand.Rand, num uint64, space int) *FileMetadata {
	a, b := rng.IntN(space), rng.IntN(space)
	if a > b {
		a, b = b, a
	}
	s1, s2 := rng.Uint64N(1000), rng.Uint64N(1000)
	if s1 > s2 {
		s1, s2 = s2, s1
	}
	kind := func() base.Kind { return base.Kind(rng.IntN(2)) }
	smallest, largest := ikey(userKey(a), s2, kind()), ikey(userKey(b), s1, kind())
	if a == b && base.CompareInternal(smallest, largest) > 0 {
		smallest, largest = largest, smallest
	}
	return &FileMetadata{FileNum: num, Size: rng.Uint64N(1 << 20), Smallest: smallest, Largest: largest, SmallestSeq: s1, LargestSeq: s2}
}

// randomVersion builds a valid version: random overlapping files in L0 and
// disjoint runs elsewhere.
func randomVersion(t testing.TB, rng *rand.Rand) *Version {
	t.Helper()
	b := NewBuilder(nil)
	e := &VersionEdit{}
	num := uint64(1)
	for range rng.IntN(6) {
		e.NewFiles = append(e.NewFiles, NewFileEntry{0, randomFile(rng, num, 200)})
		num++
	}
	for l := 1; l < NumLevels; l++ {
		k := rng.IntN(3)
		for k < 200 && rng.IntN(8) != 0 {
			lo := k + rng.IntN(5)
			hi := lo + rng.IntN(20)
			if hi >= 200 {
				break
			}
			f := meta(num, userKey(lo), userKey(hi), rng.Uint64N(1000))
			e.NewFiles = append(e.NewFiles, NewFileEntry{l, f})
			num++
			k = hi + 1
		}
	}
	if err := b.Apply(e); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// randomEdit returns an arbitrary edit that passes Validate.
func randomEdit(rng *rand.Rand) *VersionEdit {
	e := &VersionEdit{}
	big := func() uint64 { return rng.Uint64() >> rng.IntN(64) }
	if rng.IntN(2) == 0 {
		e.HasLogNum, e.LogNum = true, big()
	}
	if rng.IntN(2) == 0 {
		e.HasNextFileNum, e.NextFileNum = true, big()
	}
	if rng.IntN(2) == 0 {
		e.HasLastSeq, e.LastSeq = true, big()
	}
	for range rng.IntN(3) {
		key := make([]byte, rng.IntN(20))
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		e.CompactPointers = append(e.CompactPointers, CompactPointer{rng.IntN(NumLevels), key})
	}
	for range rng.IntN(4) {
		e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{rng.IntN(NumLevels), big()})
	}
	for range rng.IntN(4) {
		e.NewFiles = append(e.NewFiles, NewFileEntry{rng.IntN(NumLevels), randomFile(rng, big(), 1000)})
	}
	return e
}

// editsEqual compares two edits, treating nil and empty slices alike.
func editsEqual(a, b *VersionEdit) bool {
	return bytes.Equal(a.Encode(), b.Encode()) &&
		a.HasLogNum == b.HasLogNum && a.LogNum == b.LogNum &&
		a.HasNextFileNum == b.HasNextFileNum && a.NextFileNum == b.NextFileNum &&
		a.HasLastSeq == b.HasLastSeq && a.LastSeq == b.LastSeq &&
		len(a.NewFiles) == len(b.NewFiles) && len(a.DeletedFiles) == len(b.DeletedFiles) &&
		len(a.CompactPointers) == len(b.CompactPointers) && newFilesEqual(a.NewFiles, b.NewFiles)
}

func newFilesEqual(a, b []NewFileEntry) bool {
	for i := range a {
		if a[i].Level != b[i].Level || !reflect.DeepEqual(a[i].Meta, b[i].Meta) {
			return false
		}
	}
	return true
}

// fileNums lists the file numbers of each level, for comparing versions.
func fileNums(v *Version) [NumLevels][]uint64 {
	var out [NumLevels][]uint64
	for l, files := range v.Levels {
		for _, f := range files {
			out[l] = append(out[l], f.FileNum)
		}
	}
	return out
}
