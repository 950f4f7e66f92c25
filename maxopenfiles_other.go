//go:build !unix

package bloomkv

// descriptorLimit returns 0: this system has no RLIMIT_NOFILE to read
// (Windows has no small per-process limit on handles).
func descriptorLimit() uint64 { return 0 }
