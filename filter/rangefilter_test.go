package filter

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// sortedRandom returns n distinct sorted keys: random 64-bit integers, or
// with dense clustered ones (runs of consecutive integers), the case
// where blocks hold many keys.
func sortedRandom(rng *rand.Rand, n int, dense bool) []uint64 {
	xs := make([]uint64, 0, n)
	for len(xs) < n {
		if dense {
			base := rng.Uint64()
			for j := 0; j < 50 && len(xs) < n; j++ {
				xs = append(xs, base+uint64(j)*uint64(1+rng.IntN(3)))
			}
			continue
		}
		xs = append(xs, rng.Uint64())
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// holds reports whether sorted xs has a value in [lo, hi].
func holds(xs []uint64, lo, hi uint64) bool {
	i := sort.Search(len(xs), func(i int) bool { return xs[i] >= lo })
	return i < len(xs) && xs[i] <= hi
}

// TestRangeFilterNoFalseNegatives checks every range holding a key, near
// and far, small and large, at several budgets, before and after an
// encoding round trip.
func TestRangeFilterNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dense := range []bool{false, true} {
		for _, bpk := range []float64{2, 3.5, 10, 16, 22} {
			xs := sortedRandom(rng, 2000, dense)
			f, err := NewRangeFilter(xs, bpk, nil)
			if err != nil {
				t.Fatal(err)
			}
			enc, _ := f.MarshalBinary()
			g, err := DecodeRangeFilter(enc)
			if err != nil {
				t.Fatal(err)
			}
			for _, flt := range []*RangeFilter{f, g} {
				for i := 0; i < 20000; i++ {
					x := xs[rng.IntN(len(xs))]
					w := uint64(1) << rng.IntN(40)
					lo := x - min(x, rng.Uint64N(w))
					hi := lo + w
					if hi < lo {
						hi = math.MaxUint64
					}
					if !flt.MayContainRange(lo, hi) {
						t.Fatalf("dense=%v bpk=%v: false negative for [%d, %d] holding %d", dense, bpk, lo, hi, x)
					}
				}
			}
		}
	}
}

// TestRangeFilterKeyInterval checks the byte-key map: every key in [lo, hi)
// maps inside KeyInterval(lo, hi), with and without a prefix.
func TestRangeFilterKeyInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	gen := func(prefix []byte) []byte {
		k := slices.Clone(prefix)
		for n := rng.IntN(11); n > 0; n-- {
			k = append(k, alphabet[rng.IntN(len(alphabet))])
		}
		return k
	}
	for _, prefix := range [][]byte{nil, []byte("p"), []byte("pq\x00")} {
		f := &RangeFilter{prefix: prefix}
		for i := 0; i < 200000; i++ {
			k := gen(prefix)
			if !bytes.HasPrefix(k, prefix) {
				continue
			}
			lo, hi := gen(prefix[:rng.IntN(len(prefix)+1)]), gen(prefix[:rng.IntN(len(prefix)+1)])
			if rng.IntN(4) == 0 {
				lo = nil
			}
			if rng.IntN(4) == 0 {
				hi = nil
			}
			in := (lo == nil || bytes.Compare(k, lo) >= 0) && (hi == nil || bytes.Compare(k, hi) < 0)
			if !in {
				continue
			}
			a, b, ok := f.KeyInterval(lo, hi)
			x := RangeKey(k[len(prefix):])
			if !ok || x < a || x > b {
				t.Fatalf("prefix %q: key %q in [%q, %q) maps to %d outside [%d, %d] (ok=%v)", prefix, k, lo, hi, x, a, b, ok)
			}
		}
	}
}

