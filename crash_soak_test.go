package bloomkv

// A kill -9 soak with concurrent writers, range deletions and checkpoints,
// in the manner of RocksDB's db_crashtest (issue 24).
//
// The test binary re-executes itself as a child (TestCrashSoakChild) that
// opens one directory and runs soakWriters writers over one shared pool of
// keys -- Put, Delete, DeleteRange and atomic batches mixing them -- plus a
// goroutine that now and then runs Flush, Compact or Checkpoint into a fresh
// directory. The parent kills it with SIGKILL at a random moment (a quarter
// of the kills are aimed at Open, still recovering from the previous kill;
// about half of those land in it), reopens the directory, checks it, and starts the next child on the same
// directory, cycle after cycle, each in a WAL mode chosen at random.
//
// The expected state. Writer w's operations in a cycle are a pure function
// of (seed, cycle, w, i), so the parent knows each one from its index. The
// child prints "b w i" before operation i of writer w starts and "a w i"
// after it returned, one write(2) per line under one mutex, so the parent
// sees the begins and acks in the order they happened. A writer holds a
// lock on every key its operation touches (all keys of a range deletion:
// the pool is finite) from before "b" until after "a", so on each key the
// operations are serialized in the order of their "b" lines. The state of
// the database is then fixed by how many operations of each writer were
// applied, P[w]: apply, in "b" order, every operation (w, i) with i < P[w].
// A writer's operations get increasing sequence numbers, so a crash keeps
// a prefix of each writer's stream; the check searches for P with
//
//   - lo[w] <= P[w] <= hi[w]: every operation the WAL mode promises to
//     keep is kept (lo), none that never started is there (hi);
//   - no hole across writers: if operation A was acknowledged before B
//     began, B has the larger sequence number, so B applied means A applied;
//   - the whole database (iterator and Get) equal to that state: nothing
//     lost, nothing invented, no batch in part, no key back from a range
//     deletion.
//
// To keep that search small, each writer's batches end with a marker
// ("w<w>" = "<cycle>.<i>"), and at most soakMaxSingles single operations
// come between two batches: the marker read back pins P[w] to at most
// soakMaxSingles+1 values.
//
// A checkpoint is checked the same way: the child prints "K n" before
// Checkpoint and "k n" after it returned; the copy must open read-only and
// hold a state with P[w] between the acks before "K" and the begins before
// "k" (Checkpoint's promise: every write acknowledged before the call, and
// a point in time before it returned).
//
// BLOOMKV_CRASHSOAK_CYCLES sets the number of cycles (and lifts the time
// budget), BLOOMKV_CRASHSOAK_SEED the seed (logged). The seed fixes the
// operations and the choices of mode and delay; where the kills land in
// the stream depends on timing, so a replay is close, not exact.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const crashSoakChildEnv = "BLOOMKV_CRASHSOAK_CHILD"

const (
	// soakWriters run concurrently in the child.
	soakWriters = 4
	// soakPool keys, shared by every writer: small enough that writers
	// overwrite each other's keys and a range deletion usually removes
	// something (about 40% of the pool is live at any time).
	soakPool = 256
	// soakMaxSingles bounds the single operations between two batches of a
	// writer (see the file comment).
	soakMaxSingles = 3
)

func soakKey(i int) string       { return fmt.Sprintf("k%03d", i) }
func soakMarkerKey(w int) string { return fmt.Sprintf("w%d", w) }

// soakOp is one operation of a writer: a single Put, Delete or DeleteRange,
// or a batch of them that ends with the writer's marker.
type soakOp struct {
	batch bool
	ops   []genOp
	locks []int // pool indexes the operation touches, ascending
}

// soakGenOp returns operation i of writer w in the given cycle.
func soakGenOp(seed uint64, cycle, w, i int) soakOp {
	rng := rand.New(rand.NewPCG(seed, uint64(cycle)<<32|uint64(w)<<26|uint64(i)))
	op := soakOp{batch: i%(soakMaxSingles+1) == soakMaxSingles || rng.IntN(3) == 0}
	n := 1
	if op.batch {
		n = 2 + rng.IntN(7)
	}
	touched := map[int]bool{}
	for j := 0; j < n; j++ {
		k := rng.IntN(soakPool)
		switch r := rng.IntN(100); {
		case r < 8:
			end := min(k+1+rng.IntN(24), soakPool)
			op.ops = append(op.ops, genOp{key: soakKey(k), end: soakKey(end)})
			for x := k; x < end; x++ {
				touched[x] = true
			}
		case r < 25:
			op.ops = append(op.ops, genOp{del: true, key: soakKey(k)})
			touched[k] = true
		default:
			v := fmt.Sprintf("c%d.w%d.i%d.j%d.", cycle, w, i, j) + strings.Repeat("x", rng.IntN(100))
			op.ops = append(op.ops, genOp{key: soakKey(k), value: v})
			touched[k] = true
		}
	}
	if op.batch {
		// Only writer w writes its marker, so it needs no lock.
		op.ops = append(op.ops, genOp{key: soakMarkerKey(w), value: fmt.Sprintf("%d.%d", cycle, i)})
	}
	for k := range touched {
		op.locks = append(op.locks, k)
	}
	slices.Sort(op.locks)
	return op
}

