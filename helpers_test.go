package bloomkv

import (
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

func tinyOptions(fs vfs.FS) *Options {
	return &Options{
		FS:                    fs,
		MemtableSize:          4 << 10,
		BlockSize:             256,
		BlockCacheSize:        64 << 10,
		L0CompactionThreshold: 3,
		LBaseMaxBytes:         16 << 10,
		TargetFileSize:        8 << 10,
		MaxOpenFiles:          20,
	}
}

func mustOpen(t testing.TB, dir string, o *Options) *DB {
	t.Helper()
	db, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db
}

// checkInvariants verifies the tree shape and every table's filter.
func checkInvariants(t *testing.T, db *DB) {
	t.Helper()
	if err := db.checkInvariants(); err != nil {
		t.Fatalf("invariants: %v", err)
	}
}