// TestRangeFilterFPRMatchesTheory measures empty ranges of several widths,
// random and starting just after a key, against 1 - (1 - w/r)^n. At full
// size (not -short, not -race) its table is docs/filter-library.md's, kept
// in testdata/rangefilter-theory.md (see golden_test.go).
func TestRangeFilterFPRMatchesTheory(t *testing.T) {
	n, probes := 100000, 400000
	if trimmed() {
		n, probes = 50000, 200000
	}
	rng := rand.New(rand.NewPCG(5, 6))
	xs := sortedRandom(rng, n, false)
	var table strings.Builder
	table.WriteString("| bits/key | width | random | near | theory |\n|---|---|---|---|---|\n")
	for _, bpk := range []float64{10, 16} {
		f, err := NewRangeFilter(xs, bpk, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []uint64{16, 64} {
			theory := f.TheoreticalFPR(w)
			fmt.Fprintf(&table, "| %g | %d |", bpk, w)
			for _, near := range []bool{false, true} {
				fp, empty := 0, 0
				for empty < probes {
					lo := rng.Uint64()
					if near {
						lo = xs[rng.IntN(len(xs))] + 1
					}
					hi := lo + w - 1
					if hi < lo || holds(xs, lo, hi) {
						continue
					}
					empty++
					if f.MayContainRange(lo, hi) {
						fp++
					}
				}
				got := float64(fp) / float64(empty)
				// 4 standard errors of a binomial count, plus 3%: the bound is
				// approached from below (a range may straddle two blocks).
				slack := 4*math.Sqrt(theory*float64(empty))/float64(empty) + 0.03*theory
				t.Logf("bpk=%v w=%d near=%v: measured %.5f, theory %.5f (%.1f bits/key)", bpk, w, near, got, theory, f.BitsPerKey())
				if math.Abs(got-theory) > slack {
					t.Errorf("bpk=%v w=%d near=%v: measured FPR %.5f, theory %.5f (slack %.5f)", bpk, w, near, got, theory, slack)
				}
				fmt.Fprintf(&table, " %.5f |", got)
			}
			fmt.Fprintf(&table, " %.5f |\n", theory)
		}
		if got := f.BitsPerKey(); got > bpk+0.05 {
			t.Errorf("bpk=%v: spends %.3f bits per key", bpk, got)
		}
	}
	if !trimmed() {
		checkGolden(t, "rangefilter-theory.md", table.String())
	}
}

func TestRangeFilterEmptyAndTiny(t *testing.T) {
	f, err := NewRangeFilter(nil, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.MayContainRange(0, math.MaxUint64) || f.MayContainKeys(nil, nil) {
		t.Fatal("empty filter answered maybe")
	}
	enc, _ := f.MarshalBinary()
	if _, err := DecodeRangeFilter(enc); err != nil {
		t.Fatal(err)
	}
	f, _ = NewRangeFilter([]uint64{math.MaxUint64}, 2, nil)
	if !f.MayContainRange(math.MaxUint64, math.MaxUint64) || !f.MayContainKeys([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"), nil) {
		t.Fatal("false negative at the top of the universe")
	}
	for _, bad := range []float64{1.9, 49, math.NaN(), math.Inf(1)} {
		if _, err := NewRangeFilter(nil, bad, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("bits per key %v: err %v", bad, err)
		}
	}
}

// TestRangeFilterGoldenEncoding pins the worked example of
// rangefilter_codec.go.
func TestRangeFilterGoldenEncoding(t *testing.T) {
	f, err := NewRangeFilter([]uint64{1000, 5, 1, 5}, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := f.MarshalBinary()
	got := hex.EncodeToString(enc)
	if binary.LittleEndian.Uint64(enc[32:]) != rangeSeed(3, 12) || enc[40] != 2 || enc[41] != 2 {
		t.Fatalf("seed or shape bytes: %x", enc[32:48])
	}
	if got != goldenRange {
		t.Fatalf("encoding changed:\n got %s\nwant %s", got, goldenRange)
	}
	for _, x := range []uint64{1, 5, 1000} {
		if !f.MayContainRange(x, x) {
			t.Fatalf("false negative for %d", x)
		}
	}
}

const goldenRange = "424b5646010600003000000000000000" + // "BKVF", v1, range, body 48 bytes
	"03000000000000000c00000000000000" + // n = 3, r = 12
	"ce349f70703898d40202000000000000" + // seed, logL = 2, lowBits = 2, p = 0
	"10000000000000001900000000000000" + // low word, high word
	"cf5fa009" // CRC-32C

// TestRangeFilterDecodeRejects damages a valid encoding in every byte and
// checks that each damage is an error wrapping ErrCorruption.
func TestRangeFilterDecodeRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	f, _ := NewRangeFilter(sortedRandom(rng, 100, false), 12, []byte("pre"))
	good, _ := f.MarshalBinary()
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 0x40
		if _, err := DecodeRangeFilter(bad); !errors.Is(err, ErrCorruption) {
			t.Fatalf("byte %d flipped: err %v", i, err)
		}
		// With the checksum made right, the body checks must catch it
		// (or the result must be another valid filter).
		if g, err := DecodeRangeFilter(reseal(bad)); err == nil {
			if again, _ := g.MarshalBinary(); !bytes.Equal(again, reseal(bad)) {
				t.Fatalf("byte %d: accepted input re-encodes differently", i)
			}
		} else if !errors.Is(err, ErrCorruption) {
			t.Fatalf("byte %d flipped, resealed: err %v", i, err)
		}
	}
	if _, err := DecodeRangeFilter(good[:len(good)-1]); !errors.Is(err, ErrCorruption) {
		t.Fatal("truncated encoding accepted")
	}
}

// FuzzUnmarshalRangeFilter: any bytes either decode to a filter that
// re-encodes to exactly them and answers queries without panicking, or
// fail with an error wrapping ErrCorruption.
func FuzzUnmarshalRangeFilter(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 3, 100} {
		flt, _ := NewRangeFilter(sortedRandom(rng, n, n == 100), 2+float64(n%13), []byte("ab")[:n%3])
		enc, _ := flt.MarshalBinary()
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(data []byte) {
			g, err := DecodeRangeFilter(data)
			if err != nil {
				if !errors.Is(err, ErrCorruption) {
					t.Fatalf("error does not wrap ErrCorruption: %v", err)
				}
				return
			}
			if again, _ := g.MarshalBinary(); !bytes.Equal(again, data) {
				t.Fatalf("accepted input re-encodes differently")
			}
			for i := 0; i < 8; i++ {
				lo := binary.LittleEndian.Uint64(append(slices.Clone(data), make([]byte, 8)...)[i:])
				g.MayContainRange(lo, lo+uint64(i)*1000)
				g.MayContainKeys(data[:i], nil)
			}
		}
		check(data)
		if len(data) >= headerLen+checksumLen {
			check(reseal(slices.Clone(data)))
		}
	})
}

