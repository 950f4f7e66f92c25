package bloomkv

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// lockedBuffer is a bytes.Buffer safe for the events goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDebugLogSummaries: at slog Debug the Logger hears a summary of every
// open, flush and compaction; at the default level it hears nothing.
func TestDebugLogSummaries(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf lockedBuffer
		fs := vfs.NewMem()
		o := tinyOptions(fs)
		o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
		db := mustOpen(t, "/db", o)
		for i := range 400 {
			if err := db.Put(fmt.Appendf(nil, "k%05d", i), bytes.Repeat([]byte("v"), 40)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if level == slog.LevelInfo {
			if out != "" {
				t.Fatalf("at Info the happy path logged:\n%s", out)
			}
			continue
		}
		for _, want := range []string{
			`msg="bloomkv: open" dir=/db read_only=false tables_per_level="[0 0 0 0 0 0 0]"`,
			`msg="bloomkv: flush" job=`,
			`msg="bloomkv: compaction" job=`,
			`reason=manual`,
			`bytes_in=`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("debug log lacks %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, `msg="bloomkv: flush"`); n < 2 {
			t.Errorf("%d flush summaries for a workload of many memtables", n)
		}
	}
}
