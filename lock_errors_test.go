package bloomkv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// wantOpenNotLocked fails unless err is an Open failure that is not
// contention: non-nil, not wrapping ErrLocked, naming the LOCK file.
func wantOpenNotLocked(t *testing.T, what string, err error, lockName string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: Open succeeded", what)
	}
	if errors.Is(err, ErrLocked) || strings.Contains(err.Error(), "in use") {
		t.Fatalf("%s: err = %v reports contention, but nobody holds the lock", what, err)
	}
	if !strings.Contains(err.Error(), lockName) {
		t.Fatalf("%s: error %q does not name %s", what, err, lockName)
	}
	t.Logf("%s: %v", what, err)
}

func TestOpenLockedDirectory(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, nil)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use by another holder") {
		t.Fatalf("second Open: err = %v, want ErrLocked, \"in use by another holder\"", err)
	}
	t.Logf("second Open: %v", err)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	db.Close()
}

func TestOpenLockedDirectoryInMemory(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Open("/db", &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Open("/db", &Options{FS: mem}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open on a MemFS: err = %v, want ErrLocked", err)
	}
	if _, err := Open("/db", &Options{FS: vfs.NewErrorFS(mem)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open through an ErrorFS: err = %v, want ErrLocked", err)
	}
}

func TestOpenLockIsADirectory(t *testing.T) {
	dir := t.TempDir()
	lockName := filepath.Join(dir, "LOCK")
	if err := os.Mkdir(lockName, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	wantOpenNotLocked(t, "Open with LOCK a directory", err, lockName)
}

func TestOpenLockInjectedFailure(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.NewMem())
	efs.FailAfter(1, vfs.OpLock)
	_, err := Open("/db", &Options{FS: efs})
	wantOpenNotLocked(t, "Open with Lock failing", err, "/db/LOCK")
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Open with Lock failing: err = %v, want vfs.ErrInjected", err)
	}
}

func TestOpenLockReadOnlyDirectory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a read-only directory attribute does not stop creating files on Windows")
	}
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) }) // so TempDir can remove it
	_, err := Open(dir, nil)
	wantOpenNotLocked(t, "Open of a read-only directory", err, filepath.Join(dir, "LOCK"))
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Open of a read-only directory: err = %v, want fs.ErrPermission", err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	if _, err := Open(dir, nil); err == nil {
		t.Fatal("second Open of the same directory succeeded")
	}
	db.Close()
	db = mustOpen(t, dir, nil)
	db.Close()
}
