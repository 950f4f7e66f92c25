package bloomkv

import (
	"fmt"
	"maps"
	"testing"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// tablesByCompression returns, per level, how many tables of each
// compression the current version holds.
func tablesByCompression(t *testing.T, db *DB) map[int]map[Compression]int {
	t.Helper()
	s, slot := db.loadReadState()
	defer s.unref(slot)
	out := map[int]map[Compression]int{}
	for level := range manifest.NumLevels {
		for _, f := range s.v.Levels[level] {
			if out[level] == nil {
				out[level] = map[Compression]int{}
			}
			out[level][db.tableCompression(f)]++
		}
	}
	return out
}

// TestLevelCompression: flushes and compactions write each level with its
// compression (snappy on top, zstd below), no table moves down unchanged
// into a level of another compression, and Compact rewrites tables whose
// compression the options no longer ask for.
func TestLevelCompression(t *testing.T) {
	mem := vfs.NewMem()
	o := tinyOptions(mem)
	o.LevelCompression = []Compression{SnappyCompression, SnappyCompression, ZstdCompression}
	o.StaticLevelBytes = true // levels 1 and 2 both hold tables
	db := mustOpen(t, "/db", o)
	want := model{}
	for i := range 6000 {
		k, v := fmt.Sprintf("key%05d", i*7919%6000), fmt.Sprintf("value %d %0100d", i, i)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	got := tablesByCompression(t, db)
	t.Logf("tables per level and compression: %v", got)
	if got[2][ZstdCompression] == 0 {
		t.Fatalf("no zstd table in level 2: %v", got)
	}
	for level, byComp := range got {
		for c := range byComp {
			if c != o.compressionAt(level) {
				t.Errorf("level %d holds a %v table, want %v", level, c, o.compressionAt(level))
			}
		}
	}
	if !maps.Equal(dbContents(t, db), want) {
		t.Fatal("contents differ")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// New settings: Compact rewrites what they no longer match.
	o.LevelCompression = nil
	o.Compression = NoCompression
	db = mustOpen(t, "/db", o)
	defer db.Close()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for level, byComp := range tablesByCompression(t, db) {
		if len(byComp) != 1 || byComp[NoCompression] == 0 {
			t.Errorf("after Compact level %d holds %v, want only uncompressed tables", level, byComp)
		}
	}
	if !maps.Equal(dbContents(t, db), want) {
		t.Fatal("contents differ after Compact")
	}
}

func TestLevelCompressionRejectsUnknown(t *testing.T) {
	_, err := Open("/db", &Options{FS: vfs.NewMem(), LevelCompression: []Compression{SnappyCompression, 9}})
	if err == nil {
		t.Fatal("an unknown compression was accepted")
	}
}
