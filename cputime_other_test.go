//go:build !unix

package bloomkv

import "time"

// processCPUTime is 0 where getrusage is unavailable: cpu-ns/op then reads 0.
func processCPUTime() time.Duration { return 0 }
