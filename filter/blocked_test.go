package filter

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func buildVariantBlock(t testing.TB, v Variant, bitsPerKey, n int) Block {
	t.Helper()
	bb, err := NewBlockBuilderVariant(bitsPerKey, v)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		bb.AddKey(keyN('p', i))
	}
	blk, err := DecodeBlock(bb.Finish())
	if err != nil {
		t.Fatal(err)
	}
	return blk
}

func TestBlockedNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, bpk := range []int{1, 4, 10, 20} {
		for _, n := range []int{0, 1, 50, 3000} {
			keys := randomKeys(rng, n)
			bb, _ := NewBlockBuilderVariant(bpk, VariantBlocked)
			for _, k := range keys {
				bb.AddKey(k)
			}
			blk, err := DecodeBlock(bb.Finish())
			if err != nil {
				t.Fatal(err)
			}
			if blk.Variant() != VariantBlocked || blk.Bits()%512 != 0 || blk.NumKeys() != n {
				t.Fatalf("bpk=%d n=%d: %v", bpk, n, blk)
			}
			for _, k := range keys {
				if !blk.MayContain(k) {
					t.Fatalf("bpk=%d n=%d: false negative", bpk, n)
				}
			}
		}
	}
	if _, err := NewBlockBuilderVariant(10, 4); err == nil {
		t.Fatal("variant 4 accepted")
	}
}

// TestBlockedFalsePositiveRate measures both variants at equal bits per
// key: the blocked one against its own theory (a Poisson mixture of
// per-block rates), and reports what blocking costs.
func TestBlockedFalsePositiveRate(t *testing.T) {
	const n = 100_000
	for _, bpk := range []int{8, 10, 16} {
		t.Run(fmt.Sprint("bits=", bpk), func(t *testing.T) {
			if bpk >= 16 {
				skipIfTrimmed(t)
			}
			std := buildVariantBlock(t, VariantStandard, bpk, n)
			blk := buildVariantBlock(t, VariantBlocked, bpk, n)
			probes := absentProbes()
			if bpk >= 16 {
				probes *= 4
			}
			stdFP, _ := measureFPR(probes, std.MayContain)
			blkFP, fps := measureFPR(probes, blk.MayContain)
			theory := blk.TheoreticalFPR()
			rel := math.Abs(blkFP-theory) / theory
			t.Logf("bits/key=%d k=%d: standard %.4f%% (theory %.4f%%), blocked %.4f%% (theory %.4f%%, %.1f%% relative, %d FPs): %.2fx",
				bpk, blk.NumProbes(), 100*stdFP, 100*std.TheoreticalFPR(), 100*blkFP, 100*theory, 100*rel, fps, blkFP/stdFP)
			if rel > 0.10 {
				t.Errorf("blocked rate %.6f is %.1f%% from its theory %.6f", blkFP, 100*rel, theory)
			}
			if blkFP < stdFP {
				t.Errorf("blocked rate %.6f below standard %.6f: blocking should cost accuracy", blkFP, stdFP)
			}
		})
	}
}

// TestGoldenBlockedBlock pins the blocked layout: a change to it breaks
// tables written with it, and this test.
func TestGoldenBlockedBlock(t *testing.T) {
	bb, _ := NewBlockBuilderVariant(10, VariantBlocked)
	for _, k := range []string{"apple", "banana", "cherry"} {
		bb.AddKey([]byte(k))
	}
	data := bb.Finish()
	// One 512-bit block (the minimum), then numKeys=3, k=7, variant=2.
	const want = "00000000000000040100140000000000" + "00000050018000000020000010000000" +
		"0000210000000000000000000c000000" + "80000000480000008400000000000108" +
		"03000000" + "07" + "02"
	if got := hex.EncodeToString(data); got != want {
		t.Fatalf("golden blocked block changed:\n got %s\nwant %s", got, want)
	}
	blk, err := DecodeBlock(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"apple", "banana", "cherry"} {
		if !blk.MayContain([]byte(k)) {
			t.Fatalf("%q missing", k)
		}
	}
	// A blocked array must be whole 64-byte blocks.
	ragged := append(append([]byte{}, data[:56]...), data[len(data)-blockTrailerLen:]...)
	if _, err := DecodeBlock(ragged); err == nil {
		t.Fatal("blocked block of 56 bytes accepted")
	}
	if _, err := BloomFromBlock(blk); err == nil {
		t.Fatal("BloomFromBlock accepted a blocked block")
	}
}

// BenchmarkBlockVariants compares probing the two variants at 10 bits per
// key, on a filter that fits in L2 and on ones that do not, reporting the
// measured false-positive rate beside the time.
func BenchmarkBlockVariants(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 10_000_000} {
		for _, v := range []Variant{VariantStandard, VariantBlocked} {
			blk := buildVariantBlock(b, v, 10, n)
			fp, _ := measureFPR(200_000, blk.MayContain)
			absent := benchKeys('a')
			present := make([][]byte, len(absent))
			for i := range present {
				present[i] = keyN('p', (i*7919)%n) // spread over the whole filter
			}
			name := map[Variant]string{VariantStandard: "standard", VariantBlocked: "blocked"}[v]
			for _, probe := range []struct {
				what string
				keys [][]byte
			}{{"absent", absent}, {"present", present}} {
				b.Run(fmt.Sprintf("n=%d/%s/%s", n, name, probe.what), func(b *testing.B) {
					keys := probe.keys
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						blk.MayContain(keys[i&(len(keys)-1)])
					}
					b.ReportMetric(100*fp, "fp%")
				})
			}
		}
	}
}

// FuzzDecodeBlockedBlock is FuzzDecodeBlock seeded with blocked blocks: a
// block that decodes must answer probes without panicking, and one built
// from keys must hold them.
func FuzzDecodeBlockedBlock(f *testing.F) {
	for _, n := range []int{1, 20, 200} {
		bb, _ := NewBlockBuilderVariant(10, VariantBlocked)
		for i := 0; i < n; i++ {
			bb.AddKey(keyN('p', i))
		}
		f.Add(bb.Finish(), []byte("x"))
	}
	f.Fuzz(func(t *testing.T, data, key []byte) {
		blk, err := DecodeBlock(data)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		_ = blk.MayContain(key)
		_ = blk.TheoreticalFPR()
		_ = blk.String()
	})
}

func TestBlockedTheoryBounded(t *testing.T) {
	for _, c := range []struct {
		m, n uint64
		k    int
		want float64
	}{
		{512, 0, 7, 0},
		{0, 10, 7, 1},
		{512, math.MaxUint32, 7, 1},    // claims billions of keys in one block
		{512 * 1000, 1000 * 51, 7, -1}, // about 10 bits per key: near the standard rate
	} {
		got := BlockedTheoreticalFPR(c.m, c.n, c.k)
		if c.want >= 0 && got != c.want || got < 0 || got > 1 {
			t.Errorf("BlockedTheoreticalFPR(%d, %d, %d) = %v, want %v", c.m, c.n, c.k, got, c.want)
		}
	}
	std := TheoreticalFPR(512*1000, 1000*51, 7)
	if b := BlockedTheoreticalFPR(512*1000, 1000*51, 7); b < std || b > 1.5*std {
		t.Errorf("blocked theory %v vs standard %v at 10 bits/key", b, std)
	}
}
