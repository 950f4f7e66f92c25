//go:build unix

package vfs

import "syscall"

// DescriptorLimit returns the process's soft limit on open file
// descriptors (RLIMIT_NOFILE), or 0 when it cannot be read. The Go runtime
// raises the soft limit to the hard one at start-up on most systems, so
// this is usually the hard limit.
func DescriptorLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur)
}
