//go:build !unix

package bloomkv

import "time"

func processCPUTime() time.Duration { return 0 }
