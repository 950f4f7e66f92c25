package bloomkv

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
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

// ErrLocked is what Open's error wraps when another holder has the
// directory's LOCK: another process, or a DB in this process that has not
// been closed. Any other failure to take the lock (no permission, a
// read-only file system, LOCK being a directory) does not wrap ErrLocked;
// the error wraps what the file system reported instead. Test for it with
// errors.Is(err, ErrLocked).
var ErrLocked = vfs.ErrLocked

// lockError describes Open's failure to take dir's LOCK with fs, saying
// whether another holder has it (err wraps ErrLocked) or the lock could
// not be taken at all.
func lockError(fs vfs.FS, dir string, err error) error {
	if errors.Is(err, ErrLocked) {
		return fmt.Errorf("bloomkv: open %s: directory is in use by another holder: %w", dir, err)
	}
	return fmt.Errorf("bloomkv: open %s: lock %s: %w", dir, fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0)), err)
}

// ErrInvalidArgument marks a rejected key, value or option; the error names
// what was wrong, as in "bloomkv: invalid argument: empty key". Nothing was
// changed.
var ErrInvalidArgument = errors.New("bloomkv: invalid argument")

// invalidArgError is ErrInvalidArgument with what was wrong. Its message
// names the package once: wrapping ErrInvalidArgument with %w would repeat
// "bloomkv:" before the detail.
type invalidArgError struct{ what string }

func (e *invalidArgError) Error() string { return ErrInvalidArgument.Error() + ": " + e.what }

func (e *invalidArgError) Unwrap() error { return ErrInvalidArgument }

// invalidf returns an error wrapping ErrInvalidArgument whose detail is
// format applied to args; the detail does not start with "bloomkv:".
func invalidf(format string, args ...any) error {
	return &invalidArgError{what: fmt.Sprintf(format, args...)}
}
