package bloomkv

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// The errors the API returns, the argument checks that produce them (key
// and value limits), and the leak error Close reports.

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

// MaxKeySize and MaxValueSize bound what Put, Delete and Batch accept.
const (
	MaxKeySize   = 64 << 10
	MaxValueSize = 64 << 20
)

// checkKey rejects a key the engine does not store: empty, or longer than
// MaxKeySize.
func checkKey(key []byte) error {
	if what := keyProblem(key); what != "" {
		return invalidf("%s", what)
	}
	return nil
}

// keyProblem says what is wrong with key, or "" when nothing is. Batch
// puts the words in its own error, after the operation they concern.
func keyProblem(key []byte) string {
	switch {
	case len(key) == 0:
		return "empty key"
	case len(key) > MaxKeySize:
		return fmt.Sprintf("key of %d bytes exceeds the %d-byte limit", len(key), MaxKeySize)
	}
	return ""
}

// checkValue rejects a value longer than MaxValueSize.
func checkValue(value []byte) error {
	if what := valueProblem(value); what != "" {
		return invalidf("%s", what)
	}
	return nil
}

func valueProblem(value []byte) string {
	if len(value) > MaxValueSize {
		return fmt.Sprintf("value of %d bytes exceeds the %d-byte limit", len(value), MaxValueSize)
	}
	return ""
}

// ErrLeaked is what Close's error wraps when iterators or snapshots were
// still open: the database is closed all the same, but each of them held
// memory and kept table files from deletion until then, which a
// long-running program would want to know. The message counts them.
var ErrLeaked = errors.New("bloomkv: iterators or snapshots left open")

// leakedError counts what Close found open.
type leakedError struct{ iters, snaps int }

func (e *leakedError) Error() string {
	return fmt.Sprintf("%s and %s left open (close them before the DB)",
		plural(e.iters, "iterator"), plural(e.snaps, "snapshot"))
}

func (e *leakedError) Unwrap() error { return ErrLeaked }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// leaked returns an error counting the iterators and snapshots still
// open, or nil when there are none.
func (db *DB) leaked() error {
	db.mu.Lock()
	snaps := db.mu.snapshots.Len()
	db.mu.Unlock()
	iters := int(db.openIters.Load())
	if iters == 0 && snaps == 0 {
		return nil
	}
	return &leakedError{iters: iters, snaps: snaps}
}