// BenchmarkRangeFilterMayContainRange: one empty-range probe of a filter
// of a million keys at 16 bits per key (what a bounded seek pays per
// table before it reads anything).
func BenchmarkRangeFilterMayContainRange(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	xs := sortedRandom(rng, 1_000_000, false)
	f, _ := NewRangeFilter(xs, 16, nil)
	qs := make([]uint64, 1<<16)
	for i := range qs {
		qs[i] = rng.Uint64()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[i&(len(qs)-1)]
		f.MayContainRange(q, q+63)
	}
}

// TestRangeFilterBuilderStripPrefix: an adaptive builder strips the
// user's prefix (not more: the integers' high zero bytes would leave too
// few bytes after them); every range holding a key says maybe.
func TestRangeFilterBuilderStripPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	b, err := NewRangeFilterBuilder(16, true)
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for i := 0; i < 3000; i++ {
		keys = append(keys, binary.BigEndian.AppendUint64([]byte("user:42/"), uint64(i)*1000+uint64(rng.IntN(10))))
	}
	for _, k := range keys {
		b.AddKey(k)
	}
	f, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Prefix()) != "user:42/" {
		t.Fatalf("prefix %q", f.Prefix())
	}
	neg := 0
	for i := 0; i < 20000; i++ {
		k := keys[rng.IntN(len(keys))]
		lo := slices.Clone(k)
		lo[len(lo)-1] -= byte(rng.IntN(int(lo[len(lo)-1]) + 1))
		hi := append(slices.Clone(k), 0)
		if !f.MayContainKeys(lo, hi) {
			t.Fatalf("false negative: [%x, %x) holds %x", lo, hi, k)
		}
		// Just after a key: empty unless the next key is within 64.
		x := binary.BigEndian.Uint64(k[8:]) + 1
		elo := binary.BigEndian.AppendUint64([]byte("user:42/"), x)
		ehi := binary.BigEndian.AppendUint64([]byte("user:42/"), x+64)
		if !f.MayContainKeys(elo, ehi) {
			neg++
		}
	}
	if neg < 19000 {
		t.Fatalf("only %d of 20000 near-empty ranges ruled out", neg)
	}
	if f.MayContainKeys([]byte("user:43"), nil) || f.MayContainKeys(nil, []byte("user:41")) {
		t.Fatal("ranges outside the prefix may match")
	}
}
