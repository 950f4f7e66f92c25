package vfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (osFS) Open(name string) (File, error) { return os.Open(name) }

func (osFS) OpenDir(name string) (File, error) { return os.Open(name) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

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

// heldLocks records lock files this process holds: flock is per open file
// description, so a second Open in the same process must be refused here.
var heldLocks sync.Map // absolute path -> struct{}

func (osFS) Lock(name string) (io.Closer, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	if _, loaded := heldLocks.LoadOrStore(abs, struct{}{}); loaded {
		return nil, fmt.Errorf("bloomkv/vfs: lock %s: already held by this process", name)
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		heldLocks.Delete(abs)
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		heldLocks.Delete(abs)
		return nil, fmt.Errorf("bloomkv/vfs: lock %s: held by another process: %w", name, err)
	}
	return &osLock{f: f, abs: abs}, nil
}

type osLock struct {
	f   *os.File
	abs string
}

func (l *osLock) Close() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	heldLocks.Delete(l.abs)
	return err
}
