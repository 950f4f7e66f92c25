package bloomkv

// I/O fault tests: an ErrorFS over a MemFS fails chosen operations (log
// writes and syncs, table writes in flushes and compactions, manifest writes
// and syncs, directory syncs, renames, a full disk) while the batch workload
// of workload_test.go runs. After each fault:
//
//   - the failing call, or a later one, returns the error (where the fault
//     cannot be retried away);
//   - the live database still serves reads, and holds every acknowledged
//     batch, each one whole;
//   - a kill -9 image, a power-loss image (with Sync) and a reopen of the
//     healed file system after Close all recover every acknowledged batch,
//     none in part, nothing never written.
//
// TestFaultEveryOperation fails the 1st, 2nd, 3rd, ... operation of a
// small workload in turn until the workload runs clean.

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

func isLogPath(p string) bool      { return strings.HasSuffix(p, ".log") }
func isTablePath(p string) bool    { return strings.HasSuffix(p, ".sst") }
func isManifestPath(p string) bool { return strings.Contains(p, "MANIFEST-") }

// faultRun is one database under fault injection and what its writer knows.
type faultRun struct {
	t       *testing.T
	mem     *vfs.MemFS
	efs     *vfs.ErrorFS
	opts    *Options
	db      *DB
	regions *regionTracker

	maxStarted int
	acked      map[int]bool
	errs       []error // every error a write returned, in order
	failedIDs  []int
}

func newFaultRun(t *testing.T, syncWrites bool, tweak func(*Options)) *faultRun {
	t.Helper()
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	opts := tinyOptions(efs)
	opts.Sync = syncWrites
	regions := newRegionTracker()
	opts.testHooks = regions.hooks()
	if tweak != nil {
		tweak(opts)
	}
	r := &faultRun{t: t, mem: mem, efs: efs, opts: opts, regions: regions, acked: map[int]bool{}}
	r.db = mustOpen(t, "/db", opts)
	return r
}

// write writes batches from..to, going on after errors (a transient fault
// may pass), and returns the first error.
func (r *faultRun) write(from, to int) error {
	var first error
	for id := from; id <= to; id++ {
		r.maxStarted = max(r.maxStarted, id)
		if err := r.db.Write(genBatch(id)); err != nil {
			r.errs = append(r.errs, err)
			r.failedIDs = append(r.failedIDs, id)
			if first == nil {
				first = err
			}
			continue
		}
		r.acked[id] = true
	}
	return first
}

func (r *faultRun) mustHave(id int) bool { return r.acked[id] }

// lastAcked returns the largest acknowledged id (0 if none).
func (r *faultRun) lastAcked() int {
	n := 0
	for id := range r.acked {
		n = max(n, id)
	}
	return n
}

// verifyAll checks the live database, then crash images of it, then the
// healed file system after Close, each against the acknowledged batches;
// finally the reopened database must take new writes.
func (r *faultRun) verifyAll() {
	t := r.t
	t.Helper()
	verifyBatches(t, r.db, r.maxStarted, r.mustHave)

	images := map[string]*vfs.MemFS{"kill -9": cloneAtomically(r.efs, r.mem, false)}
	if r.opts.Sync {
		images["power loss"] = cloneAtomically(r.efs, r.mem, true)
	}
	closeErr := r.db.Close()
	t.Logf("Close after the fault: %v", closeErr)
	r.efs.Heal()
	images["healed"] = r.mem
	for name, fs := range images {
		o := *r.opts
		o.FS = fs
		db, err := Open("/db", &o)
		if err != nil {
			t.Fatalf("%s: reopen: %v", name, err)
		}
		verifyBatches(t, db, r.maxStarted, r.mustHave)
		checkInvariants(t, db)
		// The recovered database must take writes again.
		next := r.maxStarted + 1
		for id := next; id < next+10; id++ {
			if err := db.Write(genBatch(id)); err != nil {
				t.Fatalf("%s: write after recovery: %v", name, err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatalf("%s: flush after recovery: %v", name, err)
		}
		verifyBatches(t, db, next+9, func(id int) bool { return r.acked[id] || id >= next })
		if err := db.Close(); err != nil {
			t.Fatalf("%s: close: %v", name, err)
		}
	}
}

// expectInjected fails unless err is non-nil and comes from the ErrorFS
// (an injected failure or a full disk).
func expectInjected(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error surfaced", what)
	}
	if !errors.Is(err, vfs.ErrInjected) && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%s: error %v is not the injected one", what, err)
	}
}

