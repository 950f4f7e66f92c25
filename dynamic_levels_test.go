package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestDynamicLevelShape fills a tree under DynamicLevelBytes in rounds of
// puts, overwrites and deletes, and after each settles checks the shape
// the rule promises (compaction/shape.go) and the contents against a map:
// the tables go to level 6 from the first compaction on, the levels above
// the base level stay empty, the base moves up (never down) as the tree
// grows, and the last level holds most of the bytes. Compact(nil, nil)
// then leaves one run in level 6.
func TestDynamicLevelShape(t *testing.T) {
	o := tinyOptions(vfs.NewMem()) // dynamic targets: the default
	o.LevelMultiplier = 4          // more levels from little data
	o.Compression = NoCompression
	db := mustOpen(t, "/db", o)
	defer func() { db.Close() }()

	rng := rand.New(rand.NewPCG(25, 1))
	model := map[string]string{}
	prevBase := manifest.NumLevels
	var bases []int
	key := func(i int) string { return fmt.Sprintf("key%07d", i) }
	n := 0
	for round := 0; round < 6; round++ {
		// Each round doubles the keys, rewrites a tenth of the old ones
		// and deletes a twentieth.
		grow := max(2000, n)
		for i := 0; i < grow; i++ {
			k, v := key(n+i), fmt.Sprintf("v%d-%d-%s", round, i, bytes.Repeat([]byte("x"), 20))
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		}
		for i := 0; i < n/10; i++ {
			k := key(rng.IntN(n))
			v := fmt.Sprintf("w%d-%d", round, i)
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		}
		for i := 0; i < n/20; i++ {
			k := key(rng.IntN(n))
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
		}
		n += grow
		if err := db.WaitForCompactions(); err != nil {
			t.Fatal(err)
		}
		s, v := dynamicShape(db)
		checkDynamicShape(t, fmt.Sprintf("round %d", round), db, s, v)
		if s.Base > prevBase {
			t.Fatalf("round %d: base level moved down from L%d to L%d as the tree grew", round, prevBase, s.Base)
		}
		prevBase = s.Base
		bases = append(bases, s.Base)
		checkContents(t, db, model)
	}
	t.Logf("base level by round: %v\n%s", bases, db.Metrics())
	if bases[len(bases)-1] >= bases[0] || bases[len(bases)-1] > 4 {
		t.Fatalf("base levels %v: want the base to move up to L4 or above as the tree grows", bases)
	}

	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	for l, lm := range m.Levels {
		if l < manifest.NumLevels-1 && lm.Files > 0 {
			t.Fatalf("after Compact(nil, nil) level %d holds %d tables:\n%s", l, lm.Files, m)
		}
	}
	checkContents(t, db, model)

	// Reopened with static targets, the same tree stays readable and
	// settles by the other rule without losing anything.
	db.Close()
	o.StaticLevelBytes = true
	db = mustOpen(t, "/db", o)
	checkContents(t, db, model)
}

// TestStaticTreeOpensDynamic: a tree built with static targets (the
// default before dynamic ones), opened with today's defaults, keeps its
// last level, drains the levels above the base level into it as writes go
// on, and loses nothing.
func TestStaticTreeOpensDynamic(t *testing.T) {
	o := tinyOptions(vfs.NewMem())
	o.StaticLevelBytes = true
	o.LevelMultiplier = 4
	o.Compression = NoCompression
	db := mustOpen(t, "/db", o)
	rng := rand.New(rand.NewPCG(25, 2))
	model := map[string]string{}
	put := func(n int) {
		t.Helper()
		for range n {
			k, v := fmt.Sprintf("key%07d", rng.IntN(40000)), fmt.Sprintf("v%d", rng.Uint32())
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		}
		if err := db.WaitForCompactions(); err != nil {
			t.Fatal(err)
		}
	}
	put(20000)
	before, _ := dynamicShape(db)
	m := db.Metrics()
	levels := 0
	for l := 1; l < manifest.NumLevels; l++ {
		if m.Levels[l].Files > 0 {
			levels++
		}
	}
	if levels < 3 || before.Last >= manifest.NumLevels-1 || m.Levels[1].Files == 0 {
		t.Fatalf("static tree: %d levels below level 0, last L%d, %d tables in L1; want 3+, above L%d, some (to drain)\n%s", levels, before.Last, m.Levels[1].Files, manifest.NumLevels-1, m)
	}
	db.Close()

	o.StaticLevelBytes = false
	db = mustOpen(t, "/db", o)
	defer func() { db.Close() }()
	if !db.opts.DynamicLevelBytes {
		t.Fatal("default Options: DynamicLevelBytes false")
	}
	checkContents(t, db, model)
	put(20000)
	s, bytes := dynamicShape(db)
	t.Logf("static last level L%d; reopened dynamic: base L%d, last L%d\n%s", before.Last, s.Base, s.Last, db.Metrics())
	if s.Last != before.Last {
		t.Fatalf("last level moved from L%d to L%d", before.Last, s.Last)
	}
	for l := 1; l < s.Base; l++ {
		if bytes[l] > 0 {
			t.Fatalf("level %d above the base L%d still holds %d bytes after settling\n%s", l, s.Base, bytes[l], db.Metrics())
		}
	}
	checkContents(t, db, model)
	checkInvariants(t, db)
}

