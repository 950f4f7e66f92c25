package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/cputime"
)

// TestMain lets the test binary stand in for the harness in the child
// processes -isolate starts (os.Executable is the test binary then).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestPeakRSSPerEngine: with the engines in child processes, an engine's
// peak RSS does not include memory the harness process holds -- here a
// 256 MiB ballast standing for what earlier engines leave behind -- and
// run in this process (-isolate=false) it does, so the test would see
// the difference. The CPU table notes the shared process in the second
// case only.
func TestPeakRSSPerEngine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc")
	}
	const ballast = 256 << 20
	held := make([]byte, ballast)
	for i := range held {
		held[i] = byte(i) | 1 // resident, not zero pages
	}
	for _, isolate := range []bool{true, false} {
		jsonPath := filepath.Join(t.TempDir(), "report.json")
		var stdout, stderr bytes.Buffer
		args := []string{"-num", "2000", "-reads", "500", "-settle_quiet", "60ms", "-durability", "write-through",
			"-engines", "bloomkv,goleveldb", "-benchmarks", "fillrandom,readrandom", "-dir", t.TempDir(), "-json", jsonPath}
		if !isolate {
			args = append(args, "-isolate=false")
		}
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("-isolate=%v: exit code %d\nstderr:\n%s", isolate, code, stderr.String())
		}
		rep, err := readReport(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		// The CPU table says when its figures can hold other engines' work.
		if shared := strings.Contains(stdout.String(), "Every engine ran in the one harness process"); cputime.Process() > 0 && shared == isolate {
			t.Errorf("-isolate=%v: the CPU table's note on a shared process printed: %v\n%s", isolate, shared, stdout.String())
		}
		for _, r := range rep.Pairings[0].Runs {
			m := r.Memory
			switch {
			case m == nil || m.PeakRSS <= 0 || m.PeakAnon <= 0:
				t.Errorf("-isolate=%v %s: memory %+v", isolate, r.Engine, m)
			case m.Isolated != isolate:
				t.Errorf("-isolate=%v %s: isolated %v in the report", isolate, r.Engine, m.Isolated)
			case isolate && m.PeakRSS >= ballast:
				t.Errorf("%s in a child process: peak RSS %d MiB includes the parent's %d MiB", r.Engine, m.PeakRSS>>20, ballast>>20)
			case !isolate && m.PeakRSS < ballast:
				t.Errorf("%s in the harness's process: peak RSS %d MiB, below the %d MiB the process holds", r.Engine, m.PeakRSS>>20, ballast>>20)
			}
		}
	}
	runtime.KeepAlive(held)
}