// expectWritesRefused checks that the database now refuses writes with an
// error and still serves reads.
func (r *faultRun) expectWritesRefused() {
	r.t.Helper()
	id := r.maxStarted + 1
	r.maxStarted = id
	if err := r.db.Write(genBatch(id)); err == nil {
		r.t.Fatalf("a write after a permanent fault succeeded")
	}
	if _, err := r.db.Get([]byte(genMarkerKey(1))); err != nil && r.acked[1] {
		r.t.Fatalf("read after the fault: %v", err)
	}
}

func TestFaultLogWrite(t *testing.T) {
	for _, syncWrites := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", syncWrites), func(t *testing.T) {
			r := newFaultRun(t, syncWrites, nil)
			r.efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpWrite}, Match: isLogPath, N: 60})
			err := r.write(1, 200)
			expectInjected(t, err, "log write")
			// The log may hold a partial record: nothing may follow it.
			for _, id := range r.failedIDs {
				if id < r.lastAcked() {
					t.Fatalf("batch %d failed but a later batch %d was acknowledged", id, r.lastAcked())
				}
			}
			r.expectWritesRefused()
			r.verifyAll()
		})
	}
}

func TestFaultLogSync(t *testing.T) {
	r := newFaultRun(t, true, nil)
	r.efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpSync}, Match: isLogPath, N: 60})
	expectInjected(t, r.write(1, 200), "log sync")
	r.expectWritesRefused()
	r.verifyAll()
}

func TestFaultLogCreate(t *testing.T) {
	// The new log of a memtable switch cannot be created: the write that
	// needed it fails; the database may go on or refuse writes.
	r := newFaultRun(t, true, nil)
	r.efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpCreate}, Match: isLogPath, N: 2})
	expectInjected(t, r.write(1, 300), "log create")
	t.Logf("%d of 300 batches acknowledged after the failed create", len(r.acked))
	r.verifyAll()
}

func TestFaultFlushTransient(t *testing.T) {
	// One failed table write: the flush is retried and nothing is seen.
	for _, op := range []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync} {
		t.Run(op.String(), func(t *testing.T) {
			r := newFaultRun(t, false, nil)
			r.efs.Inject(vfs.Rule{Ops: []vfs.Op{op}, N: 2, Match: func(p string) bool {
				return isTablePath(p) && r.regions.made(causeFlush, p)
			}})
			if err := r.write(1, 400); err != nil {
				t.Fatalf("a retried flush failure surfaced in a write: %v", err)
			}
			if err := r.db.Flush(); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if r.efs.Injected() != 1 {
				t.Fatalf("%d failures injected, want 1", r.efs.Injected())
			}
			r.verifyAll()
		})
	}
}

func TestFaultFlushPermanent(t *testing.T) {
	// Every table write fails: after its retries the flush gives up, writes
	// are refused, reads go on, and a reopen recovers everything from the
	// logs.
	r := newFaultRun(t, false, nil)
	r.efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpWrite}, Match: isTablePath, Sticky: true})
	err := r.write(1, 400)
	if err == nil {
		err = r.db.Flush()
	}
	expectInjected(t, err, "table writes")
	r.expectWritesRefused()
	r.verifyAll()
}

