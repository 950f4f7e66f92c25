package bloomkv

import (
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/cputime"
)

// cpuMeter reports the CPU time per operation of a benchmark's timed part,
// foreground and background goroutines together, as "cpu-ns/op". On a
// shared machine wall time per op moves with the neighbours' load; the CPU
// the engine burns for the same work moves much less, so it is the figure
// to compare before and after a change of the write path.
type cpuMeter struct{ start time.Duration }

// cpuTime (cputime_*_test.go) is the CPU time the process has used.

func startCPU() cpuMeter { return cpuMeter{cputime.Process()} }

func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(cputime.Process()-m.start)/float64(b.N), "cpu-ns/op")
}
