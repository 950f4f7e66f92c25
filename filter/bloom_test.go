package filter

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func mustBloom(t testing.TB, n int, fpp float64) *Bloom {
	t.Helper()
	b, err := NewBloom(n, fpp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewBloomSizing(t *testing.T) {
	for _, c := range []struct {
		n     int
		fpp   float64
		wantM uint64
		wantK int
	}{
		// The smallest m (whole words) for which some k meets fpp, then
		// k = round(m/n ln 2). The textbook m = -n ln p / ln²2 is a little
		// smaller (9,585,088 and 14,377,600 bits for the first two) but
		// misses the target: 1.004% and 0.1000005%.
		{1_000_000, 0.01, 9_592_960, 7},
		{1_000_000, 0.001, 14_377_664, 10},
		{1000, 0.01, 9600, 7},
		{0, 0.5, 64, 30}, // n=0 sized as 1: 64 bits is the floor
		{10, 1e-12, 576, 30},
	} {
		b := mustBloom(t, c.n, c.fpp)
		if b.Bits() != c.wantM || b.NumProbes() != c.wantK || b.SizeBytes() != int(c.wantM/8) {
			t.Errorf("NewBloom(%d, %v): m=%d k=%d bytes=%d, want m=%d k=%d bytes=%d",
				c.n, c.fpp, b.Bits(), b.NumProbes(), b.SizeBytes(), c.wantM, c.wantK, c.wantM/8)
		}
	}
}

// TestEstimateParametersMeetsTarget checks, over a grid of sizes and
// rates, that the filter meets its target in theory and that one 64-bit
// word less would miss it whatever the probe count: it is the smallest.
func TestEstimateParametersMeetsTarget(t *testing.T) {
	for _, n := range []int{1, 10, 1000, 12_345, 1_000_000} {
		for _, p := range []float64{0.5, 0.2, 0.05, 0.01, 0.0039, 1e-3, 1e-4, 1e-6, 1e-9} {
			m, k := EstimateParameters(n, p)
			keys := uint64(max(n, 1))
			if fpr := TheoreticalFPR(m, keys, k); fpr > p*(1+1e-12) {
				t.Errorf("EstimateParameters(%d, %v) = %d, %d: rate %v above target", n, p, m, k, fpr)
			}
			if m == minBits {
				continue
			}
			for j := 1; j <= MaxProbes; j++ {
				if fpr := TheoreticalFPR(m-64, keys, j); fpr <= p {
					t.Errorf("EstimateParameters(%d, %v) = %d, %d: %d bits and k=%d already give %v", n, p, m, k, m-64, j, fpr)
				}
			}
		}
	}
	for _, p := range []float64{0, 1, -1, math.NaN(), math.Inf(1)} {
		if m, k := EstimateParameters(10, p); m != 0 || k != 0 {
			t.Errorf("EstimateParameters(10, %v) = %d, %d, want 0, 0", p, m, k)
		}
	}
	if m, k := EstimateParameters(math.MaxInt, 1e-9); m != 0 || k != 0 {
		t.Errorf("EstimateParameters(MaxInt, 1e-9) = %d, %d: beyond 2^46 bits", m, k)
	}
}

// TestBitsPerKeyForFPR checks the engine's target-rate form against its
// definition: the rate at the answer meets the target, and a hair less
// misses it.
func TestBitsPerKeyForFPR(t *testing.T) {
	for _, p := range []float64{0.5, 0.1, 0.02, 0.01, 0.0039, 1e-3, 1e-5, 1e-8} {
		b := BitsPerKeyForFPR(p)
		if got := FPRForBitsPerKey(b); got > p*(1+1e-12) {
			t.Errorf("BitsPerKeyForFPR(%v) = %v, whose rate %v is above target", p, b, got)
		}
		if got := FPRForBitsPerKey(b - 1e-6); got <= p {
			t.Errorf("BitsPerKeyForFPR(%v) = %v, but %v bits already give %v", p, b, b-1e-6, got)
		}
	}
	if b := BitsPerKeyForFPR(0.01); math.Abs(b-9.59295) > 1e-4 {
		t.Errorf("BitsPerKeyForFPR(0.01) = %v, want 9.59295 (k=7)", b)
	}
	if BitsPerKeyForFPR(1) != 0 || !math.IsInf(BitsPerKeyForFPR(0), 1) || !math.IsInf(BitsPerKeyForFPR(math.NaN()), 1) {
		t.Error("BitsPerKeyForFPR edge cases")
	}
	if FPRForBitsPerKey(0) != 1 || FPRForBitsPerKey(-3) != 1 {
		t.Error("FPRForBitsPerKey of no filter is not 1")
	}
	// The engine's blocks: a large block at b bits per key has about the
	// asymptotic rate.
	blk := buildBlock(t, 10, 100_000)
	if got, want := blk.TheoreticalFPR(), FPRForBitsPerKey(10); math.Abs(got-want)/want > 0.01 {
		t.Errorf("block theory %v vs FPRForBitsPerKey(10) %v", got, want)
	}
}

func TestNewBloomRejectsBadArguments(t *testing.T) {
	for _, c := range []struct {
		n   int
		fpp float64
	}{{-1, 0.01}, {10, 0}, {10, 1}, {10, -0.5}, {10, math.NaN()}, {10, math.Inf(1)}, {math.MaxInt, 1e-9}} {
		if _, err := NewBloom(c.n, c.fpp); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewBloom(%d, %v): err=%v, want ErrInvalidArgument", c.n, c.fpp, err)
		}
	}
	for _, c := range []struct {
		m uint64
		k int
	}{{0, 3}, {64, 0}, {64, 31}, {1 << 47, 3}} {
		if _, err := NewBloomWithShape(c.m, c.k); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewBloomWithShape(%d, %d): err=%v, want ErrInvalidArgument", c.m, c.k, err)
		}
	}
	if b, err := NewBloomWithShape(65, 3); err != nil || b.Bits() != 128 {
		t.Errorf("NewBloomWithShape(65, 3) = %v, %v; want 128 bits", b, err)
	}
}

