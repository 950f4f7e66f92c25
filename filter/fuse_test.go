package filter

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testutil"
)

func buildFuseBlock(t testing.TB, keys [][]byte) ([]byte, Block) {
	t.Helper()
	bb, err := NewBlockBuilderBits(1, VariantFuse)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		bb.AddKey(k)
	}
	data := bb.Finish()
	blk, err := DecodeBlock(data)
	if err != nil {
		t.Fatal(err)
	}
	return data, blk
}

func seqKeys(prefix byte, n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = keyN(prefix, i)
	}
	return keys
}

func TestFuseNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, n := range []int{0, 1, 2, 3, 5, 10, 100, 1000, 35_000, 100_000} {
		keys := randomKeys(rng, n)
		_, blk := buildFuseBlock(t, keys)
		if blk.Variant() != VariantFuse || blk.NumKeys() != n || blk.NumProbes() != 3 {
			t.Fatalf("n=%d: %v", n, blk)
		}
		for _, k := range keys {
			if !blk.MayContain(k) {
				t.Fatalf("n=%d: false negative for %x", n, k)
			}
		}
		if n == 0 && (blk.MayContain([]byte("x")) || blk.TheoreticalFPR() != 0) {
			t.Fatal("empty fuse filter answers maybe")
		}
		t.Logf("n=%d: %v", n, blk)
	}
}

