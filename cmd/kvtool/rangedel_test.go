package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
)

// TestRangeDeletions: check accepts a database whose tables and log hold
// range deletions, sst shows them, and repair refuses (it cannot yet apply
// them) instead of bringing deleted keys back.
func TestRangeDeletions(t *testing.T) {
	dir := t.TempDir()
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		db.Put(testKey(i), testValue(i, 0))
	}
	db.Flush()
	db.DeleteRange(testKey(10), testKey(20))
	db.Flush()
	db.DeleteRange(testKey(30), testKey(40)) // stays in the log
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runTool(t, "check", dir); code != 0 {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errOut)
	}
	var found bool
	for _, name := range filesOfType(t, dir, base.FileTypeTable) {
		code, out, errOut := runTool(t, "sst", "-blocks", filepath.Join(dir, name))
		if code != 0 {
			t.Fatalf("sst %s: exit %d\n%s\n%s", name, code, out, errOut)
		}
		if strings.Contains(out, `["key000010", "key000020")`) && strings.Contains(out, "range-deletion block") {
			found = true
		}
	}
	if !found {
		t.Fatal("no table listing shows the range deletion")
	}
	os.Remove(filepath.Join(dir, "CURRENT"))
	if code, out, _ := runTool(t, "repair", dir); code == 0 || !strings.Contains(out, "range deletions") {
		t.Fatalf("repair: exit %d, want a refusal naming range deletions:\n%s", code, out)
	}
}