// apply writes the operation to db: singles through Put, Delete and
// DeleteRange, batches through Write.
func (op soakOp) apply(db *DB) error {
	if !op.batch {
		o := op.ops[0]
		switch {
		case o.end != "":
			return db.DeleteRange([]byte(o.key), []byte(o.end))
		case o.del:
			return db.Delete([]byte(o.key))
		default:
			return db.Put([]byte(o.key), []byte(o.value))
		}
	}
	b := NewBatch()
	for _, o := range op.ops {
		switch {
		case o.end != "":
			b.DeleteRange([]byte(o.key), []byte(o.end))
		case o.del:
			b.Delete([]byte(o.key))
		default:
			b.Put([]byte(o.key), []byte(o.value))
		}
	}
	return db.Write(b)
}

// applyTo applies the operation to a model.
func (op soakOp) applyTo(m model) {
	for _, o := range op.ops {
		switch {
		case o.end != "":
			m.deleteRange(o.key, o.end)
		case o.del:
			delete(m, o.key)
		default:
			m[o.key] = o.value
		}
	}
}

// describe renders the operation for a failure message.
func (op soakOp) describe() string {
	var b strings.Builder
	if op.batch {
		b.WriteString("batch[")
	}
	for j, o := range op.ops {
		if j > 0 {
			b.WriteString(" ")
		}
		switch {
		case o.end != "":
			fmt.Fprintf(&b, "DeleteRange(%s,%s)", o.key, o.end)
		case o.del:
			fmt.Fprintf(&b, "Delete(%s)", o.key)
		default:
			fmt.Fprintf(&b, "Put(%s,%.16q)", o.key, o.value)
		}
	}
	if op.batch {
		b.WriteString("]")
	}
	return b.String()
}

// soakOut writes the child's protocol lines: one write(2) per line, under a
// mutex, so their order on the pipe is the order they happened in.
type soakOut struct {
	mu  sync.Mutex
	buf []byte
}

func (o *soakOut) line(kind byte, a, b int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf[:0], kind, ' ')
	o.buf = strconv.AppendInt(o.buf, int64(a), 10)
	o.buf = append(o.buf, ' ')
	o.buf = strconv.AppendInt(o.buf, int64(b), 10)
	o.buf = append(o.buf, '\n')
	if _, err := os.Stdout.Write(o.buf); err != nil {
		os.Exit(5)
	}
}

// soakDie reports a failure of the child; the parent sees an exit that was
// not its kill, and the message on stderr.
func soakDie(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "child: "+format+"\n", args...)
	os.Exit(3)
}

// soakCheckpointDir is where checkpoint n of a cycle goes.
func soakCheckpointDir(root string, cycle, n int) string {
	return filepath.Join(root, fmt.Sprintf("c%d-%d", cycle, n))
}

