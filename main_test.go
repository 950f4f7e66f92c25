package bloomkv

import (
	"log/slog"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// Verify the tree and every new table's filter after each flush and
	// compaction in every test of this package.
	invariantChecks = true
	// Torn tails dropped by the many crash tests are reported at Info;
	// keep warnings visible.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
