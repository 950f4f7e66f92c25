package bloomkv

import (
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// What the engine observes for idle and read-triggered compactions: the
// timers that tell when writes paused, read charges on tables, and the
// read-compaction byte budget. compaction.Choose decides from them.

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
	seq   uint64 // the visible sequence when the timer was armed
	due   bool   // the delay passed with no write and level 0 non-empty
	timer *time.Timer
	// declined is the version whose level 0 was judged not worth an idle
	// compaction: the timer is not armed again until the tree changes.
	declined *manifest.Version
}

// idleCompactionEnabled reports whether the DB compacts level 0 when idle.
func (db *DB) idleCompactionEnabled() bool {
	return !db.opts.DisableAutomaticCompactions && db.opts.IdleCompactionDelay > 0
}

// armIdleTimerLocked starts the idle timer if level 0 holds tables and it
// is not already running. REQUIRES: db.mu held.
func (db *DB) armIdleTimerLocked() {
	st := &db.mu.idle
	if !db.idleCompactionEnabled() || st.armed || st.due || len(db.versions.Current().Levels[0]) == 0 ||
		st.declined == db.versions.Current() {
		return
	}
	st.armed = true
	st.seq = db.versions.VisibleSeq()
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
	if db.versions.VisibleSeq() == st.seq {
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
	if len(db.versions.Current().Levels[0]) == 0 || db.versions.VisibleSeq() != st.seq || !db.idleCompactionEnabled() {
		st.due = false
		return false
	}
	return true
}

// Read-triggered compaction: the tree is shaped by writes (a level is
// compacted when it outgrows its size target), so once writes stop, a
// table may stay in a shallow level for good above a deeper level that
// covers the same keys. Every seek into that key range then reads a block
// from both, and every Get there consults both. When reads have paid for
// such a table often enough, the compaction loop merges it into the level
// below, and reads there touch one table fewer from then on.
//
// What counts as paying, in units of one seek:
//   - a DB iterator's SeekGE whose target lay inside the key range of a
//     table in two or more levels (1 and deeper) read a block in each: the
//     shallowest of those tables is charged one seek;
//   - a Get that consulted such a table without finding its answer there
//     and went on to a deeper level's table charges the first one
//     1/getChargeDivisor of a seek: it paid a table lookup and a filter
//     probe (a block read only on a false positive), about 0.1 us against
//     the 2-3 us of a block read and decode.
//
// Level 0 is left to its own triggers (the table count, idle compaction),
// and the last level has nothing below it.
//
// How much is enough: a table of S bytes is queued after max(S/16 KiB,
// 100) seeks' worth of charges, the allowance LevelDB gives its tables.
// Merging it costs its size plus its overlap below in I/O and CPU, spent
// on a background core; the reads it saves are on the readers' path. A
// queued table whose overlap in the level below exceeds compaction.ReadMaxRewrite
// times its size (a small level above a large one, each table spanning
// much of the key space) is not merged: that would rewrite much of the
// level below to save one probe. Charges live in memory (manifest.
// FileMetadata.ChargeRead), so a reopened database starts counting again.
//
// Only while writes pause. Under a steady stream of writes, level-0
// compactions rewrite the shallow levels every few seconds anyway, and
// pushing their tables down early adds to that: with one writer at 50,000
// Puts/s and a reader, merging charged tables raised the bytes compactions
// wrote from 1.4 to 2.5-2.7 per byte written, for 10-20% more reads and
// 5-10% fewer writes. So a queued table waits until no write has been
// applied for readCompactionQuiet (1 s); a read-mostly phase after a fill
// gets its tree merged, a mixed workload keeps its write amplification.
// The pause is seen as idle compaction sees it, without touching the
// write path: the visible sequence number is compared between checks,
// and a timer wakes the loop when the pause may be long enough.
//
// A byte budget spaces them out: after a merge that read B bytes, the next
// waits B / readCompactionBytesPerSecond, so that reads that keep queueing
// tables do not keep a core busy merging them.
//
// Options.DisableReadCompactions (and DisableAutomaticCompactions) turn it
// off. The compaction loop runs these only when no level is over its
// target and no idle compaction is due.

// readCompactionQuiet is how long writes must pause before a queued
// table is merged (a variable so that tests can shorten it).
var readCompactionQuiet = time.Second

// readCompactionBytesPerSecond is the budget of read-triggered compactions:
// after one that read B bytes of tables, the next waits B / budget. They
// run one at a time on the compaction goroutine like every compaction, and
// reads go on meanwhile; on a machine of two cores a merge running back to
// back with the next would hold one core for as long as reads keep
// queueing tables (at 10M keys, 55 merges ran within the timed absent-key
// Gets). At 32 MiB/s a merge of a 2 MiB table and its 20 MiB overlap below
// is followed by 0.7 s without one. A variable so that tests can change it;
// 0 means no budget.
var readCompactionBytesPerSecond int64 = 32 << 20

// readQuietState tracks the write pause read-triggered compactions wait
// for, under db.mu: seq is the visible sequence number last seen, since
// when it was first seen; timer wakes the compaction loop once the pause
// may be long enough.
type readQuietState struct {
	seq   uint64
	since time.Time
	timer *time.Timer
	armed bool
	// notBefore is when the budget allows the next read-triggered
	// compaction (zero: now).
	notBefore time.Time
}

// writesQuietLocked reports whether no write has been applied for
// readCompactionQuiet, as far as the checks so far can tell (each check
// notes the sequence number, so a pause is timed from the first check
// that saw it) and the byte budget allows a read-triggered compaction
// (readCompactionBytesPerSecond); with arm, it sets the timer to check
// again when it cannot say yes yet. REQUIRES: db.mu held.
func (db *DB) writesQuietLocked(arm bool) bool {
	st := &db.mu.readQuiet
	now := time.Now()
	if seq := db.versions.VisibleSeq(); seq != st.seq || st.since.IsZero() {
		st.seq, st.since = seq, now
	}
	wait := max(readCompactionQuiet-now.Sub(st.since), st.notBefore.Sub(now))
	if wait <= 0 {
		return true
	}
	if arm && !st.armed {
		st.armed = true
		if st.timer == nil {
			st.timer = time.AfterFunc(wait, db.readQuietTimerFired)
		} else {
			st.timer.Reset(wait)
		}
	}
	return false
}

// spendReadBudgetLocked charges a read-triggered compaction that read
// bytes of tables against the budget. REQUIRES: db.mu held.
func (db *DB) spendReadBudgetLocked(bytes int64) {
	if readCompactionBytesPerSecond <= 0 {
		return
	}
	d := time.Duration(float64(bytes) / float64(readCompactionBytesPerSecond) * float64(time.Second))
	db.mu.readQuiet.notBefore = time.Now().Add(d)
}

// readQuietTimerFired wakes the compaction loop to check the pause again.
func (db *DB) readQuietTimerFired() {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.mu.readQuiet.armed = false
	db.mu.bgCond.Broadcast()
}

// stopReadQuietTimerLocked stops the timer when the compaction loop
// exits. REQUIRES: db.mu held.
func (db *DB) stopReadQuietTimerLocked() {
	if t := db.mu.readQuiet.timer; t != nil {
		t.Stop()
	}
	db.mu.readQuiet.armed = false
}

// readChargeBytes and minReadCharges set the seeks after which a table is
// queued: its size / readChargeBytes, at least minReadCharges.
// getChargeDivisor is the number of Gets that count as one seek. (The
// largest overlap below that a read-triggered compaction rewrites is
// compaction.ReadMaxRewrite.)
const (
	readChargeBytes  = 16 << 10
	minReadCharges   = 100
	getChargeDivisor = 32
)

// Charges are counted in units of one Get, so that a seek adds
// getChargeDivisor and the limit is in the same unit.
const (
	seekCharge = getChargeDivisor
	getCharge  = 1
)

// readCompactionLimit returns the charges after which f is queued.
func readCompactionLimit(f *manifest.FileMetadata) int64 {
	return max(int64(f.Size/readChargeBytes), minReadCharges) * seekCharge
}

// readCompactionsEnabled reports whether reads may queue compactions.
func (db *DB) readCompactionsEnabled() bool {
	return !db.opts.DisableAutomaticCompactions && !db.opts.DisableReadCompactions
}

// readCandidate is a table queued by its read charges, with the level it
// was read in.
type readCandidate = compaction.ReadCandidate[*manifest.FileMetadata]

// chargeSeek charges the shallowest of the tables whose key range held the
// target of the SeekGE that just positioned levels, when a deeper one held
// it too, and forgets the seek either way.
func (db *DB) chargeSeek(levels []*levelIter) {
	var first *manifest.FileMetadata
	firstLevel, charged := 0, false
	for _, l := range levels {
		f := l.seekFile
		if f == nil {
			continue
		}
		l.seekFile = nil
		switch {
		case first == nil:
			first, firstLevel = f, l.level
		case !charged:
			db.chargeRead(firstLevel, first, seekCharge)
			charged = true
		}
	}
}

// chargeRead charges table f of level n units and queues it when those
// reached its limit.
func (db *DB) chargeRead(level int, f *manifest.FileMetadata, n int64) {
	if level == 0 || level >= manifest.NumLevels-1 || !db.readCompactionsEnabled() {
		return
	}
	if !f.ChargeRead(n, readCompactionLimit(f)) {
		return
	}
	db.mu.Lock()
	db.mu.readCompactions = append(db.mu.readCompactions, readCandidate{Level: level, File: f})
	db.mu.bgCond.Broadcast()
	db.mu.Unlock()
}

// readCompactionDueLocked drops queued tables that are no longer where
// they were read (compacted, or moved by another compaction) and reports
// whether one is left and writes have paused. REQUIRES: db.mu held.
func (db *DB) readCompactionDueLocked() bool {
	if !db.readCompactionsEnabled() {
		db.mu.readCompactions = nil
		return false
	}
	if len(db.mu.readCompactions) == 0 {
		db.writesQuietLocked(false) // time the pause from here
		return false
	}
	q := db.mu.readCompactions[:0]
	for _, c := range db.mu.readCompactions {
		if compaction.InLevel(db.versions.Current(), c.Level, c.File) {
			q = append(q, c)
		}
	}
	clear(db.mu.readCompactions[len(q):])
	db.mu.readCompactions = q
	return len(q) > 0 && db.writesQuietLocked(true)
}
