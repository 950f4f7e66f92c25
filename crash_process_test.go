package bloomkv

// Kill -9 tests with real processes on the operating system's file system.
//
// The test binary re-executes itself as a child (TestCrashProcessChild,
// selected with -test.run and told what to do by the BLOOMKV_CRASH_CHILD
// environment variable). The child opens a database in a shared directory
// with small memtables, tables and manifest -- so flushes, compactions and
// manifest rewrites are in flight at any moment -- and writes the batches of
// workload_test.go one after another, printing "ack <id>" on stdout only
// after Write returned. The parent reads the acks, kills the child with
// SIGKILL at a random moment, reopens the directory and checks that it
// holds exactly batches 1..P, where P covers every ack (the page cache keeps
// every written byte across a process kill, so even without Sync nothing
// acknowledged may be lost) and at most the one batch in flight. Then the
// next child goes on from P+1, many cycles on one directory. Some kills land
// while the child is still recovering from the previous kill.
//
// BLOOMKV_CRASH_CYCLES sets the number of cycles and BLOOMKV_CRASH_SEED the
// seed of the kill times (logged, for replaying a failure). Each cycle
// writes in a WAL mode chosen at random, and the check holds it to that
// mode's promise (see crash_process_test.go's TestCrashProcessKill).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

const crashChildEnv = "BLOOMKV_CRASH_CHILD"

// crashBufferedSlack: in WALBuffered an acknowledged write reaches the
// operating system within WALBufferedDelay (1 ms); the test allows this much
// for scheduling, so it checks the promise without timing anything tightly.
const crashBufferedSlack = time.Second

// crashProcessOptions are the child's options (and the parent's when it
// checks the directory): small enough that background work never stops.
func crashProcessOptions(mode WALMode) *Options {
	return &Options{
		WALMode:               mode,
		FS:                    vfs.Default,
		MemtableSize:          16 << 10,
		BlockSize:             1 << 10,
		L0CompactionThreshold: 3,
		LBaseMaxBytes:         64 << 10,
		TargetFileSize:        16 << 10,
		MaxManifestFileSize:   4 << 10,
	}
}

// TestCrashProcessChild is the child's body; it does nothing unless started
// by TestCrashProcessKill. It writes until killed.
func TestCrashProcessChild(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("runs only as the child of TestCrashProcessKill")
	}
	parts := strings.Split(spec, ";")
	if len(parts) != 3 {
		t.Fatalf("bad %s=%q", crashChildEnv, spec)
	}
	dir := parts[0]
	start, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	mode, err := strconv.Atoi(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, crashProcessOptions(WALMode(mode)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: Open: %v\n", err)
		os.Exit(3)
	}
	// "ready mapped": the log Open started is memory-mapped (reserved
	// ahead of its records), so the kill tests the mapped log.
	if newestLogReserved(t, dir) {
		fmt.Fprintf(os.Stdout, "ready mapped\n")
	} else {
		fmt.Fprintf(os.Stdout, "ready\n")
	}
	// A safety net: never outlive a parent that failed to kill us.
	deadline := time.Now().Add(30 * time.Second)
	for id := start; time.Now().Before(deadline); id++ {
		if err := db.Write(genBatch(id)); err != nil {
			fmt.Fprintf(os.Stderr, "child: batch %d: %v\n", id, err)
			os.Exit(3)
		}
		// Unbuffered: one write(2) per ack, issued after Write returned.
		fmt.Fprintf(os.Stdout, "ack %d\n", id)
	}
	os.Exit(4)
}

// crashChildRun is one child process from start to its death.
type crashChildRun struct {
	lastAck int // last id acknowledged (start-1 if none)
	// settledAck is the last id acknowledged at least crashBufferedSlack
	// before the kill: in WALBuffered it must have reached the log.
	settledAck int
	ready      bool
	mapped     bool // the log Open started was memory-mapped
	killedLate bool // killed after Open returned
	stderr     string
}

// runCrashChild starts a child writing from id start and kills it after
// delay, measured from its "ready" line, or from its start if early.
func runCrashChild(t *testing.T, dir string, start int, mode WALMode, early bool, delay time.Duration) crashChildRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashProcessChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%d;%d", crashChildEnv, dir, start, int(mode)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	run := crashChildRun{lastAck: start - 1, settledAck: start - 1}
	type ack struct {
		id int
		at time.Time
	}
	var acks []ack // guarded by mu
	ready := make(chan struct{})
	var mu sync.Mutex // guards run while the reader runs
	var protoErr error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			switch {
			case line == "ready" || line == "ready mapped":
				run.ready, run.mapped = true, line == "ready mapped"
				close(ready)
			case strings.HasPrefix(line, "ack "):
				id, err := strconv.Atoi(line[4:])
				if err != nil || id != run.lastAck+1 {
					protoErr = fmt.Errorf("ack %q after ack %d", line, run.lastAck)
				} else {
					run.lastAck = id
					acks = append(acks, ack{id, time.Now()})
				}
			}
			mu.Unlock()
		}
	}()
	if !early {
		select {
		case <-ready:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("child never became ready; stderr:\n%s", stderr.String())
		}
	}
	time.Sleep(delay)
	mu.Lock()
	run.killedLate = run.ready
	killAt := time.Now()
	for _, a := range acks {
		if killAt.Sub(a.at) >= crashBufferedSlack {
			run.settledAck = a.id
		}
	}
	mu.Unlock()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-readerDone
	waitErr := cmd.Wait()
	run.stderr = stderr.String()
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) || exitErr.ExitCode() != -1 {
		// Exit code -1: ended by a signal, i.e. our kill.
		t.Fatalf("child did not die by the kill (%v); stderr:\n%s", waitErr, run.stderr)
	}
	if protoErr != nil {
		t.Fatal(protoErr)
	}
	return run
}

