package bloomkv

import "time"

// Gathering synced writers into fewer fsyncs.
//
// With N writers each issuing synced writes one after another, group commit
// alone settles into two cohorts: while the leader of one group waits for
// its fsync, the others queue up and form the next group, which starts its
// fsync the moment the first one ends, before the writers just
// acknowledged are back. Each fsync then carries about N/2 writes
// (BenchmarkSyncWriters8 measured 4.46 writes per fsync with 8 writers).
//
// So a leader about to fsync first waits, briefly, for the writers of the
// group completed just before it to come back: a writer that entered the
// queue after that group completed is counted as back (its epoch is the
// current one); if fewer are back than that group held, the leader waits
// until they are or until maxGroupWait passes, whichever comes first, then
// forms its group. A lone synced writer finds itself already back and
// never waits; writers that leave for good cost at most maxGroupWait once,
// since the next group is sized by who actually came.

// groupWaitFraction of the last fsync's duration is the longest a leader
// waits for returning writers (at most maxGroupWait): long enough for
// goroutines just woken to be scheduled and queue again, short beside the
// fsync that the wait saves.
const (
	groupWaitFraction = 4 // wait at most 1/4 of the last fsync
	maxGroupWait      = time.Millisecond
)

// groupWait is the state of a leader waiting for returning writers.
// Guarded by db.mu.
type groupWait struct {
	// need: the queue length that ends the wait (0: nobody waits).
	need int
	// ready is signalled (never blocking) when the queue reaches need.
	ready chan struct{}
	timer *time.Timer
	// epoch counts completed groups; a writer queued since the last
	// completion carries the current epoch.
	epoch uint64
	// lastSyncGroup is how many writers the last synced group held, and
	// lastSync how long its fsync took.
	lastSyncGroup int
	lastSync      time.Duration
	// waits counts the leaders that waited (for tests).
	waits int
}

// noteEnqueuedLocked stamps a writer entering the queue and ends a
// leader's wait once enough writers are queued. REQUIRES: db.mu held.
func (db *DB) noteEnqueuedLocked(w *writer) {
	gw := &db.mu.groupWait
	w.epoch = gw.epoch
	if gw.need > 0 && len(db.mu.writers) >= gw.need {
		gw.need = 0
		select {
		case gw.ready <- struct{}{}:
		default:
		}
	}
}

// waitForReturningWritersLocked is called by a leader whose group will be
// fsynced, before it forms the group: see the comment at the top of the
// file. REQUIRES: db.mu held by the leader; it may release and retake it.
func (db *DB) waitForReturningWritersLocked() {
	gw := &db.mu.groupWait
	if gw.lastSyncGroup <= 1 || db.closing.Load() {
		return
	}
	back := 0
	for _, q := range db.mu.writers {
		if q.epoch == gw.epoch {
			back++
		}
	}
	missing := gw.lastSyncGroup - back
	wait := min(gw.lastSync/groupWaitFraction, maxGroupWait)
	if missing <= 0 || wait <= 0 {
		return
	}
	if gw.ready == nil {
		gw.ready = make(chan struct{}, 1)
		gw.timer = time.NewTimer(wait)
	} else {
		gw.timer.Reset(wait)
	}
	select { // a signal left over from an earlier wait that timed out
	case <-gw.ready:
	default:
	}
	gw.need = len(db.mu.writers) + missing
	gw.waits++
	db.mu.Unlock()
	select {
	case <-gw.ready:
	case <-gw.timer.C:
	}
	db.mu.Lock()
	gw.need = 0
	gw.timer.Stop() // Go 1.23+: a stopped timer's channel holds nothing stale
}

// noteGroupDoneLocked records a completed group: its size and fsync time
// when it was synced. REQUIRES: db.mu held.
func (db *DB) noteGroupDoneLocked(size int, synced bool, fsync time.Duration) {
	gw := &db.mu.groupWait
	gw.epoch++
	if synced {
		gw.lastSyncGroup, gw.lastSync = size, fsync
	}
}
