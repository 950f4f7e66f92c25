//go:build linux || darwin || freebsd || netbsd || openbsd

package vfs

import (
	"errors"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps f's first size bytes. Only 64-bit systems map: a 32-bit
// address space would run out with a few hundred open tables.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if math.MaxInt == math.MaxInt32 {
		return nil, nil, errors.ErrUnsupported
	}
	return mmapFile(f, 0, size, unix.PROT_READ)
}

// mmapFile maps [off, off+n) of f shared with protection prot (read-only
// tables here, writable logs in logmap_linux.go).
func mmapFile(f *os.File, off, n int64, prot int) ([]byte, func() error, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	var data []byte
	var merr error
	if err := rc.Control(func(fd uintptr) {
		data, merr = unix.Mmap(int(fd), off, int(n), prot, unix.MAP_SHARED)
	}); err != nil {
		return nil, nil, err
	}
	if merr != nil {
		return nil, nil, merr
	}
	return data, func() error { return unix.Munmap(data) }, nil
}