// TestFuseFalsePositiveRate measures fuse blocks of 35,000 keys (a 2 MiB
// table of small entries) and a million keys (200,000 when trimmed) over
// four million absent keys each (400,000 when trimmed). An absent key's
// three slots XOR to a value independent of its fingerprint, so each probe
// is a false positive with probability exactly 2^-8 and the count is
// binomial: it must lie within the Chernoff bounds (a correct filter fails
// once in a million runs; 2^-7, a 7-bit fingerprint's rate, lies far
// outside). At a million keys the block must spend at most 9.1 bits per
// key.
//
// At full size (not -short, not -race) its table is filter/README.md's,
// kept in testdata/fuse-fpr.md (see golden_test.go).
func TestFuseFalsePositiveRate(t *testing.T) {
	sizes, probes := []int{35_000, 1_000_000}, 4_000_000
	if trimmed() {
		sizes, probes = []int{35_000, 200_000}, 400_000
	}
	if testutil.FPRAlpha != 1e-6 {
		t.Fatalf("FPRAlpha %g: the table below says 10⁻⁶", testutil.FPRAlpha)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| keys | bits/key | measured FP (`TestFuseFalsePositiveRate`, %dM probes) |\n|---|---|---|\n", probes/1_000_000)
	for _, n := range sizes {
		_, blk := buildFuseBlock(t, seqKeys('p', n))
		measured, fps := measureFPR(probes, blk.MayContain)
		p := blk.TheoreticalFPR()
		if p != 1.0/256 {
			t.Fatalf("theory %v, want 1/256", p)
		}
		lo, hi := testutil.BinomialBounds(probes, p, testutil.FPRAlpha)
		bitsPerKey := float64(len(blk.array)+fuseTrailerLen) * 8 / float64(n)
		t.Logf("fuse, %d keys: %.3f bits/key, measured %.4f%% (%d FPs in %d probes; bounds [%.0f, %.0f]), theory %.4f%%",
			n, bitsPerKey, 100*measured, fps, probes, lo, hi, 100*p)
		if float64(fps) < lo || float64(fps) > hi {
			t.Errorf("%d keys: %d false positives in %d probes, outside [%.0f, %.0f] for rate 2^-8", n, fps, probes, lo, hi)
		}
		if n == 1_000_000 && bitsPerKey > 9.1 {
			t.Errorf("fuse at 1M keys: %.3f bits/key; target <= 9.1 at 2^-8 = 0.39%%", bitsPerKey)
		}
		fmt.Fprintf(&table, "| %s | %.3f | %.4f%% (Chernoff bounds at α = 10⁻⁶: %.3f%%–%.3f%%) |\n",
			thousands(uint64(n)), bitsPerKey, 100*measured, 100*lo/float64(probes), 100*hi/float64(probes))
	}
	if !trimmed() {
		checkGolden(t, "fuse-fpr.md", table.String())
	}
}

// TestFuseDuplicateKeys: keys repeated apart (a FilterKey extractor can do
// that) are stored once, and the block still counts what it was given.
func TestFuseDuplicateKeys(t *testing.T) {
	var keys [][]byte
	for i := 0; i < 3000; i++ {
		keys = append(keys, keyN('p', i%1000), keyN('q', i%7))
	}
	_, blk := buildFuseBlock(t, keys)
	if blk.NumKeys() != len(keys) {
		t.Fatalf("NumKeys %d, want %d", blk.NumKeys(), len(keys))
	}
	for _, k := range keys {
		if !blk.MayContain(k) {
			t.Fatalf("false negative for %x", k)
		}
	}
	// The first attempt, sized for 6000 keys, cannot peel the duplicates;
	// the second is sized for the 1007 distinct ones.
	if want := fuseShapeFor(1007); blk.fuse != want {
		t.Errorf("%v: want the shape for 1007 keys, %+v", blk, want)
	}
}

// TestFuseGrowsWhenStuck starts construction from an array too small to
// peel: it must still succeed (by growing) and hold every key.
func TestFuseGrowsWhenStuck(t *testing.T) {
	keys := make([]uint64, 2000)
	for i := range keys {
		keys[i] = Hash(keyN('p', i))
	}
	small := fuseShape{segmentLogLen: 7, segmentCount: 14} // 2048 slots: 1.02 per key
	var b fuseBuilder
	if _, ok := b.try(keys, fuseSeed(0), small); ok {
		t.Fatal("2000 keys peeled in 2048 slots: pick a smaller start")
	}
	fp, seed, shape := buildFuse(keys, small)
	if shape.segmentCount <= small.segmentCount {
		t.Fatalf("did not grow: %+v", shape)
	}
	blk := Block{array: fp, variant: VariantFuse, fuse: shape, fuseSeed: seed, numKeys: 2000}
	for i := range keys {
		if !blk.MayContain(keyN('p', i)) {
			t.Fatalf("false negative for key %d after growing to %+v", i, shape)
		}
	}
	t.Logf("grew from %d to %d segments of 128", small.segmentCount, shape.segmentCount)
}

// TestFuseConstructionRetries measures how often the first seed peels at
// the sizes fuseShapeFor picks: the expected number of attempts must stay
// small at every table size, or building slows.
func TestFuseConstructionRetries(t *testing.T) {
	sizes := []int{10, 100, 1000, 10_000, 35_000, 100_000}
	trials := 40
	if trimmed() {
		trials = 10
	}
	for _, n := range sizes {
		shape := fuseShapeFor(n)
		var b fuseBuilder
		ok := 0
		hs := make([]uint64, n)
		for tr := 0; tr < trials; tr++ {
			for i := range hs {
				hs[i] = Hash(fmt.Appendf(nil, "t%d-%d", tr, i))
			}
			if _, good := b.try(hs, fuseSeed(0), shape); good {
				ok++
			}
		}
		t.Logf("n=%d: %d+2 segments of %d (%.3f slots/key): first seed peeled %d/%d", n,
			shape.segmentCount, shape.segmentLen(), float64(shape.slots())/float64(n), ok, trials)
		if ok < trials/2 {
			t.Errorf("n=%d: first seed peeled only %d of %d times", n, ok, trials)
		}
	}
}

func TestFuseDeterministic(t *testing.T) {
	keys := seqKeys('p', 5000)
	a, _ := buildFuseBlock(t, keys)
	b, _ := buildFuseBlock(t, keys)
	if !bytes.Equal(a, b) {
		t.Fatal("the same keys built different fuse blocks")
	}
}

// TestGoldenFuseBlock pins the fuse layout: a change to hashing, slots,
// fingerprints, sizing or trailer breaks tables written with it, and this
// test.
func TestGoldenFuseBlock(t *testing.T) {
	data, blk := buildFuseBlock(t, [][]byte{[]byte("apple"), []byte("banana"), []byte("cherry")})
	// 3 keys: segments of 2^3 = 8 slots, 1 + 2 of them: 24 fingerprints;
	// then seed (the first: 0x9e3779b97f4a7c15), segmentCount 1,
	// numKeys 3, e = 3, 8-bit fingerprints, variant 3.
	const want = "d400000000190000" + "0000000000000000" + "0000005500000000" +
		"157c4a7fb979379e" + "01000000" + "03000000" + "03" + "08" + "03"
	if got := hex.EncodeToString(data); got != want {
		t.Fatalf("golden fuse block changed:\n got %s\nwant %s", got, want)
	}
	for _, k := range []string{"apple", "banana", "cherry"} {
		if !blk.MayContain([]byte(k)) {
			t.Fatalf("%q missing", k)
		}
	}
	if _, err := BloomFromBlock(blk); err == nil {
		t.Fatal("BloomFromBlock accepted a fuse block")
	}
}

func TestFuseDecodeRejectsDamage(t *testing.T) {
	good, _ := buildFuseBlock(t, seqKeys('p', 300))
	tl := len(good) - fuseTrailerLen // trailer offset
	u32 := func(off int, v uint32) []byte {
		c := bytes.Clone(good)
		binary.LittleEndian.PutUint32(c[off:], v)
		return c
	}
	bad := map[string][]byte{
		"empty":                {},
		"short":                good[len(good)-fuseTrailerLen+1:],
		"fingerprints 16 bits": withByte(good, len(good)-2, 16),
		"segment 2^19":         withByte(good, len(good)-3, 19),
		"segment length":       withByte(good, len(good)-3, good[len(good)-3]+1),
		"segment count":        u32(tl+8, binary.LittleEndian.Uint32(good[tl+8:])+1),
		"no segments":          u32(tl+8, 0),
		"huge segment count":   u32(tl+8, math.MaxUint32),
		"array one short":      append(bytes.Clone(good[:tl-1]), good[tl:]...),
		"array one long":       append(append(bytes.Clone(good[:tl]), 0), good[tl:]...),
		"empty with keys":      append([]byte{}, append(make([]byte, 12), 1, 0, 0, 0, 0, 8, 3)...),
	}
	for name, data := range bad {
		_, err := DecodeBlock(data)
		if !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: err=%v, want ErrCorruption", name, err)
		}
	}
	// Any single byte of the trailer changed: an error, or a block that
	// probes without panicking.
	for i := tl; i < len(good); i++ {
		for _, v := range []byte{0, 1, 0x7f, 0xff, good[i] ^ 0x10} {
			blk, err := DecodeBlock(withByte(good, i, v))
			if err != nil {
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("byte %d = %#x: %v", i, v, err)
				}
				continue
			}
			for j := 0; j < 100; j++ {
				blk.MayContain(keyN('x', j))
			}
		}
	}
	// Every truncation likewise.
	for n := 0; n < len(good); n++ {
		if blk, err := DecodeBlock(good[:n]); err == nil {
			blk.MayContain([]byte("k"))
		} else if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
}

