package vfs

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestFailAfterFailsOnlyTheNthMatchingOperation(t *testing.T) {
	efs := NewErrorFS(NewMem())
	f, err := efs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	efs.FailAfter(3, OpWrite)
	for i := 1; i <= 5; i++ {
		if err := f.Sync(); err != nil { // not a write: never counted by the rule
			t.Fatalf("sync %d: %v", i, err)
		}
		_, err := f.Write([]byte{byte('0' + i)})
		if (i == 3) != errors.Is(err, ErrInjected) {
			t.Fatalf("write %d: err = %v", i, err)
		}
	}
	if got := readFile(t, efs, "/f"); got != "1245" {
		t.Fatalf("contents %q: the failed write must write nothing", got)
	}
	if efs.Injected() != 1 || efs.Count(OpWrite) != 5 || efs.Count(OpSync) != 5 || efs.Count(OpCreate) != 1 {
		t.Fatalf("injected %d, writes %d, syncs %d, creates %d", efs.Injected(), efs.Count(OpWrite), efs.Count(OpSync), efs.Count(OpCreate))
	}
	efs.FailAfter(1)
	_, err = f.Write(nil)
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != "/f" || pe.Op != "write" {
		t.Fatalf("injected error %v does not name the operation and file", err)
	}
}

func TestFailAfterStickyKeepsFailing(t *testing.T) {
	efs := NewErrorFS(NewMem())
	efs.FailAfterSticky(2, OpCreate, OpRemove)
	var results []bool
	for _, name := range []string{"/a", "/b", "/c"} {
		_, err := efs.Create(name)
		results = append(results, errors.Is(err, ErrInjected))
	}
	results = append(results, errors.Is(efs.Remove("/a"), ErrInjected))
	if want := []bool{false, true, true, true}; !equalBools(results, want) {
		t.Fatalf("failures %v, want %v", results, want)
	}
	if _, err := efs.Stat("/a"); err != nil {
		t.Fatalf("Stat is not in the rule but failed: %v", err)
	}
	efs.Heal()
	if _, err := efs.Create("/d"); err != nil {
		t.Fatalf("after Heal: %v", err)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRuleMatchesPaths(t *testing.T) {
	mem := NewMem()
	efs := NewErrorFS(mem)
	efs.Inject(Rule{
		Ops: []Op{OpWrite}, N: 1, Sticky: true,
		Match: func(p string) bool { return strings.HasSuffix(p, ".sst") },
	})
	sst, _ := efs.Create("/000001.sst")
	log, _ := efs.Create("/000002.log")
	for range 3 {
		if _, err := sst.Write([]byte("t")); !errors.Is(err, ErrInjected) {
			t.Fatalf("write to .sst: %v", err)
		}
		if _, err := log.Write([]byte("l")); err != nil {
			t.Fatalf("write to .log: %v", err)
		}
	}
	if got := readFile(t, mem, "/000002.log"); got != "lll" {
		t.Fatalf("log holds %q", got)
	}
	// Rename matches on either name.
	efs.Inject(Rule{Ops: []Op{OpRename}, Match: func(p string) bool { return p == "/CURRENT" }})
	mustWriteFile(t, mem, "/CURRENT.tmp", "x", false)
	if err := efs.Rename("/CURRENT.tmp", "/CURRENT"); !errors.Is(err, ErrInjected) {
		t.Fatalf("rename onto CURRENT: %v", err)
	}
	if got := readFile(t, mem, "/CURRENT"); got != "<absent>" {
		t.Fatalf("failed rename reached the inner FS: %q", got)
	}
}

func TestDiskBudgetFailsWithENOSPC(t *testing.T) {
	mem := NewMem()
	efs := NewErrorFS(mem)
	f, _ := efs.Create("/f")
	efs.SetDiskBudget(10)
	if n, err := f.Write([]byte("123456")); n != 6 || err != nil {
		t.Fatalf("write within budget: %d %v", n, err)
	}
	n, err := f.Write([]byte("abcdef"))
	if n != 4 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write across the budget: %d %v, want a short write of 4 and ENOSPC", n, err)
	}
	if n, err := f.Write([]byte("z")); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %d %v", n, err)
	}
	if got := readFile(t, mem, "/f"); got != "123456abcd" {
		t.Fatalf("contents %q", got)
	}
	if efs.DiskBudget() != 0 || efs.Injected() != 2 {
		t.Fatalf("budget %d, injected %d", efs.DiskBudget(), efs.Injected())
	}
	efs.Heal()
	if _, err := f.Write([]byte("ok")); err != nil {
		t.Fatalf("after Heal: %v", err)
	}
}

