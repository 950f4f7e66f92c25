package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks Linux to start writing [off, off+n) of f back without
// waiting for it, and without touching metadata: no durability, just an
// earlier start for the writeback that a later fsync would otherwise do
// all at once.
func startWriteback(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil {
		return err
	}
	return serr
}
