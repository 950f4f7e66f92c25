package filter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCuckooExpansion: without expansion a full filter returns ErrFull;
// with it the filter grows by tables e times the last, keeps every key
// (no false negatives), removes from any table, and round-trips.
func TestCuckooExpansion(t *testing.T) {
	const n = 1000
	fixed := must(NewCuckoo(n, 0.01))
	full := 0
	for i := range 3 * n {
		if errors.Is(fixed.Add(keyN('x', i)), ErrFull) {
			full++
		}
	}
	if full == 0 || fixed.Tables() != 1 {
		t.Fatalf("a fixed filter took %d keys into %d tables without ErrFull", 3*n, fixed.Tables())
	}
	for _, e := range []int{1, 2, 4} {
		c := must(NewCuckoo(n, 0.01, WithExpansion(e)))
		first := c.Buckets()
		const keys = 20 * n
		for i := range keys {
			if err := c.Add(keyN('x', i)); err != nil {
				t.Fatalf("expansion %d: key %d: %v", e, i, err)
			}
		}
		if c.Count() != keys || c.Tables() < 2 {
			t.Fatalf("expansion %d: %v", e, c)
		}
		// Table i has first*e^i buckets.
		want, total := first, uint64(0)
		for i, tb := range c.tables {
			if tb.buckets != want {
				t.Fatalf("expansion %d: table %d has %d buckets, want %d", e, i, tb.buckets, want)
			}
			total += want
			want *= uint64(e)
		}
		if c.Buckets() != total {
			t.Fatalf("Buckets %d, tables sum to %d", c.Buckets(), total)
		}
		for i := range keys {
			if !c.MayContain(keyN('x', i)) {
				t.Fatalf("expansion %d: key %d lost", e, i)
			}
		}
		fp := 0
		for i := range 100_000 {
			if c.MayContain(keyN('y', i)) {
				fp++
			}
		}
		rate := float64(fp) / 100_000
		t.Logf("expansion %d: %d tables, %d bytes, FP %.3f%% (estimated %.3f%%)", e, c.Tables(), c.SizeBytes(), 100*rate, 100*c.EstimatedFPR())
		if rate > 2*c.EstimatedFPR()+0.001 {
			t.Errorf("expansion %d: measured FP rate %.4f far above the estimate %.4f", e, rate, c.EstimatedFPR())
		}
		back := new(Cuckoo)
		if err := back.UnmarshalBinary(mustMarshal(t, c)); err != nil {
			t.Fatal(err)
		}
		if back.Tables() != c.Tables() || back.Count() != keys || back.Expansion() != e {
			t.Fatalf("round trip: %v", back)
		}
		// Remove every key: each comes out of some table.
		for i := range keys {
			if err := back.Remove(keyN('x', i)); err != nil {
				t.Fatalf("expansion %d: remove %d: %v", e, i, err)
			}
		}
		if back.Count() != 0 {
			t.Fatalf("after removing every key: count %d", back.Count())
		}
		back.Reset()
		if back.Tables() != 1 || back.Buckets() != first {
			t.Fatalf("Reset kept %d tables", back.Tables())
		}
	}
}

// TestCuckooBucketSize: every bucket size holds the n keys it was sized
// for, stays within its rate, and round-trips; bad sizes are refused.
func TestCuckooBucketSize(t *testing.T) {
	for _, b := range []int{2, 3, 4, 8, 16} {
		for _, n := range []int{1, 10, 64, 5000} {
			for seed := range 20 {
				c := must(NewCuckoo(n, 0.01, WithBucketSize(b)))
				for i := range n {
					if err := c.Add(keyN(byte(seed), i*7+b)); err != nil {
						t.Fatalf("b=%d n=%d seed %d: key %d of %d: %v (%v)", b, n, seed, i, n, err, c)
					}
				}
			}
		}
		c := must(NewCuckoo(10_000, 0.01, WithBucketSize(b)))
		for i := range 10_000 {
			if err := c.Add(keyN('k', i)); err != nil {
				t.Fatal(err)
			}
		}
		fp := 0
		for i := range 100_000 {
			if c.MayContain(keyN('a', i)) {
				fp++
			}
		}
		rate := float64(fp) / 100_000
		t.Logf("b=%d: f=%d, %d bytes for 10k keys (%.1f bits/key), load %.2f, FP %.3f%%", b, c.FingerprintBits(), c.SizeBytes(),
			float64(8*c.SizeBytes())/10_000, c.LoadFactor(), 100*rate)
		if rate > 0.01 || c.BucketSize() != b {
			t.Errorf("b=%d: FP rate %.4f above 1%%, or bucket size %d", b, rate, c.BucketSize())
		}
		back := new(Cuckoo)
		if err := back.UnmarshalBinary(mustMarshal(t, c)); err != nil || back.BucketSize() != b || back.Count() != 10_000 {
			t.Fatalf("b=%d round trip: %v, %v", b, back, err)
		}
	}
	for _, bad := range []CuckooOption{WithBucketSize(0), WithBucketSize(1), WithBucketSize(17), WithBucketSize(-1), WithExpansion(1025)} {
		if _, err := NewCuckoo(100, 0.01, bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("option accepted: %v", err)
		}
	}
}

// TestCuckooGrownFieldsRejected edits kind-5 fields behind a valid
// checksum: the body's checks catch each, at the field's offset.
func TestCuckooGrownFieldsRejected(t *testing.T) {
	var grown codecCase
	for _, c := range codecCases {
		if c.golden[10:12] == "05" {
			grown = c
		}
	}
	const b = headerLen
	t0 := b + 16 // table 0: buckets, count, 2 words
	t1 := t0 + 16 + 16
	for name, edit := range map[string]func([]byte) []byte{
		"bucket size 1 at offset 16":         putU32(b, 1),
		"bucket size 17 at offset 16":        putU32(b, 17),
		"f=3 at offset 20":                   putU32(b+4, 3),
		"expansion 2000 at offset 24":        putU32(b+8, 2000),
		"table count 0 at offset 28":         putU32(b+12, 0),
		"table count 3 (body short)":         putU32(b+12, 3),
		"expansion 0 with 2 tables":          putU32(b+8, 0),
		"table 0 buckets 0 at offset 32":     putU64(t0, 0),
		"table 1 buckets 17 at offset 64":    putU64(t1, 17),
		"table 0 count 3 at offset 40":       putU64(t0+8, 3),
		"table 1 buckets 2^60 at offset 64":  putU64(t1, 1<<60),
		"table 1 words cut":                  dropBytes(t1+16, 8),
		"padding bit set in the last table":  func(d []byte) []byte { d[len(d)-5] |= 0x80; return d },
		"table count 1 (bytes left)":         putU32(b+12, 1),
		"table 0 buckets 2^62 (overflowing)": putU64(t0, 1<<62),
	} {
		d := reseal(edit(mustMarshal(t, grown.build(t))))
		err := new(Cuckoo).UnmarshalBinary(d)
		wantCorruption(t, name, err)
		if i := strings.Index(name, "at offset "); i >= 0 && !strings.Contains(err.Error(), name[i:]) {
			t.Errorf("%s: error %q names another offset", name, err)
		}
	}
}

func ExampleWithExpansion() {
	c, _ := NewCuckoo(100, 0.01, WithExpansion(2))
	for i := range 1000 {
		if err := c.Add(fmt.Appendf(nil, "key%d", i)); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(c.Count(), c.Tables() > 1, c.MayContain([]byte("key999")))
	// Output: 1000 true true
}
