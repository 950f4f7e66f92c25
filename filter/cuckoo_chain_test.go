package filter

import (
	"errors"
	"testing"
)

// TestCuckooRepeatedKeyStaysBounded is issue 35's scenario: copies of one
// key used to add a table per 2b copies, each e times larger than the last
// (200 Adds at expansion 2 exhausted 24 GiB; 100,000 at expansion 1 made
// 12,500 tables). Past what its buckets hold, Add of one more copy is
// ErrFull and memory stays put.
func TestCuckooRepeatedKeyStaysBounded(t *testing.T) {
	for _, c := range []struct {
		expansion, adds int
	}{{2, 200}, {1, 100_000}, {1024, 1000}} {
		f := must(NewCuckoo(1000, 0.01, WithExpansion(c.expansion)))
		first := f.SizeBytes()
		key := []byte("the same key")
		stored, full := 0, 0
		for i := range c.adds {
			switch err := f.Add(key); {
			case err == nil:
				stored++
			case errors.Is(err, ErrFull):
				full++
			default:
				t.Fatalf("expansion %d: Add #%d: %v", c.expansion, i+1, err)
			}
			// Fail before today's code runs out of memory or time.
			if f.SizeBytes() > 64*first || f.Tables() > 32 {
				t.Fatalf("expansion %d: after %d Adds of one key: %d tables, %d bytes (the first table: %d)",
					c.expansion, i+1, f.Tables(), f.SizeBytes(), first)
			}
		}
		t.Logf("expansion %d: %d Adds of one key: %d stored, %d ErrFull; %d table(s), %d bytes",
			c.expansion, c.adds, stored, full, f.Tables(), f.SizeBytes())
		if full == 0 || f.Count() != stored || f.Tables() != 1 || f.SizeBytes() != first {
			t.Fatalf("expansion %d: %d ErrFull, Count %d (stored %d), %v", c.expansion, full, f.Count(), stored, f)
		}
		if !f.MayContain(key) {
			t.Fatal("the key went missing")
		}
		for range stored {
			if err := f.Remove(key); err != nil {
				t.Fatalf("Remove: %v", err)
			}
		}
		if f.MayContain(key) {
			t.Fatal("every copy removed, the key still there")
		}
	}
}

// TestCuckooChainCap: however many distinct keys arrive, an expanding
// filter stops at MaxCuckooTables tables and at MaxCuckooGrowth times its
// first table's slots, and then answers ErrFull, keeping every key added
// and still encoding.
func TestCuckooChainCap(t *testing.T) {
	expansions := []int{1, 16, 1024}
	if !trimmed() {
		expansions = append(expansions, 2) // 8 million keys to fill
	}
	for _, e := range expansions {
		f := must(NewCuckoo(100, 0.01, WithExpansion(e)))
		firstSlots := f.Capacity()
		var added int
		for ; ; added++ {
			err := f.Add(keyN('c', added))
			if errors.Is(err, ErrFull) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Tables() > MaxCuckooTables || f.Capacity() > MaxCuckooGrowth*firstSlots {
				t.Fatalf("expansion %d: %d keys made %d tables of %d slots (the first: %d)", e, added+1, f.Tables(), f.Capacity(), firstSlots)
			}
		}
		t.Logf("expansion %d: ErrFull after %d keys in %d tables, %d bytes, load %.3f", e, added, f.Tables(), f.SizeBytes(), f.LoadFactor())
		before := mustMarshal(t, f)
		// ErrFull came at the cap, not before: one more table would break
		// it. (A grown table is spread copies of a first-table-sized one,
		// each filled at random, so the first of them to fill ends the
		// chain at a load of about 0.8.)
		lastSlots := f.tables[len(f.tables)-1].buckets * uint64(f.BucketSize())
		if f.Tables() < MaxCuckooTables && uint64(f.Capacity())+lastSlots*uint64(e) <= uint64(MaxCuckooGrowth*firstSlots) {
			t.Fatalf("expansion %d: ErrFull with %d tables of %d slots, below the cap", e, f.Tables(), f.Capacity())
		}
		if f.Count() != added || f.LoadFactor() < 0.5 {
			t.Fatalf("expansion %d: ErrFull at load %.3f, count %d of %d", e, f.LoadFactor(), f.Count(), added)
		}
		for i := 0; i < added; i += 1 + added/10_000 {
			if !f.MayContain(keyN('c', i)) {
				t.Fatalf("expansion %d: key %d lost", e, i)
			}
		}
		back := new(Cuckoo)
		if err := back.UnmarshalBinary(before); err != nil || back.Tables() != f.Tables() {
			t.Fatalf("expansion %d: round trip: %v, %v", e, back, err)
		}
	}
}
