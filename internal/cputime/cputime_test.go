package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessGrows: busy work shows as CPU time where the system reports it.
func TestProcessGrows(t *testing.T) {
	before := Process()
	if before == 0 {
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatal("no CPU time on a unix system")
		}
		t.Skip("this system's CPU time is not read")
	}
	x := 0
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		x++
	}
	if after := Process(); after-before < 10*time.Millisecond {
		t.Errorf("50 ms of busy work added %v of CPU time (x=%d)", after-before, x)
	}
}
