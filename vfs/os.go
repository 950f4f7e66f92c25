package vfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Default is the operating system's file system.
var Default FS = osFS{}

// osFS is the operating system's file system. What differs between systems
// (taking a file lock, syncing a directory) lives in lock_unix.go,
// lock_windows.go and lock_other.go.
type osFS struct{}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osReadFile{f}, nil
}

func (osFS) OpenDir(name string) (File, error) { return openDir(name) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) PathJoin(elem ...string) string { return filepath.Join(elem...) }

// heldLocks records lock files this process holds. The operating system's
// locks cannot be relied on for that: flock is per open file description and
// LockFileEx per handle, so a second Lock in the same process must be
// refused here.
var heldLocks sync.Map // absolute path -> struct{}

// Lock takes the in-process lock, then the operating system's lock
// (lockFile). The error wraps ErrLocked only when another holder has the
// lock; any other failure (permissions, a read-only file system, name being
// a directory) is returned as the operating system reported it, as an
// *os.PathError naming the file.
func (osFS) Lock(name string) (io.Closer, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, &os.PathError{Op: "lock", Path: name, Err: err}
	}
	if _, loaded := heldLocks.LoadOrStore(abs, struct{}{}); loaded {
		return nil, fmt.Errorf("bloomkv/vfs: lock %s: held by this process: %w", name, ErrLocked)
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		heldLocks.Delete(abs)
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		heldLocks.Delete(abs)
		if lockHeldElsewhere(err) {
			return nil, fmt.Errorf("bloomkv/vfs: lock %s: held by another process (%w): %w", name, err, ErrLocked)
		}
		return nil, &os.PathError{Op: lockOpName, Path: name, Err: err}
	}
	return &osLock{f: f, abs: abs}, nil
}

func (osFS) LockShared(name string) (io.Closer, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, &os.PathError{Op: "lock", Path: name, Err: err}
	}
	// Read-only: works in a directory (and on a file) the process cannot
	// write. flock locks belong to the open file description, so this
	// conflicts with an exclusive lock of this process too.
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if err := lockFileShared(f); err != nil {
		f.Close()
		if lockHeldElsewhere(err) {
			return nil, fmt.Errorf("bloomkv/vfs: shared lock %s: held exclusively (%w): %w", name, err, ErrLocked)
		}
		return nil, &os.PathError{Op: lockOpName, Path: name, Err: err}
	}
	return &osLock{f: f, abs: abs, shared: true}, nil
}

type osLock struct {
	f        *os.File
	abs      string
	shared   bool // not recorded in heldLocks
	released atomic.Bool
}

// Close releases the lock. A second Close fails and changes nothing, so it
// cannot release a lock that a later Lock of the same file took.
func (l *osLock) Close() error {
	if l.released.Swap(true) {
		return fmt.Errorf("bloomkv/vfs: unlock %s: %w", l.f.Name(), os.ErrClosed)
	}
	err := unlockFile(l.f)
	if err != nil {
		err = &os.PathError{Op: unlockOpName, Path: l.f.Name(), Err: err}
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if !l.shared {
		heldLocks.Delete(l.abs)
	}
	return err
}
