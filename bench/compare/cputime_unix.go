//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used,
// or 0 where the system does not say. With each engine run in a process of
// its own (isolate.go), that is the engine's work -- its foreground calls
// and its background flushes and compactions -- plus the harness's loops
// and samplers, alike for every engine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
