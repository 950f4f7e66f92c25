package bloomkv

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// idleTestDB opens a database whose level 0 only an idle compaction
// empties (the threshold is never reached by these tests).
func idleTestDB(t *testing.T, delay time.Duration, l *EventListener, more ...func(*Options)) *DB {
	t.Helper()
	opts := tinyOptions(vfs.NewMem())
	opts.MemtableSize = 1 << 20 // one table per putFlush
	opts.L0CompactionThreshold = 100
	opts.L0SlowdownWritesThreshold = 200
	opts.L0StopWritesThreshold = 300
	opts.IdleCompactionDelay = delay
	opts.EventListener = l
	for _, f := range more {
		f(opts)
	}
	return mustOpen(t, "/db", opts)
}

// fireIdleTimer fires the idle timer by hand once it is armed with the
// current sequence number (it may have been armed before the last writes;
// firing that one would only re-arm it).
func fireIdleTimer(t *testing.T, db *DB) {
	t.Helper()
	for {
		db.mu.Lock()
		current := db.mu.idle.armed && db.mu.idle.seq == db.versions.VisibleSeq()
		db.mu.Unlock()
		db.idleTimerFired()
		if current {
			return
		}
		waitFor(t, "the idle timer to be armed again", func() bool {
			db.mu.Lock()
			defer db.mu.Unlock()
			return db.mu.idle.armed
		})
	}
}

