package filter

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// ErrCorruption is wrapped by every error that rejects damaged or foreign
// encoded input (UnmarshalBinary, ReadFrom, DecodeBlock). It is the same
// value as bloomkv.ErrCorruption, so one errors.Is check serves both.
var ErrCorruption = base.ErrCorruption

// ErrInvalidArgument is returned (wrapped) by constructors given a size or
// error rate they cannot honour, such as fpp outside (0, 1).
var ErrInvalidArgument = errors.New("bloomkv/filter: invalid argument")

// ErrFull is returned by Cuckoo.Add when the key's two buckets are full and
// a bounded chain of evictions found no free slot. The filter is unchanged:
// nothing already added is dropped.
var ErrFull = errors.New("bloomkv/filter: cuckoo filter is full")

// ErrAbsent is returned by Counting.Remove and Cuckoo.Remove for a key the
// filter certainly does not hold. The filter is unchanged.
var ErrAbsent = errors.New("bloomkv/filter: key is not in the filter")

// ErrShapeMismatch is returned (wrapped) by Merge when the two filters
// differ in size or probe count, so their bits do not mean the same keys.
var ErrShapeMismatch = errors.New("bloomkv/filter: filters differ in shape")

func invalidArgf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}
