package bloomkv

import (
	"errors"
	"fmt"
)

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