// FuzzDecodeFuseBlock feeds the block decoder arbitrary bytes seeded with
// fuse blocks: an error must wrap ErrCorruption; a block that decodes must
// answer probes without panicking, and one rebuilt from the fuzzer's keys
// must hold them all.
func FuzzDecodeFuseBlock(f *testing.F) {
	for _, n := range []int{0, 1, 3, 40, 500} {
		data, _ := buildFuseBlock(f, seqKeys('p', n))
		f.Add(data, []byte("p"))
	}
	f.Fuzz(func(t *testing.T, data, key []byte) {
		blk, err := DecodeBlock(data)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
		} else {
			_ = blk.MayContain(key)
			_ = blk.TheoreticalFPR()
			_ = blk.String()
		}
		// Keys from the input: the block built over them holds them.
		var keys [][]byte
		for i := 0; i+4 <= len(data) && len(keys) < 64; i += 4 {
			keys = append(keys, data[i:i+4])
		}
		keys = append(keys, key)
		_, built := buildFuseBlock(t, keys)
		for _, k := range keys {
			if !built.MayContain(k) {
				t.Fatalf("false negative for %x", k)
			}
		}
	})
}

// BenchmarkFilterVariants compares the three filter block variants at
// equal memory: the fuse block first, then standard and blocked blooms
// given the bits per key it spent (fractional). For each it reports the
// build time per key (AddHash of every key, then Finish), the probe time
// of absent and present keys, the bytes per key and the measured FP rate
// (over 200k absent keys). -short leaves out 10M keys.
func BenchmarkFilterVariants(b *testing.B) {
	sizes := []int{35_000, 1_000_000, 10_000_000}
	if testing.Short() {
		sizes = sizes[:2] // building 10M-key filters takes a while
	}
	for _, n := range sizes {
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = Hash(keyN('p', i))
		}
		build := func(v Variant, bits float64) []byte {
			bb, err := NewBlockBuilderBits(bits, v)
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range hashes {
				bb.AddHash(h)
			}
			return bb.Finish()
		}
		fuse := build(VariantFuse, 1)
		equal := float64(len(fuse)) * 8 / float64(n)
		for _, v := range []Variant{VariantStandard, VariantBlocked, VariantFuse} {
			data := build(v, equal)
			blk, err := DecodeBlock(data)
			if err != nil {
				b.Fatal(err)
			}
			bytesPerKey := float64(len(data)) / float64(n)
			fp, _ := measureFPR(200_000, blk.MayContain)
			b.Run(fmt.Sprintf("n=%d/%s/build", n, v), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					build(v, equal)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
				b.ReportMetric(bytesPerKey*8, "bits/key")
			})
			absent := benchKeys('a')
			present := make([][]byte, len(absent))
			for i := range present {
				present[i] = keyN('p', (i*7919)%n)
			}
			for _, probe := range []struct {
				what string
				keys [][]byte
			}{{"absent", absent}, {"present", present}} {
				b.Run(fmt.Sprintf("n=%d/%s/%s", n, v, probe.what), func(b *testing.B) {
					keys := probe.keys
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						blk.MayContain(keys[i&(len(keys)-1)])
					}
					b.ReportMetric(100*fp, "fp%")
					b.ReportMetric(bytesPerKey*8, "bits/key")
				})
			}
		}
	}
}
