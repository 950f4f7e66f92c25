package filter

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestCountingShapeMatchesBloom(t *testing.T) {
	for _, c := range []struct {
		n   int
		fpp float64
	}{{1_000_000, 0.01}, {1000, 0.001}, {0, 0.3}} {
		cf := must(NewCounting(c.n, c.fpp))
		b := must(NewBloom(c.n, c.fpp))
		if cf.Counters() != b.Bits() || cf.NumProbes() != b.NumProbes() || cf.SizeBytes() != 4*b.SizeBytes() {
			t.Errorf("n=%d fpp=%v: counting %v, bloom %v", c.n, c.fpp, cf, b)
		}
	}
	if _, err := NewCounting(-1, 0.01); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("n=-1: err=%v", err)
	}
	if _, err := NewCounting(10, 1.5); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("fpp=1.5: err=%v", err)
	}
}

// TestCountingModel runs random Adds and Removes against a multiset model,
// with filters small enough for counters to saturate, and checks after
// every step that each key the model holds is reported present.
func TestCountingModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 40; trial++ {
		n := 1 + rng.IntN(300)
		c := must(NewCounting(n, 0.05))
		pool := randomKeys(rng, 2*n)
		model := map[string]int{}
		count := 0
		for step := 0; step < 3*n; step++ {
			k := pool[rng.IntN(len(pool))]
			if model[string(k)] > 0 && rng.IntN(3) == 0 {
				if err := c.Remove(k); err != nil {
					t.Fatalf("trial %d: Remove of a held key: %v", trial, err)
				}
				model[string(k)]--
				count--
			} else {
				c.Add(k)
				model[string(k)]++
				count++
			}
			if step%17 == 0 || step == 3*n-1 {
				for key, m := range model {
					if m > 0 && !c.MayContain([]byte(key)) {
						t.Fatalf("trial %d step %d: false negative for %x (held %d times)", trial, step, key, m)
					}
				}
			}
		}
		if c.Count() != count {
			t.Fatalf("trial %d: Count=%d, want %d", trial, c.Count(), count)
		}
	}
}

// TestCountingRemoveIsExactInverse: removing every added key (no counter
// saturated) must return every counter to zero, even where one key's
// probes share a counter.
func TestCountingRemoveIsExactInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	shared := 0
	for trial := 0; trial < 50; trial++ {
		c := must(NewCounting(5, 0.01)) // 64 counters, k=30: probes often share
		keys := randomKeys(rng, 4)
		for _, k := range keys {
			c.Add(k)
			shared += sharedProbes(c, Hash(k))
		}
		if c.Saturated() > 0 {
			continue
		}
		for _, k := range keys {
			if err := c.Remove(k); err != nil {
				t.Fatal(err)
			}
		}
		for i, w := range c.counters {
			if w != 0 {
				t.Fatalf("trial %d: counter word %d = %#x after removing every key", trial, i, w)
			}
		}
	}
	if shared == 0 {
		t.Fatal("no key had probes sharing a counter: the test did not test that")
	}
}

// sharedProbes counts how many of h's probes repeat an earlier probe's counter.
func sharedProbes(c *Counting, h uint64) int {
	seen := map[uint64]bool{}
	dup := 0
	h1, h2 := probeStep(h)
	for i := 0; i < c.k; i++ {
		p := reduce(h1, c.m)
		if seen[p] {
			dup++
		}
		seen[p] = true
		h1 += h2
	}
	return dup
}

// TestCountingRemoveAbsentChangesNothing removes keys that were never
// added, including ones whose first counters are non-zero so that Remove
// must undo the decrements it made before it met a zero.
func TestCountingRemoveAbsentChangesNothing(t *testing.T) {
	c := must(NewCounting(200, 0.05))
	for i := 0; i < 200; i++ {
		c.Add(keyN('p', i))
	}
	undone := 0
	for i := 0; i < 5000; i++ {
		k := keyN('a', i)
		if c.MayContain(k) {
			continue
		}
		h1, _ := probeStep(Hash(k))
		if c.get(reduce(h1, c.m)) != 0 {
			undone++
		}
		before, _ := c.MarshalBinary()
		if err := c.Remove(k); !errors.Is(err, ErrAbsent) {
			t.Fatalf("Remove of absent key %d: err=%v", i, err)
		}
		if after, _ := c.MarshalBinary(); !bytes.Equal(before, after) {
			t.Fatalf("Remove of absent key %d changed the filter", i)
		}
	}
	if undone < 100 {
		t.Fatalf("only %d removals had to undo decrements", undone)
	}
	if c.Count() != 200 {
		t.Fatalf("Count=%d after failed removals", c.Count())
	}
}