func TestCrashProcessKill(t *testing.T) {
	cycles := 20
	if testing.Short() {
		cycles = 6
	}
	if s := os.Getenv("BLOOMKV_CRASH_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("BLOOMKV_CRASH_CYCLES=%q", s)
		}
		cycles = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BLOOMKV_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("BLOOMKV_CRASH_SEED=%q", s)
		}
	}
	t.Logf("BLOOMKV_CRASH_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))

	dir := t.TempDir()
	// Time bound: stop starting cycles after this long (the last one and
	// its check still run). Open with -short=false and a larger
	// BLOOMKV_CRASH_CYCLES for a long run.
	budget := 20 * time.Second
	if os.Getenv("BLOOMKV_CRASH_CYCLES") != "" {
		budget = 24 * time.Hour
	}
	began := time.Now()
	next, totalAcks, late, duringOpen := 1, 0, 0, 0
	writeThroughLate, mappedTails := 0, 0
	for cycle := 0; cycle < cycles; cycle++ {
		if time.Since(began) > budget {
			t.Logf("time budget spent after %d cycles", cycle)
			break
		}
		// Half the cycles write through (the default); the rest in the
		// other modes, each checked against its own promise.
		mode := WALWriteThrough
		if r := rng.IntN(6); r >= 3 {
			mode = WALMode(r - 2) // buffered, sync, disabled
		}
		// One kill in four is timed from the start of the process, so it
		// may land during Open's recovery of the previous kill.
		early := rng.IntN(4) == 0
		delay := time.Duration(10+rng.IntN(191)) * time.Millisecond
		if early {
			// A child is ready a few milliseconds after it starts.
			delay = time.Duration(1+rng.IntN(8)) * time.Millisecond
		}
		run := runCrashChild(t, dir, next, mode, early, delay)
		acks := run.lastAck - (next - 1)
		totalAcks += acks
		if run.killedLate {
			late++
		} else {
			duringOpen++
		}
		if mode == WALWriteThrough && run.killedLate {
			if logsMapped && !run.mapped {
				t.Fatalf("cycle %d: the write-through child's log was not memory-mapped", cycle)
			}
			// A kill leaves the newest log reserved to a window
			// boundary unless it landed while a switch had sealed
			// the old log and not yet reserved the new one.
			writeThroughLate++
			if newestLogReserved(t, dir) {
				mappedTails++
			}
		}

		db, err := Open(dir, crashProcessOptions(WALWriteThrough))
		if err != nil {
			t.Fatalf("cycle %d: reopen after kill: %v\nchild stderr:\n%s", cycle, err, run.stderr)
		}
		// What survives is always a prefix, whole batches, and at most the
		// one batch in flight past the last ack. Write-through and sync:
		// every ack survives. Buffered: every ack older than the slack.
		// Disabled: only what was flushed (no lower bound).
		must := run.lastAck
		switch mode {
		case WALBuffered:
			must = run.settledAck
		case WALDisabled:
			must = next - 1
		}
		p := verifyPrefix(t, db, must, run.lastAck+1)
		checkInvariants(t, db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("cycle %d: %s early=%v killed after %v: %d acks, recovered 1..%d", cycle, mode, early, delay, acks, p)
		next = p + 1
	}
	t.Logf("%d kills after Open returned, %d before (during recovery), %d batches acknowledged; %d of %d write-through kills left a mapped log's reserved space",
		late, duringOpen, totalAcks, mappedTails, writeThroughLate)
	if totalAcks == 0 || late == 0 {
		t.Fatalf("the children acknowledged %d batches in %d late kills: nothing was tested", totalAcks, late)
	}
}

// logsMapped: this system writes write-through logs through a memory map
// (vfs.WritableMapper: 64-bit Linux).
const logsMapped = runtime.GOOS == "linux" && math.MaxInt != math.MaxInt32

// newestLogReserved reports whether the newest non-empty log in dir ends in
// space reserved to a window boundary (a mapped log's, cut by a kill).
func newestLogReserved(t *testing.T, dir string) bool {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var newest uint64
	var size int64
	for _, name := range names {
		ft, num, ok := base.ParseFilename(name)
		if !ok || ft != base.FileTypeLog || num < newest {
			continue
		}
		fi, err := vfs.Default.Stat(vfs.Default.PathJoin(dir, name))
		if err != nil || fi.Size() == 0 {
			continue
		}
		newest, size = num, fi.Size()
	}
	return size > 0 && size%(64<<10) == 0
}
