package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

func TestScalableGrows(t *testing.T) {
	s := must(NewScalable(1000, 0.01))
	if s.Layers() != 1 || s.Capacity() != 1000 {
		t.Fatalf("new: %v", s)
	}
	added := 0
	for i := 0; i < 100_000; i++ {
		if s.Add(keyN('p', i)) {
			added++
		}
	}
	// Capacities 1000, 2000, ..., 64000 sum to 127,000 >= 100,000 > 63,000.
	if s.Layers() != 7 || s.Capacity() != 127_000 {
		t.Fatalf("after 100k keys: %v", s)
	}
	if s.Added() != added || added < 97_000 { // the rest were false positives
		t.Fatalf("Added=%d, Adds that returned true=%d", s.Added(), added)
	}
	layers := *s.layers.Load()
	for i, l := range layers {
		fpr := layerMargin * 0.01 * math.Pow(0.5, float64(i))
		m, k, _ := bloomShape("test", 1000<<i, fpr)
		if l.capacity != 1000<<i || l.bloom.Bits() != m || l.bloom.NumProbes() != k {
			t.Errorf("layer %d: capacity %d %v, want capacity %d m=%d k=%d", i, l.capacity, l.bloom, 1000<<i, m, k)
		}
		if i < len(layers)-1 && l.count != l.capacity {
			t.Errorf("layer %d: %d keys of %d before the next was added", i, l.count, l.capacity)
		}
	}
	if s.Add(keyN('p', 5)) {
		t.Error("re-adding a key reported it new")
	}
	s.Reset()
	if s.Layers() != 1 || s.Count() != 0 || s.MayContain(keyN('p', 5)) {
		t.Fatalf("after Reset: %v", s)
	}
}

func TestScalableOptions(t *testing.T) {
	s := must(NewScalable(1000, 0.01, WithGrowth(4), WithTightening(0.8)))
	for i := 0; i < 100_000; i++ {
		s.Add(keyN('p', i))
	}
	// 1000 + 4000 + 16000 + 64000 + 256000: five layers.
	if s.Layers() != 5 || math.Abs(s.FPRBound()-0.05) > 1e-12 {
		t.Fatalf("growth 4: %v, bound %v", s, s.FPRBound())
	}
	for _, bad := range [][]ScalableOption{
		{WithGrowth(0.5)}, {WithGrowth(math.NaN())}, {WithGrowth(1e9)},
		{WithTightening(0)}, {WithTightening(1)}, {WithTightening(-1)},
	} {
		if _, err := NewScalable(10, 0.01, bad...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("bad option: err=%v", err)
		}
	}
	if _, err := NewScalable(10, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("fpp=0: err=%v", err)
	}
	// Growth 1 stacks equal layers, each tighter.
	one := must(NewScalable(10, 0.1, WithGrowth(1)))
	for i := 0; i < 1000; i++ {
		one.Add(keyN('p', i))
	}
	if one.Layers() < 50 || one.Capacity() != 10*one.Layers() {
		t.Fatalf("growth 1: %v", one)
	}
}

func TestScalableNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := 0; trial < 30; trial++ {
		s := must(NewScalable(1+rng.IntN(100), 0.001+0.1*rng.Float64(),
			WithGrowth(1+3*rng.Float64()), WithTightening(0.1+0.8*rng.Float64())))
		keys := randomKeys(rng, rng.IntN(3000))
		for _, k := range keys {
			s.Add(k)
		}
		for _, k := range keys {
			if !s.MayContain(k) {
				t.Fatalf("trial %d (%v): false negative", trial, s)
			}
		}
		data, _ := s.MarshalBinary()
		var back Scalable
		if err := back.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !back.MayContain(k) {
				t.Fatalf("trial %d: false negative after a round trip", trial)
			}
		}
		if back.Count() != s.Count() || back.Layers() != s.Layers() || back.FPRBound() != s.FPRBound() {
			t.Fatalf("trial %d: round trip changed %v into %v", trial, s, &back)
		}
		// The decoded filter grows as the original would.
		s.Add([]byte("one more"))
		back.Add([]byte("one more"))
		if a, b := must(s.MarshalBinary()), must(back.MarshalBinary()); string(a) != string(b) {
			t.Fatalf("trial %d: decoded filter evolves differently", trial)
		}
	}
}

