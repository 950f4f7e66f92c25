package bloomkv

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestBlockedFilterVariant writes tables with cache-local filter blocks,
// checks that no present key is ever filtered out and that the measured
// false-positive rate matches the blocked variant's theory, then switches
// back to the standard variant and checks that Compact rewrites the filters.
func TestBlockedFilterVariant(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, FilterVariant: filter.VariantBlocked, BlockCacheSize: 4 << 20}
	db := mustOpen(t, "/db", o)
	const n = 20000
	for i := 0; i < n; i++ {
		db.Put([]byte(fmt.Sprintf("key%07d", 2*i)), []byte("v"))
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*i))); err != nil {
			t.Fatalf("present key %d: %v", 2*i, err)
		}
	}
	fpRate := func() (measured, probes float64) {
		before := db.Metrics()
		for i := 0; i < 200_000; i++ {
			// Absent keys inside the key range.
			if _, err := db.Get([]byte(fmt.Sprintf("key%07d~%d", 2*(i%n), i))); !errors.Is(err, ErrNotFound) {
				t.Fatalf("absent key: %v", err)
			}
		}
		d := db.Metrics().Sub(before)
		probes = float64(d.FilterNegatives + d.FilterFalsePositives)
		return float64(d.FilterFalsePositives) / probes, probes
	}
	measured, probes := fpRate()
	m := db.Metrics()
	theory := filter.BlockedTheoreticalFPR(uint64(m.FilterBytes*8), m.FilterKeys, filter.NumProbes(10))
	sd := math.Sqrt(theory * (1 - theory) / probes)
	t.Logf("blocked variant: measured FP %.4f%%, theory %.4f%% (±%.4f%%)", 100*measured, 100*theory, 100*sd)
	if math.Abs(measured-theory) > 5*sd+0.05*theory {
		t.Fatalf("blocked FP rate %.5f differs from its theory %.5f", measured, theory)
	}
	db.Close()

	o.FilterVariant = filter.VariantStandard
	db = mustOpen(t, "/db", o)
	defer db.Close()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	s := db.loadReadState()
	defer s.unref()
	for _, files := range s.v.Levels {
		for _, f := range files {
			r, release, err := findTable(db.tableCache, f)
			if err != nil {
				t.Fatal(err)
			}
			if v := filter.Variant(r.Properties().FilterVariant); v != filter.VariantStandard {
				t.Errorf("table %d still has filter variant %d after Compact", f.FileNum, v)
			}
			release()
		}
	}
}
