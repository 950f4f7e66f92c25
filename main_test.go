package bloomkv

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// Verify the tree and every table's filter after each flush and
	// compaction in every test of this package.
	invariantChecks = true
	os.Exit(m.Run())
}