// TestCrashSoakChild is the child's body; it does nothing unless started
// by TestCrashSoakKill. It writes until killed.
func TestCrashSoakChild(t *testing.T) {
	spec := os.Getenv(crashSoakChildEnv)
	if spec == "" {
		t.Skip("runs only as the child of TestCrashSoakKill")
	}
	parts := strings.Split(spec, ";")
	if len(parts) != 5 {
		t.Fatalf("bad %s=%q", crashSoakChildEnv, spec)
	}
	dir, ckRoot := parts[0], parts[1]
	cycle, err1 := strconv.Atoi(parts[2])
	seed, err2 := strconv.ParseUint(parts[3], 10, 64)
	mode, err3 := strconv.Atoi(parts[4])
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	out := &soakOut{}
	out.line('o', 0, 0)
	began := time.Now()
	db, err := Open(dir, crashProcessOptions(WALMode(mode)))
	if err != nil {
		soakDie("Open: %v", err)
	}
	out.line('r', int(time.Since(began).Microseconds()), 0)

	var locks [soakPool]sync.Mutex
	for w := 0; w < soakWriters; w++ {
		go func() {
			for i := 0; ; i++ {
				op := soakGenOp(seed, cycle, w, i)
				for _, k := range op.locks {
					locks[k].Lock()
				}
				out.line('b', w, i)
				if err := op.apply(db); err != nil {
					soakDie("writer %d op %d: %v", w, i, err)
				}
				out.line('a', w, i)
				for _, k := range op.locks {
					locks[k].Unlock()
				}
			}
		}()
	}
	go func() {
		rng := rand.New(rand.NewPCG(seed, uint64(cycle)<<32|0xffff))
		for n := 0; ; n++ {
			time.Sleep(time.Duration(2+rng.IntN(30)) * time.Millisecond)
			switch r := rng.IntN(10); {
			case r < 3:
				out.line('F', n, 0)
				if err := db.Flush(); err != nil {
					soakDie("Flush: %v", err)
				}
				out.line('f', n, 0)
			case r < 6:
				var lo, hi []byte
				if rng.IntN(2) == 0 {
					a := rng.IntN(soakPool)
					lo, hi = []byte(soakKey(a)), []byte(soakKey(min(a+rng.IntN(64), soakPool-1)))
				}
				out.line('C', n, 0)
				if err := db.Compact(lo, hi); err != nil {
					soakDie("Compact(%q, %q): %v", lo, hi, err)
				}
				out.line('c', n, 0)
			default:
				out.line('K', n, 0)
				if err := db.Checkpoint(soakCheckpointDir(ckRoot, cycle, n)); err != nil {
					soakDie("Checkpoint %d: %v", n, err)
				}
				out.line('k', n, 0)
			}
		}
	}()
	// A safety net: never outlive a parent that failed to kill us.
	time.Sleep(30 * time.Second)
	os.Exit(4)
}

// soakEvent is one protocol line of the child, in pipe order.
type soakEvent struct {
	kind byte
	a, b int
}

// soakRun is what the parent learned from one child, from its start to its
// death.
type soakRun struct {
	cycle  int
	seed   uint64
	mode   WALMode
	events []soakEvent
	// Per writer, per operation index: the operation, the event positions
	// of its "b" and "a" lines, and when the parent read the "a".
	ops      [soakWriters][]soakOp
	beginPos [soakWriters][]int
	ackPos   [soakWriters][]int
	ackAt    [soakWriters][]time.Time
	opening  bool          // Open began
	ready    bool          // Open returned
	openTook time.Duration // as the child measured it
	killAt   time.Time
	stderr   string
}

// add records one protocol line; it reports a protocol error.
func (r *soakRun) add(line string) error {
	f := strings.Fields(line)
	if len(f) != 3 || len(f[0]) != 1 {
		return fmt.Errorf("bad line %q", line)
	}
	a, err1 := strconv.Atoi(f[1])
	b, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad line %q", line)
	}
	ev := soakEvent{kind: f[0][0], a: a, b: b}
	pos := len(r.events)
	switch ev.kind {
	case 'o':
		r.opening = true
	case 'r':
		r.ready, r.openTook = true, time.Duration(a)*time.Microsecond
	case 'b':
		if a < 0 || a >= soakWriters || b != len(r.beginPos[a]) || len(r.ackPos[a]) != b {
			return fmt.Errorf("line %q out of order", line)
		}
		r.beginPos[a] = append(r.beginPos[a], pos)
		r.ops[a] = append(r.ops[a], soakGenOp(r.seed, r.cycle, a, b))
	case 'a':
		if a < 0 || a >= soakWriters || b != len(r.ackPos[a]) || b != len(r.beginPos[a])-1 {
			return fmt.Errorf("line %q out of order", line)
		}
		r.ackPos[a] = append(r.ackPos[a], pos)
		r.ackAt[a] = append(r.ackAt[a], time.Now())
	case 'F', 'f', 'C', 'c', 'K', 'k':
	default:
		return fmt.Errorf("bad line %q", line)
	}
	r.events = append(r.events, ev)
	return nil
}

// runSoakChild starts a child for cycle and kills it: early, delay after
// the child said it is opening the database; otherwise delay after Open
// returned.
func runSoakChild(t *testing.T, dir, ckRoot string, cycle int, seed uint64, mode WALMode, early bool, delay time.Duration) *soakRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashSoakChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;%d;%d;%d", crashSoakChildEnv, dir, ckRoot, cycle, seed, int(mode)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	run := &soakRun{cycle: cycle, seed: seed, mode: mode}
	opening, ready := make(chan struct{}), make(chan struct{})
	var protoErr error
	readerDone := make(chan struct{})
	// The reader owns run until readerDone is closed.
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if protoErr != nil {
				continue
			}
			wasOpening, wasReady := run.opening, run.ready
			if protoErr = run.add(sc.Text()); protoErr != nil {
				continue
			}
			if run.opening && !wasOpening {
				close(opening)
			}
			if run.ready && !wasReady {
				close(ready)
			}
		}
	}()
	wait := ready
	if early {
		wait = opening
	}
	select {
	case <-wait:
	case <-readerDone:
		// The child ended on its own: report it below.
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-readerDone
		t.Fatalf("cycle %d: child never became ready; stderr:\n%s", cycle, stderr.String())
	}
	time.Sleep(delay)
	killAt := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-readerDone
	waitErr := cmd.Wait()
	run.killAt = killAt
	run.stderr = stderr.String()
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) || exitErr.ExitCode() != -1 {
		// Exit code -1: ended by a signal, i.e. our kill.
		t.Fatalf("cycle %d: child did not die by the kill (%v); stderr:\n%s", cycle, waitErr, run.stderr)
	}
	if protoErr != nil {
		t.Fatalf("cycle %d: %v", cycle, protoErr)
	}
	return run
}

