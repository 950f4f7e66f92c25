package bloomkv

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestRebuildFiltersKeepsTheTree rewrites a settled tree's filters under
// another variant and bits per key: every level keeps exactly its keys,
// every table of levels >= 1 then carries the new filter, and every key
// reads back.
func TestRebuildFiltersKeepsTheTree(t *testing.T) {
	opts := tinyOptions(vfs.NewMem())
	opts.LBaseMaxBytes, opts.TargetFileSize = 8<<10, 4<<10
	db := mustOpen(t, "/db", opts)
	m := model{}
	for i := range 4000 {
		k := fmt.Sprintf("k%05d", i*7919%10007)
		m[k] = fmt.Sprint("v", i)
		if err := db.Put([]byte(k), []byte(m[k])); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, []byte("k03000")); err != nil { // push part of the keys down
		t.Fatal(err)
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	levelKeys := func(db *DB) []uint64 {
		var out []uint64
		for _, l := range db.Metrics().Levels {
			out = append(out, l.FilterKeys)
		}
		return out
	}
	before := levelKeys(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	opts.FilterBitsPerKey, opts.FilterVariant = 5, filter.VariantBlocked
	opts.DisableReadCompactions = true
	db = mustOpen(t, "/db", opts)
	defer db.Close()
	if err := db.RebuildFilters(); err != nil {
		t.Fatal(err)
	}
	after := levelKeys(db)
	if fmt.Sprint(before[1:]) != fmt.Sprint(after[1:]) {
		t.Fatalf("keys per level changed: %v -> %v", before, after)
	}
	s, slot := db.loadReadState()
	defer s.unref(slot)
	rewritten := 0
	for l := 1; l < len(s.v.Levels); l++ {
		for _, f := range s.v.Levels[l] {
			if db.filterIsStale(s.v, l, f) {
				t.Fatalf("L%d table %d still has its old filter", l, f.FileNum)
			}
			rewritten++
		}
	}
	if rewritten == 0 {
		t.Fatal("no table below level 0")
	}
	for k := range m {
		checkGet(t, db.Get, m, k, "after RebuildFilters")
	}
	t.Logf("keys per level %v; %d tables", after, rewritten)
}
