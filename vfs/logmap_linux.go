//go:build linux

package vfs

import (
	"errors"
	"math"

	"golang.org/x/sys/unix"
)

// Reserve implements WritableMapper with fallocate (mode 0: allocate and
// extend the size). Only 64-bit systems map logs: see mapFile.
func (f osFile) Reserve(size int64) error {
	if math.MaxInt == math.MaxInt32 {
		return errors.ErrUnsupported
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Fallocate(int(fd), 0, 0, size)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr == unix.EOPNOTSUPP || ferr == unix.ENOSYS {
		return errors.Join(errors.ErrUnsupported, ferr)
	}
	return ferr
}

// MapWritable implements WritableMapper.
func (f osFile) MapWritable(off, n int64) ([]byte, func() error, error) {
	if math.MaxInt == math.MaxInt32 || n <= 0 || n > math.MaxInt {
		return nil, nil, errors.ErrUnsupported
	}
	return mmapFile(f.File, off, n, unix.PROT_READ|unix.PROT_WRITE)
}

// Truncate implements WritableMapper.
func (f osFile) Truncate(size int64) error { return f.File.Truncate(size) }
