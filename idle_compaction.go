package bloomkv

import (
	"time"
)

// Idle compaction: level-0 tables below L0CompactionThreshold are left
// alone while writes arrive, because compacting each one into level 1 as
// it is flushed would rewrite level 1 once per flush. But every level-0
// table overlaps the whole key range of a random workload, so each one
// costs every seek a block read and every Get a filter probe. Once writes
// have paused for IdleCompactionDelay, nothing more will be saved by
// waiting: the compaction loop then moves all of level 0 into level 1.
//
// The pause is detected without touching the write path: a timer armed
// with the visible sequence number fires after the delay, and the
// compaction is due only if the sequence number has not moved since.
// While writes continue the timer re-arms at most once per delay.

// idleState is the idle-compaction timer's state, under db.mu.
type idleState struct {
	armed bool
	seq   uint64 // visibleSeq when the timer was armed
	due   bool   // the delay passed with no write and level 0 non-empty
	timer *time.Timer
	// declined is the version whose level 0 was judged not worth an idle
	// compaction: the timer is not armed again until the tree changes.
	declined *version
}

// idleCompactionEnabled reports whether the DB compacts level 0 when idle.
func (db *DB) idleCompactionEnabled() bool {
	return !db.opts.DisableAutomaticCompactions && db.opts.IdleCompactionDelay > 0
}

// armIdleTimerLocked starts the idle timer if level 0 holds tables and it
// is not already running. REQUIRES: db.mu held.
func (db *DB) armIdleTimerLocked() {
	st := &db.mu.idle
	if !db.idleCompactionEnabled() || st.armed || st.due || len(db.mu.current.Levels[0]) == 0 ||
		st.declined == db.mu.current {
		return
	}
	st.armed = true
	st.seq = db.visibleSeq.Load()
	if st.timer == nil {
		st.timer = time.AfterFunc(db.opts.IdleCompactionDelay, db.idleTimerFired)
	} else {
		st.timer.Reset(db.opts.IdleCompactionDelay)
	}
}

// idleTimerFired marks the idle compaction due if no write was applied
// since the timer was armed, and wakes the compaction loop either way (it
// re-arms the timer when writes moved the sequence on).
func (db *DB) idleTimerFired() {
	db.mu.Lock()
	defer db.mu.Unlock()
	st := &db.mu.idle
	st.armed = false
	if db.visibleSeq.Load() == st.seq {
		st.due = true
	}
	db.mu.bgCond.Broadcast()
}

// stopIdleTimerLocked stops the timer when the compaction loop exits.
// REQUIRES: db.mu held.
func (db *DB) stopIdleTimerLocked() {
	if t := db.mu.idle.timer; t != nil {
		t.Stop()
	}
	db.mu.idle.armed = false
}

// idleCompactionDueLocked reports whether level 0 should be compacted
// because writes paused. A write since the timer fired cancels it: the
// writer may be starting another burst. REQUIRES: db.mu held.
func (db *DB) idleCompactionDueLocked() bool {
	st := &db.mu.idle
	if !st.due {
		return false
	}
	if len(db.mu.current.Levels[0]) == 0 || db.visibleSeq.Load() != st.seq || !db.idleCompactionEnabled() {
		st.due = false
		return false
	}
	return true
}