// TestLevelSizingOptions: dynamic targets unless StaticLevelBytes, and
// both asked for is refused.
func TestLevelSizingOptions(t *testing.T) {
	for _, tc := range []struct {
		o       Options
		dynamic bool
	}{
		{Options{}, true},
		{Options{DynamicLevelBytes: true}, true},
		{Options{StaticLevelBytes: true}, false},
	} {
		r, err := tc.o.withDefaults()
		if err != nil || r.DynamicLevelBytes != tc.dynamic {
			t.Errorf("Static %v, Dynamic %v: DynamicLevelBytes %v, %v; want %v", tc.o.StaticLevelBytes, tc.o.DynamicLevelBytes, r.DynamicLevelBytes, err, tc.dynamic)
		}
	}
	if _, err := (&Options{StaticLevelBytes: true, DynamicLevelBytes: true}).withDefaults(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("both set: %v, want ErrInvalidArgument", err)
	}
}

// dynamicShape returns the current version's shape under db's options and
// the bytes of each level.
func dynamicShape(db *DB) (compaction.Shape, [manifest.NumLevels]int64) {
	db.mu.Lock()
	v := db.versions.Current()
	v.Ref()
	db.mu.Unlock()
	defer v.Unref()
	var bytes [manifest.NumLevels]int64
	for l := range bytes {
		bytes[l] = v.LevelBytes(l)
	}
	return compaction.ShapeOf(v, db.compactionOptions()), bytes
}

// checkDynamicShape checks a settled tree grown from empty under dynamic
// targets.
func checkDynamicShape(t *testing.T, what string, db *DB, s compaction.Shape, levels [manifest.NumLevels]int64) {
	t.Helper()
	if s.Last != manifest.NumLevels-1 {
		t.Fatalf("%s: last level L%d, want L%d (a tree grown under dynamic targets fills the deepest level first)\n%s", what, s.Last, manifest.NumLevels-1, db.Metrics())
	}
	var total int64
	for l := 1; l < manifest.NumLevels; l++ {
		total += levels[l]
		if l < s.Base && levels[l] > 0 {
			t.Fatalf("%s: level %d above the base L%d holds %d bytes\n%s", what, l, s.Base, levels[l], db.Metrics())
		}
		if l >= s.Base && l < s.Last && float64(levels[l]) >= s.MaxBytes[l] {
			t.Fatalf("%s: level %d holds %d bytes, over its target %.0f after settling\n%s", what, l, levels[l], s.MaxBytes[l], db.Metrics())
		}
	}
	// Each level above the last is under a quarter of the one below
	// (LevelMultiplier 4): the last holds at least 1 - 1/4 - 1/16 - ...
	// = 2/3 of the bytes below level 0.
	if frac := float64(levels[s.Last]) / float64(total); frac < 0.6 {
		t.Fatalf("%s: last level holds %.0f%% of the bytes, want at least 60%%\n%s", what, 100*frac, db.Metrics())
	}
	if s.L0Output != s.Base {
		t.Fatalf("%s: level 0 compacts into L%d, not the base L%d", what, s.L0Output, s.Base)
	}
}

// checkContents compares db with model by Get and by a full scan.
func checkContents(t *testing.T, db *DB, model map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := db.Get([]byte(k))
		if err != nil || string(v) != model[k] {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, v, err, model[k])
		}
	}
	it := db.NewIterator(nil)
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != model[keys[i]] {
			t.Fatalf("scan entry %d: %q = %q; want the model's %d keys in order", i, it.Key(), it.Value(), len(keys))
		}
		i++
	}
	if err := it.Error(); err != nil || i != len(keys) {
		t.Fatalf("scan: %d entries, %v; want %d", i, err, len(keys))
	}
}
