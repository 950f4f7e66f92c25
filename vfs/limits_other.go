//go:build !unix

package vfs

// DescriptorLimit returns 0: this system has no RLIMIT_NOFILE to read
// (Windows has no small per-process limit on handles).
func DescriptorLimit() uint64 { return 0 }