func TestFaultCompactionTransient(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync} {
		t.Run(op.String(), func(t *testing.T) {
			r := newFaultRun(t, false, nil)
			r.efs.Inject(vfs.Rule{Ops: []vfs.Op{op}, N: 1, Match: func(p string) bool {
				return isTablePath(p) && r.regions.made(causeCompaction, p)
			}})
			if err := r.write(1, 600); err != nil {
				t.Fatalf("a retried compaction failure surfaced in a write: %v", err)
			}
			if err := r.db.WaitForCompactions(); err != nil {
				t.Fatalf("WaitForCompactions: %v", err)
			}
			if r.efs.Injected() != 1 {
				t.Fatalf("%d failures injected, want 1 (did a compaction run?)", r.efs.Injected())
			}
			if err := r.db.Compact(nil, nil); err != nil {
				t.Fatalf("Compact after a retried failure: %v", err)
			}
			r.verifyAll()
		})
	}
}

func TestFaultCompactionPermanent(t *testing.T) {
	r := newFaultRun(t, false, nil)
	r.efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpWrite}, Sticky: true, Match: func(p string) bool {
		return isTablePath(p) && r.regions.made(causeCompaction, p)
	}})
	err := r.write(1, 600)
	if err == nil {
		err = r.db.Compact(nil, nil)
	}
	expectInjected(t, err, "compaction writes")
	if err := r.db.WaitForCompactions(); err == nil {
		t.Fatal("WaitForCompactions reports no error after compactions gave up")
	}
	r.expectWritesRefused()
	r.verifyAll()
}

func TestFaultManifest(t *testing.T) {
	// The manifest writer fails on the n-th write or sync after Open. Small
	// and default manifest limits: with the small one a later manifest
	// rewrite may let the database go on.
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpCreate} {
		for _, n := range []int{1, 2, 5} {
			for _, small := range []bool{false, true} {
				if op == vfs.OpCreate && (!small || n > 2) {
					continue // manifests are created only by rewrites, and few of them
				}
				t.Run(fmt.Sprintf("%s#%d/small=%v", op, n, small), func(t *testing.T) {
					r := newFaultRun(t, true, func(o *Options) {
						if small {
							o.MaxManifestFileSize = 1 << 10
						}
					})
					r.efs.Inject(vfs.Rule{Ops: []vfs.Op{op}, Match: isManifestPath, N: n})
					err := r.write(1, 400)
					if err == nil {
						err = r.db.Flush()
					}
					if r.efs.Injected() == 0 {
						t.Skip("the workload made too few manifest operations")
					}
					t.Logf("first error: %v", err)
					r.verifyAll()
				})
			}
		}
	}
}

func TestFaultDirectorySyncAndRename(t *testing.T) {
	// Directory syncs make new tables, logs and CURRENT durable; renames
	// install CURRENT. A small manifest limit makes rewrites (and so
	// renames) frequent.
	for _, op := range []vfs.Op{vfs.OpSync, vfs.OpRename, vfs.OpOpenDir} {
		for _, n := range []int{1, 2, 3, 6, 10} {
			if op == vfs.OpRename && n > 3 {
				continue // one rename per manifest rewrite
			}
			t.Run(fmt.Sprintf("%s#%d", op, n), func(t *testing.T) {
				r := newFaultRun(t, true, func(o *Options) { o.MaxManifestFileSize = 1 << 10 })
				r.efs.Inject(vfs.Rule{Ops: []vfs.Op{op}, N: n, Match: func(p string) bool {
					return op == vfs.OpRename || p == "/db"
				}})
				err := r.write(1, 400)
				if err == nil {
					err = r.db.Flush()
				}
				if r.efs.Injected() == 0 {
					t.Skip("the workload made too few such operations")
				}
				t.Logf("first error: %v", err)
				r.verifyAll()
			})
		}
	}
}

func TestFaultDiskFull(t *testing.T) {
	for _, budget := range []int64{2 << 10, 20 << 10, 60 << 10, 150 << 10} {
		for _, syncWrites := range []bool{false, true} {
			t.Run(fmt.Sprintf("budget=%d/sync=%v", budget, syncWrites), func(t *testing.T) {
				r := newFaultRun(t, syncWrites, nil)
				r.efs.SetDiskBudget(budget)
				err := r.write(1, 1500)
				if err == nil {
					err = r.db.Flush()
				}
				if err == nil {
					t.Fatalf("the workload fit in a %d-byte budget", budget)
				}
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("error %v does not wrap ENOSPC", err)
				}
				t.Logf("%d batches acknowledged; first error %v", len(r.acked), err)
				r.verifyAll()
			})
		}
	}
}