func TestCountingSaturation(t *testing.T) {
	c := must(NewCounting(1000, 0.01))
	other := []byte("neighbour")
	c.Add(other)
	hot := []byte("hot key")
	for i := 0; i < 40; i++ {
		if fresh := c.Add(hot); fresh != (i == 0) {
			t.Fatalf("Add #%d reported fresh=%v", i, fresh)
		}
	}
	if c.Saturated() < c.NumProbes()-sharedProbes(c, Hash(hot)) {
		t.Fatalf("Saturated=%d after 40 Adds of one key with k=%d", c.Saturated(), c.NumProbes())
	}
	// Remove more times than the counters can show: saturated counters stay,
	// so the key (and anyone sharing them) is never lost.
	for i := 0; i < 40; i++ {
		if err := c.Remove(hot); err != nil {
			t.Fatalf("Remove #%d: %v", i, err)
		}
	}
	if !c.MayContain(hot) || !c.MayContain(other) {
		t.Fatal("a saturated counter was decremented")
	}
	if c.Count() != 1 {
		t.Fatalf("Count=%d, want 1", c.Count())
	}
}

// TestCountingFalsePositiveRate: after n keys, and a tenth as many more
// added and removed again, the rate is the theory's for the filter's own
// m and k, within 10% relative. Its rows of filter/README.md's table are
// kept in testdata/fpr-counting.md (see golden_test.go).
func TestCountingFalsePositiveRate(t *testing.T) {
	const n = 100_000
	table := newGoldenTable(fprHeader...)
	for _, fpp := range []float64{0.01, 0.001} {
		t.Run(fmt.Sprint(fpp), func(t *testing.T) {
			if fpp < 0.01 {
				skipIfTrimmed(t)
			}
			c := must(NewCounting(n, fpp))
			for i := 0; i < n; i++ {
				c.Add(keyN('p', i))
			}
			// Removals leave the rate where n keys put it.
			for i := n; i < n+n/10; i++ {
				c.Add(keyN('p', i))
			}
			for i := n; i < n+n/10; i++ {
				if err := c.Remove(keyN('p', i)); err != nil {
					t.Fatal(err)
				}
			}
			probes := absentProbes()
			if fpp < 0.01 {
				probes *= 2
			}
			measured, fps := measureFPR(probes, c.MayContain)
			theory := TheoreticalFPR(c.Counters(), n, c.NumProbes())
			rel := math.Abs(measured-theory) / theory
			t.Logf("%v: measured %.5f%%, theory %.5f%% (%.1f%% relative, %d FPs in %d), estimated %.5f%%",
				c, 100*measured, 100*theory, 100*rel, fps, probes, 100*c.EstimatedFPR())
			if rel > 0.10 {
				t.Errorf("measured rate %.6f is %.1f%% from theory %.6f (> 10%%)", measured, 100*rel, theory)
			}
			table.row("Counting", fmt.Sprintf("%dk keys, target %v%%, after %dk more added and removed", n/1000, 100*fpp, n/10/1000),
				millions(probes), pct4(measured)+"%", pct4(theory)+"% (theory for its m, k)")
		})
	}
	table.check(t, "fpr-counting.md", 2)
}

func TestCountingConcurrent(t *testing.T) {
	const goroutines, perG = 8, 1000
	c := must(NewCounting(goroutines*perG, 0.01))
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				k := keyN(byte(g), i)
				c.Add(k)
				c.Add(k)
				if err := c.Remove(k); err != nil || !c.MayContain(k) {
					t.Errorf("goroutine %d key %d: remove err %v, present %v", g, i, err, c.MayContain(k))
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5; i++ {
			c.EstimatedFPR()
			if _, err := c.MarshalBinary(); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	if c.Count() != goroutines*perG {
		t.Fatalf("Count=%d, want %d", c.Count(), goroutines*perG)
	}
	c.Reset()
	if c.Count() != 0 || c.MayContain(keyN(0, 0)) {
		t.Fatal("Reset left keys")
	}
}