// soakBounds are, per writer, the fewest and most operations a state may
// hold.
type soakBounds struct{ lo, hi [soakWriters]int }

// killBounds are the bounds after the kill: hi is every operation begun, lo
// what the WAL mode promises to keep (as TestCrashProcessKill holds it).
func (r *soakRun) killBounds() soakBounds {
	var b soakBounds
	lastFlush := -1 // position of the "F" of the newest Flush that returned
	flushBegan := map[int]int{}
	for pos, ev := range r.events {
		switch ev.kind {
		case 'F':
			flushBegan[ev.a] = pos
		case 'f':
			lastFlush = flushBegan[ev.a]
		}
	}
	for w := range soakWriters {
		b.hi[w] = len(r.beginPos[w])
		switch r.mode {
		case WALBuffered:
			// Acknowledged writes reach the OS within the buffer delay.
			for _, at := range r.ackAt[w] {
				if r.killAt.Sub(at) >= crashBufferedSlack {
					b.lo[w]++
				}
			}
		case WALDisabled:
			// Only what a Flush that returned covers: every write
			// acknowledged before it began.
			b.lo[w] = sort.SearchInts(r.ackPos[w], lastFlush)
		default:
			b.lo[w] = len(r.ackPos[w])
		}
	}
	return b
}

// checkpointBounds are the bounds for the checkpoint whose "K" and "k"
// lines are at positions began and done.
func (r *soakRun) checkpointBounds(began, done int) soakBounds {
	var b soakBounds
	for w := range soakWriters {
		b.lo[w] = sort.SearchInts(r.ackPos[w], began)
		b.hi[w] = sort.SearchInts(r.beginPos[w], done)
	}
	return b
}

// nextBatch returns the index of writer w's first batch after op i (i = -1:
// its first batch).
func (r *soakRun) nextBatch(w, i int) int {
	for j := i + 1; ; j++ {
		if j < len(r.ops[w]) {
			if r.ops[w][j].batch {
				return j
			}
			continue
		}
		if soakGenOp(r.seed, r.cycle, w, j).batch {
			return j
		}
	}
}

// soakSolution is the state a check found: per writer, the number of its
// operations applied.
type soakSolution struct{ applied [soakWriters]int }

