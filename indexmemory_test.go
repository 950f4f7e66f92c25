package bloomkv

import (
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestIndexBytesResident: the index memory of open tables is reported
// (bench/compare charges it as memory held outside the block cache), it
// grows with the tables reads open, and it is nothing once no table is
// open.
func TestIndexBytesResident(t *testing.T) {
	const n = 20_000
	fs := vfs.NewMem()
	db := writeLevelsTree(t, cacheFiltersOptions(fs), n)
	db.Close()

	db = mustOpen(t, "/db", cacheFiltersOptions(fs))
	defer db.Close()
	cold := db.Metrics()
	getAll(t, db, n)
	warm := db.Metrics()
	var tables int
	for _, l := range warm.Levels {
		tables += l.Files
	}
	t.Logf("%d tables, %d open; index bytes resident: %d cold, %d after reads", tables, warm.TableCacheOpen, cold.IndexBytesResident, warm.IndexBytesResident)
	if tables < 2 || warm.TableCacheOpen != tables {
		t.Fatalf("%d tables, %d open: want every table open after reading every key", tables, warm.TableCacheOpen)
	}
	// Each open table holds at least one index entry per data block.
	if warm.IndexBytesResident < int64(tables)*16 || warm.IndexBytesResident < cold.IndexBytesResident {
		t.Fatalf("index bytes resident %d after reads (%d cold) for %d open tables", warm.IndexBytesResident, cold.IndexBytesResident, tables)
	}
}