// TestBloomNoFalseNegatives is a property test: for random sizes, rates and
// key sets, including filters far over capacity, every added key is found.
func TestBloomNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 100; trial++ {
		n := rng.IntN(1000)
		fpp := math.Pow(10, -1-4*rng.Float64())
		b := mustBloom(t, n, fpp)
		keys := randomKeys(rng, n*(1+rng.IntN(3))) // up to 3x over capacity
		for _, k := range keys {
			b.Add(k)
		}
		for _, k := range keys {
			if !b.MayContain(k) {
				t.Fatalf("trial %d (n=%d fpp=%v, %v): false negative for %x", trial, n, fpp, b, k)
			}
		}
	}
}

func TestBloomAddReportsChange(t *testing.T) {
	b := mustBloom(t, 1000, 0.01)
	if !b.Add([]byte("x")) {
		t.Fatal("first Add of a key into an empty filter reported no change")
	}
	if b.Add([]byte("x")) {
		t.Fatal("second Add of the same key reported a change")
	}
	if b.MayContain([]byte("y")) && b.Add([]byte("y")) {
		t.Fatal("Add reported a change for a key MayContain already held")
	}
	// Add returns true exactly when MayContain was false before it.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range randomKeys(rng, 3000) { // 3x over capacity, so many "false"
		before := b.MayContain(k)
		if changed := b.Add(k); changed == before {
			t.Fatalf("Add(%x)=%v but MayContain before was %v", k, changed, before)
		}
	}
}

