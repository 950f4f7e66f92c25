//go:build windows

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

const (
	lockOpName   = "LockFileEx"
	unlockOpName = "UnlockFileEx"
)

// lockFile takes an exclusive lock on the first byte of f without waiting.
// Windows locks belong to the handle; closing it releases them too.
func lockFile(f *os.File) error {
	return windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY,
		0, 1, 0, new(windows.Overlapped))
}

func unlockFile(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
}

// lockHeldElsewhere reports whether lockFile's error means that another
// handle (another process) holds the lock.
func lockHeldElsewhere(err error) bool {
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}

// openDir opens a directory whose Sync does nothing. Windows cannot sync a
// directory: FlushFileBuffers on a directory handle fails (the handle
// os.Open returns is read-only, and a directory has no buffers to flush
// anyway). NTFS journals its metadata, so creates, renames and removes are
// made durable by the file system itself. The directory is still opened, so
// a missing or non-directory name fails here as it does on Unix.
func openDir(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return windowsDir{f}, nil
}

// windowsDir is a directory opened by openDir.
type windowsDir struct{ *os.File }

// Sync does nothing; see openDir.
func (windowsDir) Sync() error { return nil }

// lockFileShared takes a shared lock on the first byte of f without
// waiting (LockFileEx without LOCKFILE_EXCLUSIVE_LOCK).
func lockFileShared(f *os.File) error {
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_FAIL_IMMEDIATELY,
		0, 1, 0, new(windows.Overlapped))
}