func putFlush(t *testing.T, db *DB, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := db.Put(fmt.Appendf(nil, "key%05d", i), fmt.Appendf(nil, "value%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestIdleCompactionDrainsLevel0: once writes stop, the level-0 tables
// below the threshold move into level 1, every key stays readable, and
// the compaction is reported as idle.
func TestIdleCompactionDrainsLevel0(t *testing.T) {
	var mu sync.Mutex
	var idle []CompactionInfo
	l := &EventListener{CompactionEnd: func(i CompactionInfo) {
		if i.Idle {
			mu.Lock()
			idle = append(idle, i)
			mu.Unlock()
		}
	}}
	// The timer is fired by hand once the three tables exist (a real one
	// could fire between two flushes on a loaded machine).
	// Static targets: level 0 compacts into level 1 (TestDynamicLevelShape
	// covers the base level under dynamic ones).
	db := idleTestDB(t, time.Hour, l, func(o *Options) { o.StaticLevelBytes = true })
	defer db.Close()
	// Interleaved ranges, so that the tables overlap each other.
	putFlush(t, db, 0, 300)
	putFlush(t, db, 150, 450)
	putFlush(t, db, 100, 200)
	fireIdleTimer(t, db)
	waitFor(t, "an idle compaction to empty level 0", func() bool {
		m := db.Metrics()
		return m.IdleCompactions >= 1 && m.Levels[0].Files == 0
	})
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Levels[1].Files+m.Levels[2].Files == 0 {
		t.Fatalf("level 0 emptied but nothing below it: %+v", m.Levels[:3])
	}
	if m.IdleCompactions > m.Compactions {
		t.Fatalf("IdleCompactions %d > Compactions %d", m.IdleCompactions, m.Compactions)
	}
	for i := 0; i < 450; i++ {
		v, err := db.Get(fmt.Appendf(nil, "key%05d", i))
		if err != nil || string(v) != fmt.Sprintf("value%d", i) {
			t.Fatalf("key%05d after the idle compaction: %q, %v", i, v, err)
		}
	}
	// Events are delivered on their own goroutine: wait for this one.
	waitFor(t, "the idle compaction's event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(idle) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if len(idle) == 0 || idle[0].FromLevel != 0 || idle[0].ToLevel != 1 || idle[0].Err != nil {
		t.Fatalf("idle compaction events: %+v", idle)
	}
	l0Inputs := 0
	for _, in := range idle[0].Inputs {
		if in.Level == 0 {
			l0Inputs++
		}
	}
	if l0Inputs != 3 {
		t.Fatalf("the idle compaction took %d level-0 tables, want all 3", l0Inputs)
	}
}

// TestIdleCompactionRealTimer: with a real 5 ms delay, level 0 empties
// on its own once the writes stop.
func TestIdleCompactionRealTimer(t *testing.T) {
	db := idleTestDB(t, 5*time.Millisecond, nil)
	defer db.Close()
	putFlush(t, db, 0, 200)
	putFlush(t, db, 100, 300)
	waitFor(t, "level 0 to empty", func() bool {
		m := db.Metrics()
		return m.IdleCompactions >= 1 && m.Levels[0].Files == 0
	})
}

// TestIdleCompactionWaitsForAPause drives the timer by hand (its real
// delay is an hour): a write between arming and firing re-arms it; a
// firing with no write since arming makes the compaction due; a write
// after the firing cancels a due compaction that has not started.
func TestIdleCompactionWaitsForAPause(t *testing.T) {
	db := idleTestDB(t, time.Hour, nil)
	defer db.Close()
	putFlush(t, db, 0, 100)
	armed := func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.idle.armed
	}
	waitFor(t, "the idle timer to be armed after the flush", armed)

	// A write, then the timer fires: not idle.
	if err := db.Put([]byte("late"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	db.idleTimerFired()
	db.mu.Lock()
	if db.mu.idle.due {
		db.mu.Unlock()
		t.Fatal("the compaction is due although a write came after the timer was armed")
	}
	db.mu.Unlock()
	waitFor(t, "the loop to re-arm the timer", armed)
	if n := db.Metrics().IdleCompactions; n != 0 {
		t.Fatalf("%d idle compactions while writes went on", n)
	}

	// Due, then a write before the loop acts on it: cancelled.
	db.mu.Lock()
	armedSeq := db.mu.idle.seq
	db.mu.idle.due, db.mu.idle.seq = true, db.versions.VisibleSeq()-1
	if db.idleCompactionDueLocked() {
		db.mu.Unlock()
		t.Fatal("a write after the timer fired did not cancel the idle compaction")
	}
	db.mu.idle.seq = armedSeq
	db.mu.Unlock()

	// No write since arming: the compaction runs.
	waitFor(t, "the loop to re-arm the timer", armed)
	db.idleTimerFired()
	waitFor(t, "the idle compaction", func() bool {
		m := db.Metrics()
		return m.IdleCompactions == 1 && m.Levels[0].Files == 0
	})
	if v, err := db.Get([]byte("late")); err != nil || string(v) != "v" {
		t.Fatalf("late: %q, %v", v, err)
	}
	// Level 0 is empty: the timer is not re-armed until a flush fills it.
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	if armed() {
		t.Fatal("the idle timer was armed with level 0 empty")
	}
}

// TestIdleCompactionOff: a negative delay and DisableAutomaticCompactions
// each keep level 0 as it is.
func TestIdleCompactionOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		delay   time.Duration
		disable bool
	}{{"negative delay", -1, false}, {"automatic compactions off", time.Millisecond, true}} {
		t.Run(tc.name, func(t *testing.T) {
			db := idleTestDB(t, tc.delay, nil, func(o *Options) { o.DisableAutomaticCompactions = tc.disable })
			defer db.Close()
			putFlush(t, db, 0, 100)
			putFlush(t, db, 50, 150)
			time.Sleep(50 * time.Millisecond)
			db.mu.Lock()
			armed := db.mu.idle.armed
			db.mu.Unlock()
			if m := db.Metrics(); m.Levels[0].Files != 2 || m.IdleCompactions != 0 || armed {
				t.Fatalf("level 0 %d tables, %d idle compactions, timer armed %v; want 2, 0, false",
					m.Levels[0].Files, m.IdleCompactions, armed)
			}
		})
	}
}

// TestIdleCompactionDefault: the default delay is one second outside this
// package's tests.
func TestIdleCompactionDefault(t *testing.T) {
	saved := defaultIdleCompactionDelay
	defer func() { defaultIdleCompactionDelay = saved }()
	defaultIdleCompactionDelay = time.Second
	o, err := (&Options{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.IdleCompactionDelay != time.Second {
		t.Fatalf("default IdleCompactionDelay %v, want 1s", o.IdleCompactionDelay)
	}
}

// TestIdleCompactionDeclinesSmallFlush: a small level-0 table over a large
// level 1 waits for the threshold (an idle compaction would rewrite level
// 1 for a few keys), and the timer stays off until the tree changes; a
// larger flush then is compacted.
func TestIdleCompactionDeclinesSmallFlush(t *testing.T) {
	db := idleTestDB(t, 10*time.Millisecond, nil, func(o *Options) {
		o.LBaseMaxBytes = 4 << 20
		o.TargetFileSize = 4 << 20 // level 1 is one table
		o.StaticLevelBytes = true  // level 0 compacts into level 1
	})
	defer db.Close()
	putFlush(t, db, 0, 3000)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.Levels[0].Files != 0 || m.Levels[1].Files != 1 {
		t.Fatalf("after Compact: level 0 %d, level 1 %d tables; want 0 and 1", m.Levels[0].Files, m.Levels[1].Files)
	}
	putFlush(t, db, 1500, 1502) // two keys
	l1 := db.Metrics().Levels[1].Bytes
	waitFor(t, "the idle timer to fire and decline", func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.idle.declined == db.versions.Current() && !db.mu.idle.armed
	})
	time.Sleep(50 * time.Millisecond) // five delays: no re-arming, no compaction
	db.mu.Lock()
	armed := db.mu.idle.armed
	db.mu.Unlock()
	if m := db.Metrics(); m.IdleCompactions != 0 || m.Levels[0].Files != 1 || armed {
		t.Fatalf("small flush over %d B of level 1: %d idle compactions, level 0 %d tables, timer armed %v; want 0, 1, false",
			l1, m.IdleCompactions, m.Levels[0].Files, armed)
	}

	putFlush(t, db, 0, 3000) // as large as level 1
	waitFor(t, "the idle compaction of the larger flush", func() bool {
		m := db.Metrics()
		return m.IdleCompactions == 1 && m.Levels[0].Files == 0
	})
}
