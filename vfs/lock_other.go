//go:build (!unix && !windows) || aix

package vfs

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

const (
	lockOpName   = "lock"
	unlockOpName = "unlock"
)

// errNoFileLocks is lockFile's error where the operating system offers no
// file locks that bloomkv knows how to take: js and wasip1 have none, and
// AIX has no flock (only fcntl locks, which closing any descriptor of the
// file drops). Taking only the in-process lock would let a second process
// open the same directory, so Lock fails instead; use an in-memory FS there.
var errNoFileLocks = fmt.Errorf("no file locking on %s: %w", runtime.GOOS, errors.ErrUnsupported)

func lockFile(*os.File) error { return errNoFileLocks }

func lockFileShared(*os.File) error { return errNoFileLocks }

func unlockFile(*os.File) error { return nil }

func lockHeldElsewhere(error) bool { return false }

func openDir(name string) (File, error) { return os.Open(name) }
