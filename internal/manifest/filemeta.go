package manifest

import (
	"fmt"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
)

// NumLevels is the number of levels of the LSM tree: level 0 (flushed
// memtables, may overlap) and levels 1..6 (sorted runs).
const NumLevels = 7

// FileMetadata describes one SSTable. Once part of a Version it is never
// modified, except for its read charges (an atomic counter, not part of
// the manifest): versions share FileMetadata values, and the root package
// owns the file's lifetime.
type FileMetadata struct {
	FileNum uint64
	Size    uint64 // bytes on disk
	// Smallest and Largest are the table's first and last internal keys,
	// widened to cover its range tombstones (kind base.KindRangeDelete; see
	// sstable's tableBounds): every user key the table holds or deletes
	// lies in [SmallestUserKey, LargestUserKey].
	Smallest, Largest []byte
	// SmallestSeq and LargestSeq bound the sequence numbers in the table.
	SmallestSeq, LargestSeq uint64

	// readCharges counts the reads that paid for this table without
	// finding their answer in it (the root package's read-triggered
	// compactions). In memory only: a reopened database starts from zero.
	readCharges atomic.Int64
	// rangeDels caches whether the table holds range tombstones (0: not
	// known yet, 1: none, 2: some), so that an iterator's SetBounds need
	// not look the table up to learn it has none. In memory only; a table
	// never changes, so the first answer stands.
	rangeDels atomic.Uint32
}

// RangeDelsKnown returns whether the table holds range tombstones, and
// whether that is known yet (SetHasRangeDels).
func (f *FileMetadata) RangeDelsKnown() (has, known bool) {
	v := f.rangeDels.Load()
	return v == 2, v != 0
}

// SetHasRangeDels records whether the table holds range tombstones.
func (f *FileMetadata) SetHasRangeDels(has bool) {
	v := uint32(1)
	if has {
		v = 2
	}
	f.rangeDels.Store(v)
}

// ChargeRead adds n read charges unless the table already has limit, and
// reports whether these charges reached limit (true once per table). Past
// the limit it only loads the counter, so readers on several cores do not
// keep writing one cache line.
func (f *FileMetadata) ChargeRead(n, limit int64) bool {
	if f.readCharges.Load() >= limit {
		return false
	}
	c := f.readCharges.Add(n)
	return c >= limit && c-n < limit
}

// ReadCharges returns the read charges so far.
func (f *FileMetadata) ReadCharges() int64 { return f.readCharges.Load() }

// FileSize returns Size (for compaction.Table).
func (f *FileMetadata) FileSize() uint64 { return f.Size }

// SmallestUserKey returns the user key of Smallest.
func (f *FileMetadata) SmallestUserKey() []byte { return base.UserKey(f.Smallest) }

// LargestUserKey returns the user key of Largest.
func (f *FileMetadata) LargestUserKey() []byte { return base.UserKey(f.Largest) }

// String renders the file for messages and tests, e.g.
// 000012:["a"#5,SET-"k"#9,DEL] seqs 5-9 size 2048.
func (f *FileMetadata) String() string {
	return fmt.Sprintf("%06d:[%s-%s] seqs %d-%d size %d", f.FileNum,
		base.FormatInternalKey(f.Smallest), base.FormatInternalKey(f.Largest),
		f.SmallestSeq, f.LargestSeq, f.Size)
}

// validate checks what a single file must satisfy on its own: well-formed
// internal keys in order and sequence bounds in order. It returns a reason
// without a package prefix; callers add the context.
func (f *FileMetadata) validate() error {
	if !base.ValidBoundKey(f.Smallest) {
		return fmt.Errorf("file %06d: smallest key %s is not a valid internal key", f.FileNum, base.FormatInternalKey(f.Smallest))
	}
	if !base.ValidBoundKey(f.Largest) {
		return fmt.Errorf("file %06d: largest key %s is not a valid internal key", f.FileNum, base.FormatInternalKey(f.Largest))
	}
	if base.CompareInternal(f.Smallest, f.Largest) > 0 {
		return fmt.Errorf("file %06d: smallest key %s sorts after largest key %s", f.FileNum,
			base.FormatInternalKey(f.Smallest), base.FormatInternalKey(f.Largest))
	}
	if f.SmallestSeq > f.LargestSeq || f.LargestSeq > base.MaxSeq {
		return fmt.Errorf("file %06d: bad sequence range %d-%d", f.FileNum, f.SmallestSeq, f.LargestSeq)
	}
	return nil
}
