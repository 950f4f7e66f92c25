//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package vfs

import (
	"errors"
	"os"
)

// mapFile: this system's tables are read with pread.
func mapFile(*os.File, int64) ([]byte, func() error, error) {
	return nil, nil, errors.ErrUnsupported
}
