//go:build unix && !aix

package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOSLockIsADirectoryErrno(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	if err := os.Mkdir(name, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Default.Lock(name); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("Lock of a directory: err = %v, want EISDIR", err)
	}
}

func TestOSLockReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) }) // so TempDir can remove it
	name := filepath.Join(dir, "LOCK")
	_, err := Default.Lock(name)
	wantNotLocked(t, "Lock in a read-only directory", err, name)
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Lock in a read-only directory: err = %v, want fs.ErrPermission", err)
	}
}
