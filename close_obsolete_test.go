package bloomkv

import (
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestCloseDeletesObsoleteLogs: after a clean Close the directory holds
// only the logs the manifest still needs: the one holding the memtable's
// writes, and those of immutable memtables Close found unflushed. Logs
// whose writes are all in tables are obsolete: left behind, they cost
// space and, without a manifest, tell kvtool repair nothing it can trust.
// Close deletes them, as background work would have.
func TestCloseDeletesObsoleteLogs(t *testing.T) {
	for _, settle := range []string{"none", "wait", "flush"} {
		mem := vfs.NewMem()
		o := tinyOptions(mem)
		db := mustOpen(t, "/db", o)
		model := fillModel(t, db, 3000) // many memtable switches, each a new log
		switch settle {
		case "wait":
			if err := db.WaitForCompactions(); err != nil {
				t.Fatal(err)
			}
		case "flush":
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		logs := filesOfType(t, mem, base.FileTypeLog)
		slices.Sort(logs)
		name, err := manifest.ReadCurrent(mem, "/db")
		if err != nil {
			t.Fatal(err)
		}
		state, err := manifest.ReadManifest(mem, "/db/"+name)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			if _, num, _ := base.ParseFilename(l); num < state.LogNum {
				t.Errorf("settle=%s: a clean Close left the obsolete log %s (the manifest's log number is %d; logs %v)", settle, l, state.LogNum, logs)
			}
		}
		if settle != "none" && len(logs) != 1 {
			t.Errorf("settle=%s: a clean Close of a settled database left logs %v, want only the live one", settle, logs)
		}
		// What is left is what recovery needs: every write is there.
		rdb := mustOpen(t, "/db", o)
		checkModel(t, rdb, model)
		if err := rdb.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