// solve finds the state got holds (see the file comment): per writer a
// number of operations within bounds, no hole across writers, and exactly
// got's content when applied, in begin order, to base. It returns an error
// that explains the closest candidate when there is none.
func (r *soakRun) solve(base, got model, bd soakBounds) (soakSolution, error) {
	// Candidates per writer, from its marker.
	var cands [soakWriters][]int
	for w := range soakWriters {
		m := -1 // newest batch of this cycle present
		if v, ok := got[soakMarkerKey(w)]; ok {
			c, i, found := strings.Cut(v, ".")
			cycle, err1 := strconv.Atoi(c)
			idx, err2 := strconv.Atoi(i)
			if !found || err1 != nil || err2 != nil {
				return soakSolution{}, fmt.Errorf("writer %d: marker %q was never written", w, v)
			}
			if cycle == r.cycle {
				if idx >= bd.hi[w] || !r.ops[w][idx].batch {
					return soakSolution{}, fmt.Errorf("writer %d: marker %q names op %d, which is not a batch it began (it began %d): invented", w, v, idx, bd.hi[w])
				}
				m = idx
			}
			// A marker of an earlier cycle must be base's: the
			// comparison below checks it.
		}
		nb := r.nextBatch(w, m)
		lo, hi := max(m+1, bd.lo[w]), min(nb, bd.hi[w])
		if lo > hi {
			if nb < bd.lo[w] {
				newest := "none of this cycle"
				if m >= 0 {
					newest = fmt.Sprintf("op %d's", m)
				}
				return soakSolution{}, fmt.Errorf("writer %d: acknowledged ops 0..%d must be present, but the marker of its batch %d is not (newest marker present: %s): a lost acknowledged write or a batch in part",
					w, bd.lo[w]-1, nb, newest)
			}
			return soakSolution{}, fmt.Errorf("writer %d: batch %d present but only ops 0..%d began: invented", w, m, bd.hi[w]-1)
		}
		for p := lo; p <= hi; p++ {
			cands[w] = append(cands[w], p)
		}
	}

	// Every operation begun within the bounds, in begin order; the ones
	// before the first that may be absent apply to every candidate.
	type ref struct{ w, i int }
	var order []ref
	for _, ev := range r.events {
		if ev.kind == 'b' && ev.b < bd.hi[ev.a] {
			order = append(order, ref{ev.a, ev.b})
		}
	}
	fixed := base.clone()
	firstOpen := len(order)
	for n, o := range order {
		if o.i >= cands[o.w][0] {
			firstOpen = n
			break
		}
		r.ops[o.w][o.i].applyTo(fixed)
	}

	var best struct {
		diffs   int
		applied [soakWriters]int
		want    model
	}
	best.diffs = -1
	var pick [soakWriters]int
	for {
		var p soakSolution
		for w := range soakWriters {
			p.applied[w] = cands[w][pick[w]]
		}
		if r.noHole(p) {
			want := fixed.clone()
			for _, o := range order[firstOpen:] {
				if o.i < p.applied[o.w] {
					r.ops[o.w][o.i].applyTo(want)
				}
			}
			d := soakDiff(want, got)
			if d == 0 {
				return p, nil
			}
			if best.diffs < 0 || d < best.diffs {
				best.diffs, best.applied, best.want = d, p.applied, want
			}
		}
		// Next combination.
		w := 0
		for ; w < soakWriters; w++ {
			if pick[w]++; pick[w] < len(cands[w]) {
				break
			}
			pick[w] = 0
		}
		if w == soakWriters {
			break
		}
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "no state the writers may have left matches: lost acknowledged write, partial batch, resurrected key or invented value\n")
	for w := range soakWriters {
		fmt.Fprintf(&msg, "  writer %d: must hold its first %d ops, may hold %d (%d acked); candidates %v\n",
			w, bd.lo[w], bd.hi[w], len(r.ackPos[w]), cands[w])
	}

	if best.diffs < 0 {
		msg.WriteString("  every candidate leaves a hole: an op present although one acknowledged before it began is absent\n")
		return soakSolution{}, errors.New(msg.String())
	}
	fmt.Fprintf(&msg, "  closest: ops applied per writer %v, %d keys differ:\n", best.applied, best.diffs)
	shown := 0
	for _, k := range soakDiffKeys(best.want, got) {
		if shown++; shown > 8 {
			break
		}
		gv, gok := got[k]
		wv, wok := best.want[k]
		fmt.Fprintf(&msg, "    %s: got %.24q (present %v), want %.24q (present %v); this cycle's ops on it:", k, gv, gok, wv, wok)
		for _, o := range order {
			if op := r.ops[o.w][o.i]; soakTouches(op, k) {
				fmt.Fprintf(&msg, " w%d/%d%s", o.w, o.i, map[bool]string{true: "(acked)", false: ""}[o.i < len(r.ackPos[o.w])])
			}
		}
		msg.WriteString("\n")
	}
	return soakSolution{}, errors.New(msg.String())
}

// noHole reports whether p keeps every operation acknowledged before an
// operation it keeps began.
func (r *soakRun) noHole(p soakSolution) bool {
	for w1 := range soakWriters {
		a := p.applied[w1] // writer w1's first absent op
		if a >= len(r.ackPos[w1]) {
			continue // never acknowledged: orders nothing
		}
		for w2 := range soakWriters {
			if n := p.applied[w2]; n > 0 && r.beginPos[w2][n-1] > r.ackPos[w1][a] {
				return false
			}
		}
	}
	return true
}

func soakTouches(op soakOp, k string) bool {
	for _, o := range op.ops {
		if o.key == k || o.end != "" && o.key <= k && k < o.end {
			return true
		}
	}
	return false
}

func soakDiff(want, got model) int { return len(soakDiffKeys(want, got)) }

