package vfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wantLocked fails unless err reports a lock another holder has, naming
// the lock file.
func wantLocked(t *testing.T, what string, err error, name string) {
	t.Helper()
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("%s: err = %v, want one wrapping ErrLocked", what, err)
	}
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("%s: error %q does not name %s", what, err, name)
	}
	t.Logf("%s: %v", what, err)
}

// wantNotLocked fails unless err is a failure that is not contention:
// non-nil, not wrapping ErrLocked, naming the lock file.
func wantNotLocked(t *testing.T, what string, err error, name string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: Lock succeeded", what)
	}
	if errors.Is(err, ErrLocked) {
		t.Fatalf("%s: err = %v wraps ErrLocked, but nobody holds the lock", what, err)
	}
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("%s: error %q does not name %s", what, err, name)
	}
	t.Logf("%s: %v", what, err)
}

func TestOSLockHeldInThisProcess(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "LOCK")
	l, err := Default.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Default.Lock(name)
	wantLocked(t, "second Lock", err, name)
	// Another spelling of the same path is the same lock.
	other := filepath.Join(dir, ".", "LOCK")
	_, err = Default.Lock(other)
	wantLocked(t, "Lock by another spelling", err, other)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Default.Lock(name)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: err = %v, want os.ErrClosed", err)
	}
	// The failed second Close must not have released a later holder's lock.
	l, err = Default.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Default.Lock(name)
	wantLocked(t, "Lock after a stale Close", err, name)
}

func TestOSLockIsADirectory(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	if err := os.Mkdir(name, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Default.Lock(name)
	wantNotLocked(t, "Lock of a directory", err, name)
	// The lock was not left recorded as held.
	_, err = Default.Lock(name)
	wantNotLocked(t, "second Lock of a directory", err, name)
}

func TestOSLockMissingDirectory(t *testing.T) {
	name := filepath.Join(t.TempDir(), "missing", "LOCK")
	_, err := Default.Lock(name)
	wantNotLocked(t, "Lock in a missing directory", err, name)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lock in a missing directory: err = %v, want fs.ErrNotExist", err)
	}
}

// lockChildEnv names the lock file TestOSLockHolderChild takes.
const lockChildEnv = "BLOOMKV_VFS_LOCK_CHILD"

// TestOSLockHolderChild runs only in a child process started by
// TestOSLockHeldByAnotherProcess: it takes the lock, says "locked", and
// holds the lock until its stdin closes.
func TestOSLockHolderChild(t *testing.T) {
	name := os.Getenv(lockChildEnv)
	if name == "" {
		t.Skip("runs only as the child of TestOSLockHeldByAnotherProcess")
	}
	l, err := Default.Lock(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: %v\n", err)
		os.Exit(3)
	}
	fmt.Println("locked")
	// A safety net: never outlive a parent that forgot to close stdin.
	go func() {
		time.Sleep(time.Minute)
		os.Exit(4)
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := l.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "child: unlock: %v\n", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func TestOSLockHeldByAnotherProcess(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOSLockHolderChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+name)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("child said %q (%v); stderr:\n%s", line, err, stderr.String())
	}

	_, err = Default.Lock(name)
	wantLocked(t, "Lock held by another process", err, name)
	if !strings.Contains(err.Error(), "another process") {
		t.Fatalf("error %q does not say another process holds the lock", err)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, stderr.String())
	}
	l, err := Default.Lock(name)
	if err != nil {
		t.Fatalf("Lock after the other process released it: %v", err)
	}
	l.Close()
}

func TestMemLockHeldWrapsErrLocked(t *testing.T) {
	mem := NewMem()
	if err := mem.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := mem.Lock("/db/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	_, err = mem.Lock("/db/LOCK")
	wantLocked(t, "MemFS second Lock", err, "/db/LOCK")
	l.Close()

	if err := mem.MkdirAll("/db/DIRLOCK", 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = mem.Lock("/db/DIRLOCK")
	wantNotLocked(t, "MemFS Lock of a directory", err, "/db/DIRLOCK")
	_, err = mem.Lock("/nodir/LOCK")
	wantNotLocked(t, "MemFS Lock in a missing directory", err, "/nodir/LOCK")
}

func TestErrorFSLockErrors(t *testing.T) {
	efs := NewErrorFS(NewMem())
	if err := efs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := efs.Lock("/db/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	_, err = efs.Lock("/db/LOCK")
	wantLocked(t, "ErrorFS second Lock", err, "/db/LOCK")
	l.Close()

	// An injected failure is a broken file system, not contention.
	efs.FailAfter(1, OpLock)
	_, err = efs.Lock("/db/LOCK")
	wantNotLocked(t, "ErrorFS injected Lock failure", err, "/db/LOCK")
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("injected Lock failure: err = %v, want ErrInjected", err)
	}
}

// TestLockShared: shared holders coexist, and exclude an exclusive holder
// both ways, on the OS and in memory alike.
func TestLockShared(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		dir  string
	}{
		{"os", Default, t.TempDir()},
		{"mem", NewMem(), "/d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := tc.fs
			if err := fs.MkdirAll(tc.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := fs.PathJoin(tc.dir, "LOCK")
			if _, err := fs.LockShared(name); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("LockShared of a missing file: %v, want os.ErrNotExist", err)
			}
			ex, err := fs.Lock(name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = fs.LockShared(name)
			wantLocked(t, "LockShared under an exclusive lock", err, name)
			if err := ex.Close(); err != nil {
				t.Fatal(err)
			}
			s1, err := fs.LockShared(name)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := fs.LockShared(name)
			if err != nil {
				t.Fatalf("second shared lock: %v", err)
			}
			_, err = fs.Lock(name)
			wantLocked(t, "Lock under shared locks", err, name)
			if err := s1.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Lock(name); err == nil {
				t.Fatal("Lock succeeded under one remaining shared lock")
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			ex, err = fs.Lock(name)
			if err != nil {
				t.Fatalf("Lock after every shared lock was released: %v", err)
			}
			ex.Close()
		})
	}
}

// TestLockSharedReadOnlyDir: a shared lock needs no write permission.
func TestLockSharedReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores permissions")
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "LOCK")
	if err := os.WriteFile(name, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	l, err := Default.LockShared(name)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}
