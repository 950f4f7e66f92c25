package bloomkv

import "time"

// Background work (flushes and compactions) retries a failure a few times
// with a growing pause, since an I/O error may be transient; after
// maxBackgroundAttempts failures in a row the error stops writes (reads go
// on, and a reopen recovers: a failed flush or compaction loses nothing).
const maxBackgroundAttempts = 4

// Pauses after the n-th consecutive failure: n times these.
const (
	flushRetryPause      = 10 * time.Millisecond
	compactionRetryPause = 20 * time.Millisecond
)

// retryLocked notes a background failure: it returns true when the work
// should be tried again (after pausing failures*pause with db.mu released),
// and false, having stopped writes with err, when it has failed too often.
// REQUIRES: db.mu held.
func (db *DB) retryLocked(err error, failures int, pause time.Duration) bool {
	if failures >= maxBackgroundAttempts {
		db.setBgErrLocked(err)
		return false
	}
	db.events.warn("bloomkv: background work failed; retrying", "attempt", failures, "error", err)
	db.events.backgroundError(BackgroundErrorInfo{Err: err})
	db.mu.Unlock()
	time.Sleep(time.Duration(failures) * pause)
	db.mu.Lock()
	return true
}