func soakDiffKeys(want, got model) []string {
	var ks []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			ks = append(ks, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// soakRead reads the whole of db with an iterator and checks that Get
// agrees on every key the soak can write.
func soakRead(t *testing.T, db *DB, what string) model {
	t.Helper()
	got := dbContents(t, db)
	keys := make([]string, 0, soakPool+soakWriters)
	for i := range soakPool {
		keys = append(keys, soakKey(i))
	}
	for w := range soakWriters {
		keys = append(keys, soakMarkerKey(w))
	}
	for _, k := range keys {
		v, err := db.Get([]byte(k))
		want, ok := got[k]
		switch {
		case ok && (err != nil || string(v) != want):
			t.Fatalf("%s: Get(%q) = %.24q, %v; the iterator says %.24q", what, k, v, err, want)
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("%s: Get(%q) = %.24q, %v; the iterator does not have it", what, k, v, err)
		}
	}
	for k := range got {
		if !slices.Contains(keys, k) {
			t.Fatalf("%s: key %q was never written", what, k)
		}
	}
	return got
}

// soakStats are the soak's totals, logged at the end.
type soakStats struct {
	cycles, duringOpen, late               int
	duringFlush, duringCompact, duringCkpt int
	acked, ackedBatches                    int
	inflightApplied, inflightAbsent        int
	unsettledDropped                       int
	checkpoints, checkpointsCut            int
	modes                                  [4]int
	writeThroughLate, mappedTails          int
}

func TestCrashSoakKill(t *testing.T) {
	cycles := 1000
	budget := 15 * time.Second
	if testing.Short() {
		budget = 4 * time.Second
	}
	if s := os.Getenv("BLOOMKV_CRASHSOAK_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("BLOOMKV_CRASHSOAK_CYCLES=%q", s)
		}
		cycles, budget = n, 24*time.Hour
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BLOOMKV_CRASHSOAK_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("BLOOMKV_CRASHSOAK_SEED=%q", s)
		}
	}
	t.Logf("BLOOMKV_CRASHSOAK_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 24))

	root := t.TempDir()
	dir, ckRoot := filepath.Join(root, "db"), filepath.Join(root, "checkpoints")
	if err := os.MkdirAll(ckRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	roOpts := crashProcessOptions(WALWriteThrough)
	roOpts.ReadOnly = true

	base := model{} // the content the next child starts from
	openTook := 10 * time.Millisecond
	var st soakStats
	began := time.Now()
	for cycle := 0; cycle < cycles; cycle++ {
		if time.Since(began) > budget {
			t.Logf("time budget spent after %d cycles", cycle)
			break
		}
		mode := WALWriteThrough
		if r := rng.IntN(6); r >= 3 {
			mode = WALMode(r - 2) // buffered, sync, disabled
		}
		// One kill in four lands somewhere in Open, most of them during
		// its recovery of the previous kill: the delay is drawn over
		// the time recent Opens took.
		early := rng.IntN(4) == 0
		delay := time.Duration(10+rng.IntN(240)) * time.Millisecond
		switch {
		case early:
			delay = time.Duration(rng.Int64N(int64(openTook)))
		case mode == WALBuffered && rng.IntN(3) == 0:
			// Long enough that some acks are past the buffer's
			// deadline and must survive.
			delay = crashBufferedSlack + time.Duration(100+rng.IntN(500))*time.Millisecond
		}
		run := runSoakChild(t, dir, ckRoot, cycle, seed, mode, early, delay)
		if run.ready {
			openTook = (openTook*3 + run.openTook) / 4
		}

		st.cycles++
		st.modes[mode]++
		if run.ready {
			st.late++
		} else {
			st.duringOpen++
		}
		inProgress := map[byte]int{}
		for _, ev := range run.events {
			switch ev.kind {
			case 'F', 'C', 'K':
				inProgress[ev.kind]++
			case 'f', 'c', 'k':
				inProgress[ev.kind-'a'+'A']--
			}
		}
		st.duringFlush += inProgress['F']
		st.duringCompact += inProgress['C']
		st.duringCkpt += inProgress['K']
		if mode == WALWriteThrough && run.ready {
			st.writeThroughLate++
			if newestLogReserved(t, dir) {
				st.mappedTails++
			}
		}

		db, err := Open(dir, crashProcessOptions(WALWriteThrough))
		if err != nil {
			t.Fatalf("cycle %d (%s, killed %s): reopen after kill: %v\nchild stderr:\n%s",
				cycle, mode, soakWhen(run, early, delay), err, run.stderr)
		}
		got := soakRead(t, db, fmt.Sprintf("cycle %d", cycle))
		checkInvariants(t, db)
		bd := run.killBounds()
		sol, err := run.solve(base, got, bd)
		if err != nil {
			t.Fatalf("cycle %d (%s, killed %s): after reopen: %v", cycle, mode, soakWhen(run, early, delay), err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for w := range soakWriters {
			acked := len(run.ackPos[w])
			st.acked += acked
			for _, op := range run.ops[w][:acked] {
				if op.batch {
					st.ackedBatches++
				}
			}
			if n := sol.applied[w]; n > acked {
				st.inflightApplied++
			} else if n == acked && acked < bd.hi[w] {
				st.inflightAbsent++
			} else if n < acked {
				st.unsettledDropped += acked - n
			}
		}

		// Every checkpoint that returned before the kill.
		ckBegan := map[int]int{}
		checked := 0
		for pos, ev := range run.events {
			switch ev.kind {
			case 'K':
				ckBegan[ev.a] = pos
			case 'k':
				path := soakCheckpointDir(ckRoot, cycle, ev.a)
				cdb, err := Open(path, roOpts)
				if err != nil {
					t.Fatalf("cycle %d: checkpoint %d: read-only Open: %v", cycle, ev.a, err)
				}
				what := fmt.Sprintf("cycle %d, checkpoint %d", cycle, ev.a)
				cgot := soakRead(t, cdb, what)
				checkInvariants(t, cdb)
				if _, err := run.solve(base, cgot, run.checkpointBounds(ckBegan[ev.a], pos)); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if err := cdb.Close(); err != nil {
					t.Fatal(err)
				}
				delete(ckBegan, ev.a)
				checked++
			}
		}
		st.checkpoints += checked
		st.checkpointsCut += len(ckBegan)
		// Checked copies and the remains of cut ones are not needed
		// again; a long run would fill the disk with them.
		if err := os.RemoveAll(ckRoot); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(ckRoot, 0o755); err != nil {
			t.Fatal(err)
		}

		acks := 0
		for w := range soakWriters {
			acks += len(run.ackPos[w])
		}
		t.Logf("cycle %d: %s killed %s: %d acks, applied %v of begun %v, %d checkpoints checked, %d keys live",
			cycle, mode, soakWhen(run, early, delay), acks, sol.applied, bd.hi, checked, len(got))
		base = got
	}
	t.Logf("%d cycles in %v: %d kills during Open, %d after (%d during a Flush, %d a Compact, %d a Checkpoint); modes write-through/buffered/sync/disabled %v",
		st.cycles, time.Since(began).Round(time.Second), st.duringOpen, st.late, st.duringFlush, st.duringCompact, st.duringCkpt, st.modes)
	t.Logf("%d operations acknowledged (%d batches): 0 lost, 0 partial, 0 invented; in flight at the kill: %d applied, %d absent; %d unsettled acks dropped (buffered, disabled); %d checkpoints checked, %d cut by the kill; %d of %d write-through kills left a mapped log's reserved space",
		st.acked, st.ackedBatches, st.inflightApplied, st.inflightAbsent, st.unsettledDropped, st.checkpoints, st.checkpointsCut, st.mappedTails, st.writeThroughLate)
	if st.acked == 0 || st.late == 0 || st.checkpoints == 0 {
		t.Fatalf("%d acks, %d late kills, %d checkpoints: nothing was tested", st.acked, st.late, st.checkpoints)
	}
}

// soakWhen says when a child was killed, for the log.
func soakWhen(run *soakRun, early bool, delay time.Duration) string {
	switch {
	case !run.opening:
		return fmt.Sprintf("before Open (%v)", delay)
	case !run.ready:
		return fmt.Sprintf("during Open (%v in)", delay)
	case early:
		return fmt.Sprintf("%v after Open began, which took %v", delay, run.openTook)
	}
	return fmt.Sprintf("%v after Open", delay)
}

// TestCrashSoakChecker shows that the soak's check fails when it should:
// on states built from a made-up protocol log, it accepts every state the
// writers may have left and rejects a lost acknowledged write (a single
// Put and a batch), a batch applied in part, a key back from an
// acknowledged range deletion, an invented value, and a hole across
// writers.
func TestCrashSoakChecker(t *testing.T) {
	r := &soakRun{cycle: 7, seed: 99, mode: WALWriteThrough}
	add := func(line string) {
		t.Helper()
		if err := r.add(line); err != nil {
			t.Fatal(err)
		}
	}
	// Writers take turns, 60 ops each, all acknowledged; then each begins
	// one more that is in flight at the "kill".
	const n = 60
	for i := 0; i < n; i++ {
		for w := range soakWriters {
			add(fmt.Sprintf("b %d %d", w, i))
			add(fmt.Sprintf("a %d %d", w, i))
		}
	}
	for w := range soakWriters {
		add(fmt.Sprintf("b %d %d", w, n))
	}
	base := model{soakKey(3): "old3", soakKey(200): "old200", soakMarkerKey(1): "6.17"}
	// state applies, in begin order, the first applied[w] ops of each
	// writer, leaving out the ops skip rejects.
	state := func(applied [soakWriters]int, skip func(w, i, j int) bool) model {
		m := base.clone()
		for _, ev := range r.events {
			if ev.kind != 'b' || ev.b >= applied[ev.a] {
				continue
			}
			op := r.ops[ev.a][ev.b]
			for j, o := range op.ops {
				if skip == nil || !skip(ev.a, ev.b, j) {
					soakOp{ops: []genOp{o}}.applyTo(m)
				}
			}
		}
		return m
	}
	acked := [soakWriters]int{n, n, n, n}
	bd := r.killBounds()

	// Accepted: any subset of the in-flight ops applied.
	for mask := 0; mask < 1<<soakWriters; mask++ {
		applied := acked
		for w := range soakWriters {
			if mask&(1<<w) != 0 {
				applied[w]++
			}
		}
		if _, err := r.solve(base, state(applied, nil), bd); err != nil {
			t.Fatalf("in flight applied %v: rejected a valid state: %v", applied, err)
		}
	}

	// Find the ops to sabotage: writer 0's last acknowledged single Put
	// of a key no later op touches, its last acknowledged batch, and an
	// acknowledged range deletion that removed a key no later op touches.
	lastTouch := map[string][2]int{} // key -> last (writer, op) touching it
	for _, ev := range r.events {
		if ev.kind != 'b' {
			continue
		}
		for k := range soakPool {
			if soakTouches(r.ops[ev.a][ev.b], soakKey(k)) {
				lastTouch[soakKey(k)] = [2]int{ev.a, ev.b}
			}
		}
	}
	putW, put, batch := -1, -1, -1
	for i := n - 1; i >= 0; i-- {
		if batch < 0 && r.ops[0][i].batch {
			batch = i
		}
		for w := range soakWriters {
			op := r.ops[w][i]
			if put < 0 && !op.batch && op.ops[0].end == "" && !op.ops[0].del && lastTouch[op.ops[0].key] == [2]int{w, i} {
				putW, put = w, i
			}
		}
	}
	if put < 0 || batch < 0 {
		t.Fatal("the made-up log has no op to sabotage; change the seed")
	}
	cases := []struct {
		name string
		got  model
	}{
		{"lost acknowledged Put", state(acked, func(w, i, _ int) bool { return w == putW && i == put })},
		{"lost acknowledged batch", state(acked, func(w, i, _ int) bool { return w == 0 && i == batch })},
		{"batch without its marker", state(acked, func(w, i, j int) bool { return w == 0 && i == batch && j == len(r.ops[0][batch].ops)-1 })},
		{"batch with only its marker", state(acked, func(w, i, j int) bool { return w == 0 && i == batch && j < len(r.ops[0][batch].ops)-1 })},
	}
	invented := state(acked, nil)
	invented[soakKey(0)] = "never written"
	cases = append(cases, struct {
		name string
		got  model
	}{"invented value", invented})

	// A key an acknowledged range deletion removed, back with the value
	// it had.
	resurrected := false
	var applied [soakWriters]int // the ops before ev
	for _, ev := range r.events {
		if ev.kind != 'b' || resurrected {
			continue
		}
		op := r.ops[ev.a][ev.b]
		before := state(applied, nil)
		applied[ev.a]++
		after := state(applied, nil)
		for k, v := range before {
			_, ok := after[k]
			if ok || lastTouch[k] != [2]int{ev.a, ev.b} || slices.ContainsFunc(op.ops, func(o genOp) bool { return o.key == k && o.end == "" }) {
				continue // not removed, or touched later, or a point Delete
			}
			got := state(acked, nil)
			got[k] = v
			cases = append(cases, struct {
				name string
				got  model
			}{fmt.Sprintf("%s back after acknowledged op %d/%d %s", k, ev.a, ev.b, op.describe()), got})
			resurrected = true
			break
		}
	}
	if !resurrected {
		t.Fatal("the made-up log has no range deletion to undo; change the seed")
	}
	for _, c := range cases {
		if _, err := r.solve(base, c.got, bd); err == nil {
			t.Errorf("%s: accepted", c.name)
		} else {
			t.Logf("%s: rejected: %v", c.name, err)
		}
	}

	// A hole: with no lower bound (as in WALDisabled before any Flush),
	// writer 1's ops are there but writer 0's last batch, acknowledged
	// before they began, is not.
	var none soakBounds
	none.hi = bd.hi
	applied = acked
	applied[0] = batch
	if _, err := r.solve(base, state(applied, nil), none); err == nil {
		t.Errorf("a hole across writers: accepted")
	}
	// Without the hole (every writer cut at the same point) it passes.
	cut := [soakWriters]int{batch, batch, batch, batch}
	if _, err := r.solve(base, state(cut, nil), none); err != nil {
		t.Errorf("a prefix cut at op %d of every writer: rejected: %v", batch, err)
	}
}
