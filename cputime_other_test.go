//go:build !unix

package bloomkv

import "time"

// cpuTime is 0 where getrusage is unavailable: cpu-ns/op then reads 0.
func cpuTime() time.Duration { return 0 }
