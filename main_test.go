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
	// A timer that reshapes the tree a second after the last write would
	// race every test that inspects levels or damages table files; the
	// tests of idle compaction, and the stress and crash tests that want
	// it in the mix, set Options.IdleCompactionDelay themselves.
	defaultIdleCompactionDelay = -1
	// Torn tails dropped by the many crash tests are reported at Info;
	// keep warnings visible.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
