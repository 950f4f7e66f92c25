//go:build unix && !aix

// AIX has no flock; see lock_other.go.

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const (
	lockOpName   = "flock"
	unlockOpName = "funlock"
)

// lockFile takes an exclusive flock on f without waiting. flock, unlike
// fcntl locks, belongs to the open file description, so closing some other
// descriptor of the same file in this process does not drop it.
func lockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

func unlockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

// lockHeldElsewhere reports whether lockFile's error means that another
// open file description (another process) holds the lock.
func lockHeldElsewhere(err error) bool {
	return errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EAGAIN)
}

// openDir opens a directory so that Sync makes the entries in it durable.
func openDir(name string) (File, error) { return os.Open(name) }

// lockFileShared takes a shared flock on f without waiting: any number of
// shared holders, none while an exclusive one holds it.
func lockFileShared(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
}