// TestBloomFalsePositiveRate measures the rate on a million absent keys and
// checks it against (1 - e^(-kn/m))^k for the filter's own m and k, within
// 10% relative (the bound; at 1% and a million probes the standard
// error is about 1%). Its rows of filter/README.md's table are kept in
// testdata/fpr-bloom.md (see golden_test.go).
func TestBloomFalsePositiveRate(t *testing.T) {
	const n = 100_000
	table := newGoldenTable(fprHeader...)
	for _, fpp := range []float64{0.01, 0.001} {
		t.Run(fmt.Sprint(fpp), func(t *testing.T) {
			if fpp < 0.01 {
				skipIfTrimmed(t)
			}
			b := mustBloom(t, n, fpp)
			for i := 0; i < n; i++ {
				b.Add(keyN('p', i))
			}
			probes := absentProbes()
			if fpp < 0.01 {
				probes *= 4 // keep the expected false positives in the thousands
			}
			measured, fps := measureFPR(probes, b.MayContain)
			theory := TheoreticalFPR(b.Bits(), n, b.NumProbes())
			rel := math.Abs(measured-theory) / theory
			t.Logf("%v: measured %.5f%%, theory %.5f%%, target %v%% (%.1f%% relative, %d FPs in %d)",
				b, 100*measured, 100*theory, 100*fpp, 100*rel, fps, probes)
			if rel > 0.10 {
				t.Errorf("measured rate %.6f is %.1f%% from theory %.6f (> 10%%)", measured, 100*rel, theory)
			}
			if est := b.EstimatedFPR(); math.Abs(est-theory)/theory > 0.05 {
				t.Errorf("EstimatedFPR %.6f is more than 5%% from theory %.6f", est, theory)
			}
			table.row("Bloom", fmt.Sprintf("%dk keys, target %v%%", n/1000, 100*fpp), millions(probes),
				pct4(measured)+"%", pct4(theory)+"% (theory for its m, k)")
		})
	}
	table.check(t, "fpr-bloom.md", 2)
}

func TestBloomApproximateCount(t *testing.T) {
	b := mustBloom(t, 50_000, 0.01)
	if got := b.ApproximateCount(); got != 0 {
		t.Fatalf("empty filter: ApproximateCount=%d", got)
	}
	for _, n := range []int{100, 10_000, 50_000} {
		b.Reset()
		for i := 0; i < n; i++ {
			b.Add(keyN('p', i))
		}
		got := b.ApproximateCount()
		if math.Abs(float64(got-n))/float64(n) > 0.03 {
			t.Errorf("after %d keys: ApproximateCount=%d (more than 3%% off)", n, got)
		}
		// Duplicates do not count.
		for i := 0; i < n; i++ {
			b.Add(keyN('p', i))
		}
		if again := b.ApproximateCount(); again != got {
			t.Errorf("re-adding %d keys moved ApproximateCount %d -> %d", n, got, again)
		}
	}
	full, _ := NewBloomWithShape(64, 1)
	for i := 0; i < 10_000; i++ {
		full.Add(keyN('p', i))
	}
	if full.ApproximateCount() != math.MaxInt || full.EstimatedFPR() != 1 || full.FillRatio() != 1 {
		t.Errorf("saturated filter: count=%d fpr=%v fill=%v", full.ApproximateCount(), full.EstimatedFPR(), full.FillRatio())
	}
}

func TestBloomEstimatedFPRShowsOverCapacity(t *testing.T) {
	b := mustBloom(t, 10_000, 0.01)
	for i := 0; i < 10_000; i++ {
		b.Add(keyN('p', i))
	}
	if est := b.EstimatedFPR(); est > 0.0115 {
		t.Errorf("at capacity: EstimatedFPR=%v, want about 0.01", est)
	}
	for i := 10_000; i < 20_000; i++ {
		b.Add(keyN('p', i))
	}
	if est := b.EstimatedFPR(); est < 0.1 {
		t.Errorf("at twice capacity: EstimatedFPR=%v, want well above the 0.01 target", est)
	}
}

func TestBloomBatchMatchesSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	keys := randomKeys(rng, 5000)
	batch, single := mustBloom(t, 5000, 0.01), mustBloom(t, 5000, 0.01)
	added := batch.AddBatch(keys[:2500])
	wantAdded := 0
	for _, k := range keys[:2500] {
		if single.Add(k) {
			wantAdded++
		}
	}
	if added != wantAdded || !batch.Equal(single) {
		t.Fatalf("AddBatch added %d (want %d); filters equal: %v", added, wantAdded, batch.Equal(single))
	}
	dst := make([]bool, 0, len(keys))
	got := batch.MayContainBatch(keys, dst)
	if len(got) != len(keys) || &got[0] != &dst[:1][0] {
		t.Fatalf("MayContainBatch returned %d results, reused dst: %v", len(got), &got[0] == &dst[:1][0])
	}
	for i, k := range keys {
		if got[i] != single.MayContain(k) {
			t.Fatalf("key %d: batch %v, single %v", i, got[i], single.MayContain(k))
		}
	}
	if allocs := testing.AllocsPerRun(10, func() { batch.MayContainBatch(keys, dst) }); allocs != 0 {
		t.Errorf("MayContainBatch with room in dst allocated %v times", allocs)
	}
}

func TestBloomMerge(t *testing.T) {
	a, b := mustBloom(t, 2000, 0.01), mustBloom(t, 2000, 0.01)
	for i := 0; i < 1000; i++ {
		a.Add(keyN('p', i))
		b.Add(keyN('q', i))
	}
	want := a.Clone()
	for i := 0; i < 1000; i++ {
		want.Add(keyN('q', i))
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if !a.Equal(want) {
		t.Fatal("merged filter differs from one built from both key sets")
	}
	for _, other := range []*Bloom{mustBloom(t, 4000, 0.01), must(NewBloomWithShape(a.Bits(), a.NumProbes()+1))} {
		before := a.Clone()
		if err := a.Merge(other); !errors.Is(err, ErrShapeMismatch) {
			t.Errorf("Merge(%v) into %v: err=%v, want ErrShapeMismatch", other, a, err)
		}
		if !a.Equal(before) {
			t.Error("a failed Merge changed the filter")
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestBloomCloneResetEqual(t *testing.T) {
	a := mustBloom(t, 100, 0.01)
	a.Add([]byte("k"))
	c := a.Clone()
	if !c.Equal(a) || !c.MayContain([]byte("k")) {
		t.Fatal("clone differs")
	}
	c.Add([]byte("other"))
	if c.Equal(a) {
		t.Fatal("adding to a clone changed the original, or Equal missed a difference")
	}
	c.Reset()
	if c.MayContain([]byte("k")) || c.BitsSet() != 0 {
		t.Fatal("Reset left bits set")
	}
	if c.Bits() != a.Bits() || c.NumProbes() != a.NumProbes() {
		t.Fatal("Reset changed the shape")
	}
}

// TestBloomConcurrent runs Adds and MayContains from many goroutines with no
// lock around the filter (run it under -race), then checks every key.
func TestBloomConcurrent(t *testing.T) {
	const goroutines, perG = 8, 2000
	b := mustBloom(t, goroutines*perG, 0.01)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				k := keyN(byte(g), i)
				b.Add(k)
				if !b.MayContain(k) {
					t.Errorf("goroutine %d: key %d missing right after Add", g, i)
					return
				}
				b.MayContain(keyN(byte(g+1), i)) // read others' words while they write
			}
		}()
	}
	// Readers of whole-array statistics and a serializer alongside.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			b.ApproximateCount()
			if _, err := b.MarshalBinary(); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	for g := 0; g < goroutines; g++ {
		for i := 0; i < perG; i++ {
			if !b.MayContain(keyN(byte(g), i)) {
				t.Fatalf("goroutine %d key %d lost", g, i)
			}
		}
	}
	// A lost atomic OR would show as fewer bits than a sequential build.
	seq := mustBloom(t, goroutines*perG, 0.01)
	for g := 0; g < goroutines; g++ {
		for i := 0; i < perG; i++ {
			seq.Add(keyN(byte(g), i))
		}
	}
	if !seq.Equal(b) {
		t.Fatal("concurrent build differs from the sequential one")
	}
}
