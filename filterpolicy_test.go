package bloomkv

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/filterpolicy"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// What the filter tests ask the policy about the engine's versions
// directly (filterpolicy.go is the engine's adapter; the policy's own
// tests are in internal/filterpolicy).

// lastLevel returns the deepest level of v holding a table (0 if none).
func lastLevel(v *manifest.Version) int {
	return filterpolicy.LastLevel[*manifest.FileMetadata](v)
}

// policyShape returns the runs an absent Get probes as the per-level
// policy sees them for a table written to level of v (filterpolicy's
// Shape): each run's keys, its probed fraction, and the run the table
// joins.
func (db *DB) policyShape(v *manifest.Version, level int, incoming float64, leaving []*manifest.FileMetadata) (keys, probed []float64, target int) {
	return db.filterPolicy.Shape(v, level, incoming, leaving)
}

func TestFilterPolicyOptionsRejected(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{FilterBitsPerKey: -1}, "FilterBitsPerKey"},
		{Options{FilterBitsPerKey: math.NaN()}, "FilterBitsPerKey"},
		{Options{FilterBitsPerKey: math.Inf(1)}, "FilterBitsPerKey"},
		{Options{FilterBitsPerKey: 64.5}, "FilterBitsPerKey"},
		{Options{FilterTargetFPR: 1}, "FilterTargetFPR"},
		{Options{FilterTargetFPR: -0.1}, "FilterTargetFPR"},
		{Options{FilterTargetFPR: 1e-12}, "FilterTargetFPR"},
		{Options{FilterTargetFPR: math.NaN()}, "FilterTargetFPR"},
		{Options{FilterTargetFPR: 0.01, FilterBitsPerKey: 8}, "both set"},
		{Options{FilterVariant: 9}, "FilterVariant"},
		{Options{FilterVariant: filter.VariantFuse, FilterPerLevel: true}, "FilterPerLevel"},
		{Options{CacheFilterBlocks: true, BlockCacheSize: -1}, "CacheFilterBlocks"},
		{Options{FilterPinning: 7}, "FilterPinning"},
		{Options{FilterPinning: -1}, "FilterPinning"},
	} {
		o := c.o
		o.FS = vfs.NewMem()
		_, err := Open("/x", &o)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v): %v, want ErrInvalidArgument naming %s", c.o, err, c.want)
		}
	}
}

// tableProps returns the properties of every live table.
func tableProps(t *testing.T, db *DB) map[int][]*sstable.Properties {
	t.Helper()
	s, slot := db.loadReadState()
	defer s.unref(slot)
	out := map[int][]*sstable.Properties{}
	for l, files := range s.v.Levels {
		for _, f := range files {
			r, release, err := findTable(db.tableCache, f)
			if err != nil {
				t.Fatal(err)
			}
			p := *r.Properties()
			out[l] = append(out[l], &p)
			release()
		}
	}
	return out
}

func putKeys(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%07d", 2*i)), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFractionalFilterBitsPerKey: FilterBitsPerKey and FilterTargetFPR
// reach every table, recorded exactly, the filters spend what was asked,
// and Compact rewrites tables built with another setting (but not those
// built with the same bits under another name).
func TestFractionalFilterBitsPerKey(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs, BloomBitsPerKey: 10})
	putKeys(t, db, 20000)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, c := range []struct {
		o         Options
		wantBits  float64
		rewritten bool
	}{
		{Options{FilterBitsPerKey: 10}, 10, false}, // the same bits as BloomBitsPerKey 10
		{Options{FilterBitsPerKey: 7.5}, 7.5, true},
		{Options{BloomBitsPerKey: -1, FilterBitsPerKey: 7.5}, 7.5, false}, // overrides; unchanged
		{Options{FilterTargetFPR: 0.01}, filter.BitsPerKeyForFPR(0.01), true},
	} {
		o := c.o
		o.FS = fs
		db := mustOpen(t, "/db", &o)
		before := db.Metrics().Compactions
		if err := db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
		if rewrote := db.Metrics().Compactions > before; rewrote != c.rewritten {
			t.Errorf("%+v: Compact rewrote tables: %v, want %v", c.o, rewrote, c.rewritten)
		}
		for l, ps := range tableProps(t, db) {
			for _, p := range ps {
				if math.Abs(p.BitsPerKey()-c.wantBits) > 1e-12 {
					t.Errorf("%+v: L%d table built with %v bits per key, want %v", c.o, l, p.BitsPerKey(), c.wantBits)
				}
			}
		}
		m := db.Metrics()
		if spent := float64(m.FilterBytes*8) / float64(m.FilterKeys); spent < c.wantBits || spent > c.wantBits*1.01 {
			t.Errorf("%+v: filters spend %.3f bits per key, want %.3f", c.o, spent, c.wantBits)
		}
		for i := 0; i < 20000; i += 7 {
			if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*i))); err != nil {
				t.Fatalf("present key %d: %v", 2*i, err)
			}
		}
		theory := m.FilterFPRTheory
		if want := filter.FPRForBitsPerKey(c.wantBits); math.Abs(theory-want) > 0.03*want {
			t.Errorf("%+v: Metrics.FilterFPRTheory %.5f, want about %.5f", c.o, theory, want)
		}
		measured, probes := absentFPR(t, db, 20000, 100_000)
		t.Logf("%v bits/key: measured FP rate %.4f%% over %d probes, theory %.4f%%", c.wantBits, 100*measured, probes, 100*theory)
		if bound := rateBound(theory, probes); math.Abs(measured-theory) > bound {
			t.Errorf("%+v: measured FP rate %.5f, theory %.5f ± %.5f", c.o, measured, theory, bound)
		}
		db.Close()
	}
}

// absentFPR Gets probes absent keys inside the range of putKeys(n) and
// returns the share of filter probes that let them through, and the
// number of filter probes.
func absentFPR(t *testing.T, db *DB, n, probes int) (float64, int) {
	t.Helper()
	before := db.Metrics()
	for i := 0; i < probes; i++ {
		if _, err := db.Get([]byte(fmt.Sprintf("key%07d~%d", 2*(i%n), i))); !errors.Is(err, ErrNotFound) {
			t.Fatalf("absent key: %v", err)
		}
	}
	d := db.Metrics().Sub(before)
	tried := d.FilterNegatives + d.FilterFalsePositives
	return float64(d.FilterFalsePositives) / float64(tried), int(tried)
}

// rateBound is how far a false-positive rate measured over probes absent
// keys may stray from its expected value p before a test fails: five
// standard deviations of the binomial count (a false alarm about once in
// 1.7 million runs), plus 3% of p for what the model leaves out (each
// filter's fill varies around the mean the theory uses).
func rateBound(p float64, probes int) float64 {
	return 5*math.Sqrt(p*(1-p)/float64(probes)) + 0.03*p
}