func TestInjectedCloseStillClosesInnerFile(t *testing.T) {
	efs := NewErrorFS(NewMem())
	f, _ := efs.Create("/f")
	efs.FailAfter(1, OpClose)
	if err := f.Close(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Close: %v", err)
	}
	if !f.(*errorFile).inner.(*memFile).closed.Load() {
		t.Fatal("inner file left open after an injected Close failure")
	}
}

// replaceCurrent is a small workload in the shape of a manifest switch:
// write a temporary file, sync it, rename it over CURRENT, sync the
// directory. It reports success only when every step succeeded.
func replaceCurrent(fs FS, contents string) error {
	f, err := fs.Create("/db/CURRENT.tmp")
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(contents)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename("/db/CURRENT.tmp", "/db/CURRENT"); err != nil {
		return err
	}
	d, err := fs.OpenDir("/db")
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// TestFailEachOperationInTurn is the pattern ErrorFS exists for: fail the
// n-th operation for n = 1, 2, ... until the workload runs clean, and after
// each failure check that a power loss leaves CURRENT whole: the old
// contents or, if the workload succeeded, the new.
func TestFailEachOperationInTurn(t *testing.T) {
	const oldC, newC = "MANIFEST-000001\n", "MANIFEST-000002\n"
	n := 1
	for ; ; n++ {
		mem := NewMem()
		mem.MkdirAll("/db", 0o755)
		mustWriteFile(t, mem, "/db/CURRENT", oldC, true)
		mustSyncDir(t, mem, "/db")

		efs := NewErrorFS(mem)
		efs.FailAfter(n)
		err := replaceCurrent(efs, newC)
		if efs.Injected() == 0 {
			if err != nil {
				t.Fatalf("n=%d: no failure injected but the workload failed: %v", n, err)
			}
			if got := readFile(t, mem.CrashClone(), "/db/CURRENT"); got != newC {
				t.Fatalf("clean run: CURRENT after power loss = %q", got)
			}
			break
		}
		if !errors.Is(err, ErrInjected) {
			t.Fatalf("n=%d: injected failure not reported: %v", n, err)
		}
		got := readFile(t, mem.CrashClone(), "/db/CURRENT")
		if got != oldC && got != newC {
			t.Fatalf("n=%d: CURRENT after failure and power loss = %q", n, got)
		}
	}
	// Create, Write, Sync, Close, Rename, OpenDir, Sync, Close: 8 operations.
	if n != 9 {
		t.Fatalf("workload ran clean at n=%d, want 9 (one past its 8 operations)", n)
	}
}

func TestErrorFSConcurrentUse(t *testing.T) {
	efs := NewErrorFS(NewMem())
	efs.MkdirAll("/d", 0o755)
	efs.FailAfterSticky(500, OpWrite)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := efs.Create(efs.PathJoin("/d", string(rune('a'+g))))
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for range 200 {
				if _, err := f.Write([]byte("x")); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
				f.Sync()
			}
		}()
	}
	wg.Wait()
	if failed != 301 || efs.Injected() != 301 || efs.Count(OpWrite) != 800 {
		t.Fatalf("failed %d, injected %d, writes %d; want 301, 301, 800", failed, efs.Injected(), efs.Count(OpWrite))
	}
}

func TestOpString(t *testing.T) {
	for _, op := range AllOps() {
		if s := op.String(); s == "" || strings.HasPrefix(s, "Op(") {
			t.Errorf("op %d has no name", int(op))
		}
	}
	if s := Op(99).String(); s != "Op(99)" {
		t.Errorf("Op(99).String() = %q", s)
	}
}
