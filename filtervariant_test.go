package bloomkv

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/testutil"
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
	s, slot := db.loadReadState()
	defer s.unref(slot)
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

// TestFuseFilterVariant writes tables with binary fuse filters: every
// present key is found, the measured false-positive rate is 2^-8 within
// the Chernoff bounds of the binomial count, the filters cost about
// 9-10 bits per key, and a switch back to the standard variant makes
// Compact rewrite them (the fuse tables stay readable until then).
func TestFuseFilterVariant(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, FilterVariant: filter.VariantFuse, BlockCacheSize: 4 << 20}
	db := mustOpen(t, "/db", o)
	const n = 20000
	putKeys(t, db, n)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*i))); err != nil {
			t.Fatalf("present key %d: %v", 2*i, err)
		}
	}
	m := db.Metrics()
	if m.FilterFPRTheory != filter.FuseFPR {
		t.Fatalf("theory %v, want 2^-8", m.FilterFPRTheory)
	}
	probes := 400_000
	if testing.Short() {
		probes = 100_000
	}
	measured, tried := absentFPR(t, db, n, probes)
	p := filter.FuseFPR
	fps := math.Round(measured * float64(tried))
	lo, hi := testutil.BinomialBounds(tried, p, testutil.FPRAlpha)
	bits := float64(m.FilterBytes*8) / float64(m.FilterKeys)
	t.Logf("fuse variant: measured FP %.4f%% (%.0f in %d probes, bounds [%.0f, %.0f]), theory %.4f%%, %.2f bits/key",
		100*measured, fps, tried, lo, hi, 100*p, bits)
	if fps < lo || fps > hi {
		t.Errorf("fuse: %.0f false positives in %d probes, outside the Chernoff bounds [%.0f, %.0f] of 2^-8", fps, tried, lo, hi)
	}
	if bits < 9 || bits > 10.5 {
		t.Errorf("fuse filters spend %.2f bits per key", bits)
	}
	for _, ps := range tableProps(t, db) {
		for _, p := range ps {
			if filter.Variant(p.FilterVariant) != filter.VariantFuse {
				t.Fatalf("table with filter variant %d", p.FilterVariant)
			}
		}
	}
	// Other bits per key: a fuse filter would not change, so no rewrite.
	db.Close()
	o.BloomBitsPerKey = 16
	db = mustOpen(t, "/db", o)
	before := db.Metrics().Compactions
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if db.Metrics().Compactions != before {
		t.Error("Compact rewrote fuse tables for a bits-per-key change")
	}
	db.Close()

	o.FilterVariant = filter.VariantStandard
	db = mustOpen(t, "/db", o)
	defer db.Close()
	for i := 0; i < n; i += 3 {
		if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*i))); err != nil {
			t.Fatalf("present key %d read through a fuse table under the standard option: %v", 2*i, err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, ps := range tableProps(t, db) {
		for _, p := range ps {
			if filter.Variant(p.FilterVariant) != filter.VariantStandard {
				t.Errorf("table still has filter variant %d after Compact", p.FilterVariant)
			}
		}
	}
}
