package bloomkv

import (
	"log/slog"
	"os"
	"testing"

	"github.com/bloomkv/bloomkv/sstable"
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
	// A Get that read a block after releasing it (its buffer recycled for
	// another block) then sees garbage, not a plausible stale value.
	sstable.PoisonRecycledBlocks(true)
	// Torn tails dropped by the many crash tests are reported at Info;
	// keep warnings visible.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
