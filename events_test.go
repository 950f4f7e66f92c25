package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// eventCounter counts every callback of an EventListener and keeps the
// events it needs to check.
type eventCounter struct {
	mu     sync.Mutex
	counts map[string]int
	flush  []FlushInfo // FlushEnd
	comp   []CompactionInfo
	drops  []WALRecoveryDropInfo
	bgErrs []BackgroundErrorInfo
	stalls []string
	// open jobs: Begin seen, End not yet
	openJobs map[int]bool
}

func newEventCounter() *eventCounter {
	return &eventCounter{counts: map[string]int{}, openJobs: map[int]bool{}}
}

func (c *eventCounter) count(name string) {
	c.mu.Lock()
	c.counts[name]++
	c.mu.Unlock()
}

func (c *eventCounter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

func (c *eventCounter) listener() *EventListener {
	return &EventListener{
		FlushBegin: func(i FlushInfo) {
			c.mu.Lock()
			c.counts["FlushBegin"]++
			c.openJobs[i.JobID] = true
			c.mu.Unlock()
		},
		FlushEnd: func(i FlushInfo) {
			c.mu.Lock()
			c.counts["FlushEnd"]++
			delete(c.openJobs, i.JobID)
			c.flush = append(c.flush, i)
			c.mu.Unlock()
		},
		CompactionBegin: func(i CompactionInfo) {
			c.mu.Lock()
			c.counts["CompactionBegin"]++
			c.openJobs[i.JobID] = true
			c.mu.Unlock()
		},
		CompactionEnd: func(i CompactionInfo) {
			c.mu.Lock()
			c.counts["CompactionEnd"]++
			delete(c.openJobs, i.JobID)
			c.comp = append(c.comp, i)
			c.mu.Unlock()
		},
		TableCreated: func(TableCreateInfo) { c.count("TableCreated") },
		TableDeleted: func(TableDeleteInfo) { c.count("TableDeleted") },
		WALCreated:   func(WALCreateInfo) { c.count("WALCreated") },
		WALDeleted:   func(WALDeleteInfo) { c.count("WALDeleted") },
		WALRecoveryDropped: func(i WALRecoveryDropInfo) {
			c.mu.Lock()
			c.counts["WALRecoveryDropped"]++
			c.drops = append(c.drops, i)
			c.mu.Unlock()
		},
		BackgroundError: func(i BackgroundErrorInfo) {
			c.mu.Lock()
			c.counts["BackgroundError"]++
			c.bgErrs = append(c.bgErrs, i)
			c.mu.Unlock()
		},
		WriteStallBegin: func(i WriteStallBeginInfo) {
			c.mu.Lock()
			c.counts["WriteStallBegin"]++
			c.stalls = append(c.stalls, i.Reason)
			c.mu.Unlock()
		},
		WriteStallEnd: func(WriteStallEndInfo) { c.count("WriteStallEnd") },
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEventListenerEveryCallback drives a database through flushes,
// automatic and manual compactions, a write stall, a torn tail and a
// failing flush, and checks that every callback fires and pairs up.
func TestEventListenerEveryCallback(t *testing.T) {
	c := newEventCounter()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))

	// 1. Flushes, compactions, tables and logs created and deleted, and a
	// write stall, with callbacks that call back into the DB.
	fs := vfs.NewMem()
	o := tinyOptions(fs)
	o.MaxImmutableMemtables = 1
	o.Logger = logger
	o.EventListener = c.listener()
	var dbp atomic.Pointer[DB]
	var reentrant atomic.Int32
	countFlushEnd := o.EventListener.FlushEnd
	o.EventListener.FlushEnd = func(i FlushInfo) {
		countFlushEnd(i)
		if db := dbp.Load(); db != nil && reentrant.Add(1) == 1 {
			// A callback may call into the DB, even wait for background
			// work: callbacks run on their own goroutine.
			_ = db.Put([]byte("from-callback"), []byte("x"))
			_ = db.Flush()
			_ = db.Metrics()
		}
	}
	db := mustOpen(t, "/db", o)
	dbp.Store(db)
	for i := range 3000 {
		if err := db.Put(fmt.Appendf(nil, "key%06d", i*7919%3000), bytes.Repeat([]byte{'v'}, 40)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	// A stall: flushes held off, one immutable memtable allowed.
	db.mu.Lock()
	db.mu.flushPaused = true
	db.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		for i := range 400 {
			if err := db.Put(fmt.Appendf(nil, "stall%04d", i), bytes.Repeat([]byte{'s'}, 40)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	waitFor(t, "WriteStallBegin", func() bool { return c.get("WriteStallBegin") > 0 })
	db.mu.Lock()
	db.mu.flushPaused = false
	db.mu.bgCond.Broadcast()
	db.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := reopenGet(fs, "from-callback"); err != nil || v != "x" {
		t.Fatalf("the write made from a callback: %q, %v", v, err)
	}

	// 2. A torn tail dropped by recovery.
	img, names, _ := multiLogDB(t, 2, 20, true)
	torn := withDamage(t, img, names[1], truncateTo(len(readMemFile(t, img, "/db/"+names[1]))-4))
	tdb, err := Open("/db", &Options{FS: torn, EventListener: c.listener(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	dropped := tdb.Metrics().WALRecoveryDroppedBytes
	if err := tdb.Close(); err != nil {
		t.Fatal(err)
	}

	// 3. A flush that keeps failing: retried, then writes stop.
	efs := vfs.NewErrorFS(vfs.NewMem())
	bo := tinyOptions(efs)
	bo.EventListener, bo.Logger = c.listener(), logger
	bdb := mustOpen(t, "/db", bo)
	efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpCreate}, Sticky: true, Match: func(p string) bool { return strings.HasSuffix(p, ".sst") }})
	if err := bdb.Put([]byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := bdb.Flush(); err == nil {
		t.Fatal("Flush succeeded with every table create failing")
	}
	_ = bdb.Close()

	for _, name := range []string{
		"FlushBegin", "FlushEnd", "CompactionBegin", "CompactionEnd",
		"TableCreated", "TableDeleted", "WALCreated", "WALDeleted",
		"WALRecoveryDropped", "BackgroundError", "WriteStallBegin", "WriteStallEnd",
	} {
		t.Logf("%-18s %d", name, c.get(name))
		if c.get(name) == 0 {
			t.Errorf("%s never fired", name)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts["FlushBegin"] != c.counts["FlushEnd"] || c.counts["CompactionBegin"] != c.counts["CompactionEnd"] ||
		c.counts["WriteStallBegin"] != c.counts["WriteStallEnd"] || len(c.openJobs) != 0 {
		t.Errorf("unpaired Begin/End: %v, open jobs %v", c.counts, c.openJobs)
	}
	var manual, flushed, failed bool
	for _, ci := range c.comp {
		manual = manual || ci.Manual
		if ci.Err == nil && !ci.TrivialMove && (len(ci.Inputs) == 0 || len(ci.Outputs) == 0 || ci.BytesIn == 0 || ci.Duration <= 0) {
			t.Errorf("compaction event lacks inputs, outputs, bytes or duration: %+v", ci)
		}
	}
	for _, fi := range c.flush {
		if fi.Err == nil && len(fi.Output) == 1 && fi.Bytes > 0 && fi.Output[0].Level == 0 {
			flushed = true
		}
		failed = failed || fi.Err != nil
	}
	if !manual || !flushed || !failed {
		t.Errorf("manual compaction %v, successful flush with output %v, failed flush %v", manual, flushed, failed)
	}
	if d := c.drops[0]; d.Path != "/db/"+names[1] || d.Bytes <= 0 || !d.TornTail || d.Offset <= 0 {
		t.Errorf("drop event %+v", d)
	}
	// Every byte recovery dropped reaches the listener (issue 10).
	var reported int64
	for _, d := range c.drops {
		reported += d.Bytes
	}
	if dropped == 0 || uint64(reported) != dropped {
		t.Errorf("listener told of %d dropped bytes, Metrics counts %d", reported, dropped)
	}
	if n := len(c.bgErrs); n != maxBackgroundAttempts || c.bgErrs[n-1].WritesStopped == false || c.bgErrs[0].WritesStopped {
		t.Errorf("background errors: %+v; want %d, the last stopping writes", c.bgErrs, maxBackgroundAttempts)
	}
	if !errors.Is(c.bgErrs[0].Err, vfs.ErrInjected) {
		t.Errorf("background error %v does not wrap the injected error", c.bgErrs[0].Err)
	}
	if c.stalls[0] != WriteStallMemtables {
		t.Errorf("stall reason %q", c.stalls[0])
	}
	// Logged: the drop, the retries and the stop; nothing else.
	out := logs.String()
	for _, want := range []string{"torn tail", "level=WARN msg=\"bloomkv: background work failed; retrying\"", "level=ERROR"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestLoggerQuietOnHappyPath: a run with flushes and compactions logs
// nothing at Info (Debug hears job summaries: TestDebugLogSummaries).
func TestLoggerQuietOnHappyPath(t *testing.T) {
	var logs bytes.Buffer
	o := tinyOptions(vfs.NewMem())
	o.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	db := mustOpen(t, "/db", o)
	for i := range 1000 {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), make([]byte, 50)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, "/db", o)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if logs.Len() > 0 {
		t.Fatalf("happy path logged:\n%s", logs.String())
	}
}

// reopenGet opens the database in fs and reads key.
func reopenGet(fs vfs.FS, key string) (string, error) {
	db, err := Open("/db", &Options{FS: fs})
	if err != nil {
		return "", err
	}
	defer db.Close()
	v, err := db.Get([]byte(key))
	return string(v), err
}

// syncWriter makes a writer safe for the logger's concurrent use.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
