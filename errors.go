package bloomkv

import (
	"errors"

	"github.com/bloomkv/bloomkv/internal/base"
)

// ErrNotFound is returned by Get when the key is absent (never written,
// or deleted as of the read's point in time).
var ErrNotFound = errors.New("bloomkv: not found")

// ErrClosed is returned by every call on a DB (and on its snapshots and
// iterators) after Close.
var ErrClosed = errors.New("bloomkv: closed")

// ErrCorruption marks damaged on-disk data: a checksum mismatch, a truncated
// or malformed log, table or manifest. The error's message names the file and
// offset. Test for it with errors.Is(err, ErrCorruption).
var ErrCorruption = base.ErrCorruption

// ErrInvalidArgument marks a rejected key, value or option; the error names
// what was wrong. Nothing was changed.
var ErrInvalidArgument = errors.New("bloomkv: invalid argument")
