package vfs

import (
	"errors"
	"math"
	"os"
)

// Mapper is implemented by files that can be mapped into memory read-only.
//
// The SSTable reader copies a block out of the mapping instead of asking the
// kernel for it with pread: on the development machine a pread of a 2 KiB
// block from the page cache cost about 2 µs, a fifth of a random Get. The
// mapping never leaves the reader (every block is copied or decoded out of
// it), so unmapping at Close cannot strand a slice. Reads past the end of
// a file that was truncated after it was mapped fault; the reader turns
// the fault into an error (runtime/debug.SetPanicOnFault).
type Mapper interface {
	// Map maps the file's first size bytes read-only and shared, so that
	// the mapping shows what the file holds. unmap releases it; nothing
	// may touch data afterwards. Files or systems without memory maps
	// return an error wrapping errors.ErrUnsupported.
	Map(size int64) (data []byte, unmap func() error, err error)
}

// osReadFile is a file of the operating system's file system opened for
// reading, mappable where the system supports it (mmap_unix.go).
type osReadFile struct{ *os.File }

// Map implements Mapper.
func (f osReadFile) Map(size int64) ([]byte, func() error, error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, errors.ErrUnsupported
	}
	return mapFile(f.File, size)
}