// TestScalableFalsePositiveRate grows a filter to 100 times its initial
// capacity (8 layers) and checks the compound rate on a million absent keys
// stays at or below the bound fpp/(1 - r). Its rows of filter/README.md's
// table are kept in testdata/fpr-scalable.md (see golden_test.go).
func TestScalableFalsePositiveRate(t *testing.T) {
	table := newGoldenTable(fprHeader...)
	for _, c := range []struct {
		fpp, r float64
	}{{0.01, 0.5}, {0.01, 0.9}, {0.001, 0.5}} {
		t.Run(fmt.Sprint(c.fpp, "/", c.r), func(t *testing.T) {
			if c.fpp < 0.01 {
				skipIfTrimmed(t)
			}
			s := must(NewScalable(1000, c.fpp, WithTightening(c.r)))
			for i := 0; i < 100_000; i++ {
				s.Add(keyN('p', i))
			}
			probes := absentProbes()
			measured, fps := measureFPR(probes, s.MayContain)
			t.Logf("%v: measured %.5f%%, estimated %.5f%%, bound %.5f%% (%d FPs in %d)",
				s, 100*measured, 100*s.EstimatedFPR(), 100*s.FPRBound(), fps, probes)
			if measured > s.FPRBound() {
				t.Errorf("measured rate %.6f is above the bound %.6f", measured, s.FPRBound())
			}
			if est := s.EstimatedFPR(); math.Abs(measured-est)/est > 0.15 {
				t.Errorf("measured rate %.6f is more than 15%% from EstimatedFPR %.6f", measured, est)
			}
			table.row("Scalable", fmt.Sprintf("1000 → 100k keys, target %v%%, r=%v", 100*c.fpp, c.r), millions(probes),
				pct4(measured)+"%", fmt.Sprintf("≤ %s%% (fpp/(1−r))", strconv.FormatFloat(100*s.FPRBound(), 'g', 4, 64)))
		})
	}
	table.check(t, "fpr-scalable.md", 3)
}

// TestScalableConcurrent adds from many goroutines while others read, as
// layers are added (run it under -race).
func TestScalableConcurrent(t *testing.T) {
	const goroutines, perG = 6, 2000
	s := must(NewScalable(100, 0.01))
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				s.Add(keyN(byte(g), i))
				if !s.MayContain(keyN(byte(g), i)) {
					t.Errorf("goroutine %d: key %d missing after Add", g, i)
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				s.MayContain(keyN(byte(g+50), i))
				if i%500 == 0 {
					_ = s.Layers() + s.Capacity() + s.SizeBytes()
					if _, err := s.MarshalBinary(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	for g := 0; g < goroutines; g++ {
		for i := 0; i < perG; i++ {
			if !s.MayContain(keyN(byte(g), i)) {
				t.Fatalf("goroutine %d key %d lost", g, i)
			}
		}
	}
	if s.Layers() < 6 {
		t.Fatalf("%v: expected growth to several layers", s)
	}
}

// TestScalableLayerCountForged: the newest layer's count (which may pass
// its capacity when no larger layer can be sized) is still bounded: each
// key counted into a layer set at least one of its bits, so a count above
// the layer's set bits is corrupt. A forged MaxInt-ish count once decoded
// to Added() = -9223372036854775799 (issue 35).
func TestScalableLayerCountForged(t *testing.T) {
	s := must(NewScalable(2, 0.1))
	for _, k := range []string{"apple", "banana", "cherry", "date", "elderberry"} {
		s.Add([]byte(k))
	}
	layers := *s.layers.Load()
	if len(layers) != 2 {
		t.Fatalf("%v: want 2 layers", s)
	}
	// Body: 40 fixed bytes, then per layer 16 (capacity, count) and a Bloom
	// body of 16 + m/8.
	at := headerLen + scalableBodyFixed + layerHeader + int(layers[0].bloom.bodyLen()) + 8
	good := mustMarshal(t, s)
	if got := binary.LittleEndian.Uint64(good[at:]); got != uint64(layers[1].count) {
		t.Fatalf("offset %d holds %d, not the newest layer's count %d", at, got, layers[1].count)
	}
	for _, count := range []uint64{math.MaxInt - 5, math.MaxInt, uint64(layers[1].bloom.BitsSet()) + 1, 1 << 63} {
		d := reseal(putU64(at, count)(bytes.Clone(good)))
		back := new(Scalable)
		err := back.UnmarshalBinary(d)
		if err == nil {
			t.Fatalf("count %d accepted: Added() = %d", count, back.Added())
		}
		wantCorruption(t, fmt.Sprintf("newest layer count %d", count), err)
	}
}
