package vfs

import (
	"errors"
	"io"
	"os"
)

// ErrLocked is what FS.Lock's error wraps when another holder has the lock:
// another process, or another Lock of the same file in this process that
// has not been released. Test for it with errors.Is. A failure for any other
// reason (no permission, a read-only file system, the name being a
// directory) does not wrap ErrLocked; it wraps the underlying error.
var ErrLocked = errors.New("bloomkv: directory is locked by another holder")

// File is an open file. Files opened with Create are written sequentially;
// files opened with Open are read with ReadAt (concurrently safe) or Read.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes everything written so far durable.
	Sync() error
	Stat() (os.FileInfo, error)
}

// FS is a file system.
type FS interface {
	// Create creates or truncates the named file for writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenDir opens a directory so that it can be synced (making creates,
	// renames and removes in it durable).
	OpenDir(name string) (File, error)
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// Link makes newname a hard link to the file oldname: one file under
	// two names. newname must not exist. It fails (with an error that is
	// not os.ErrNotExist or os.ErrExist) where the two names would be on
	// different file systems or the file system has no hard links;
	// LinkOrCopy falls back to a copy then. Like Create, the new name is
	// durable once its directory is synced.
	Link(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the base names of the entries of dir, in no given order.
	List(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on the named file, creating it if needed.
	// It fails at once if another holder (this process or another) has it,
	// with an error wrapping ErrLocked; any other failure wraps the
	// underlying error (fs.ErrPermission, ...) and not ErrLocked. Closing
	// the returned Closer releases the lock.
	Lock(name string) (io.Closer, error)
	// LockShared takes a shared lock on the named file, which must exist
	// (it is never created: an error wrapping os.ErrNotExist says it is
	// missing). Any number of shared holders may coexist; it fails at once
	// while another holder has the exclusive lock, and Lock fails while a
	// shared lock is held. Closing the returned Closer releases the lock.
	LockShared(name string) (io.Closer, error)
	// PathJoin joins path elements as filepath.Join does.
	PathJoin(elem ...string) string
}