// everyOpWorkload is the small workload TestFaultEveryOperation fails op by
// op: Open, writes, a flush, more writes, a full compaction, reads, more
// writes, Close. Every call may fail; the workload goes on where it can and
// records what was acknowledged.
func everyOpWorkload(t *testing.T, fs vfs.FS, acked map[int]bool) (maxStarted int, errs []error) {
	opts := tinyOptions(fs)
	opts.Sync = true
	opts.MaxManifestFileSize = 1 << 10
	db, err := Open("/db", opts)
	if err != nil {
		return 0, []error{err}
	}
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	write := func(from, to int) {
		for id := from; id <= to; id++ {
			maxStarted = id
			if err := db.Write(genBatch(id)); err != nil {
				note(err)
				continue
			}
			acked[id] = true
		}
	}
	write(1, 40)
	note(db.Flush())
	write(41, 80)
	note(db.Compact(nil, nil))
	// Reads may fail (an injected read error) but never return wrong data.
	want := genModel(func() []int {
		var ids []int
		for id := 1; id <= 80; id++ {
			if acked[id] {
				ids = append(ids, id)
			}
		}
		return ids
	}())
	for id := 1; id <= 80; id++ {
		if !acked[id] {
			continue
		}
		k := genMarkerKey(id)
		v, err := db.Get([]byte(k))
		if err != nil {
			note(err)
			continue
		}
		if string(v) != want[k] {
			t.Fatalf("Get(%q) = %q, want %q", k, v, want[k])
		}
	}
	write(81, 100)
	note(db.Close())
	return maxStarted, errs
}

func TestFaultEveryOperation(t *testing.T) {
	const limit = 5000
	n := 1
	for ; n <= limit; n++ {
		mem := vfs.NewMem()
		efs := vfs.NewErrorFS(mem)
		efs.FailAfter(n)
		acked := map[int]bool{}
		maxStarted, errs := everyOpWorkload(t, efs, acked)
		injected := efs.Injected()
		if injected == 0 {
			if len(errs) > 0 {
				t.Fatalf("n=%d: nothing injected, yet: %v", n, errs)
			}
			if maxStarted != 100 || len(acked) != 100 {
				t.Fatalf("clean run acknowledged %d of %d batches", len(acked), maxStarted)
			}
			break
		}
		for _, err := range errs {
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("n=%d: error %v is not the injected one", n, err)
			}
		}
		// Everything acknowledged must survive a power loss (Sync is on)
		// and a plain reopen of the healed file system.
		efs.Heal()
		for name, fs := range map[string]*vfs.MemFS{"power loss": mem.CrashClone(), "healed": mem} {
			opts := tinyOptions(fs)
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatalf("n=%d (%s): reopen: %v (workload errors: %v)", n, name, err, errs)
			}
			verifyBatches(t, db, maxStarted, func(id int) bool { return acked[id] })
			checkInvariants(t, db)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n > limit {
		t.Fatalf("the workload still failed after %d operations", limit)
	}
	t.Logf("failed each of the workload's %d operations in turn", n-1)
}

// TestFaultCompactionManifestUncertain: every manifest sync made by a
// compaction fails, so its edit may or may not be in the manifest (a kill
// -9 image holds it: the bytes were written, only the sync failed). The
// edit's output tables must then be kept until a fresh manifest settles the
// question; removing them makes the kill -9 image name missing tables.
func TestFaultCompactionManifestUncertain(t *testing.T) {
	r := newFaultRun(t, false, nil)
	r.efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpSync}, Sticky: true, Match: func(p string) bool {
		return isManifestPath(p) && r.regions.made(causeCompaction, p)
	}})
	err := r.write(1, 600)
	if err == nil {
		err = r.db.WaitForCompactions()
	}
	expectInjected(t, err, "compaction manifest syncs")
	r.verifyAll()
}
