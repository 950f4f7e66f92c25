package filter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestCuckooSizing(t *testing.T) {
	for _, c := range []struct {
		fpp   float64
		wantF int
	}{{0.5, 4}, {0.1, 7}, {0.01, 10}, {0.001, 13}, {1e-6, 23}, {2e-9, 32}} {
		cf := must(NewCuckoo(1000, c.fpp))
		if cf.FingerprintBits() != c.wantF {
			t.Errorf("fpp=%v: f=%d, want %d", c.fpp, cf.FingerprintBits(), c.wantF)
		}
		if load := 1000 / float64(cf.Capacity()); load > cuckooSizingLoad {
			t.Errorf("fpp=%v: 1000 keys would fill %.3f of the slots", c.fpp, load)
		}
		if want := int(slotWords(cf.Buckets()*4, uint64(c.wantF)) * 8); cf.SizeBytes() != want {
			t.Errorf("fpp=%v: SizeBytes=%d, want %d", c.fpp, cf.SizeBytes(), want)
		}
	}
	for _, c := range []struct {
		n   int
		fpp float64
	}{{-1, 0.01}, {10, 0}, {10, 1}, {10, 1e-10}} {
		if _, err := NewCuckoo(c.n, c.fpp); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewCuckoo(%d, %v): err=%v", c.n, c.fpp, err)
		}
	}
}

// TestSlotTable checks packed get/set against a plain array for every
// fingerprint width, including slots that straddle two words.
func TestSlotTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for f := uint64(1); f <= 32; f++ {
		const slots = 203
		tab := newSlotTable(slots, f)
		model := make([]uint32, slots)
		for i := 0; i < 4000; i++ {
			s := rng.Uint64N(slots)
			v := uint32(rng.Uint64() & (1<<f - 1))
			if old := tab.swap(s, v); old != model[s] {
				t.Fatalf("f=%d slot %d: swap returned %d, want %d", f, s, old, model[s])
			}
			model[s] = v
		}
		for s := range model {
			if got := tab.get(uint64(s)); got != model[s] {
				t.Fatalf("f=%d slot %d: got %d, want %d", f, s, got, model[s])
			}
		}
		if used := slots * f % 64; used != 0 && tab.words[len(tab.words)-1]>>used != 0 {
			t.Fatalf("f=%d: bits past the last slot were written", f)
		}
	}
}

func TestCuckooAltIsInvolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, buckets := range []uint64{1, 2, 3, 7, 64, 1000, 1 << 20, 277_781} {
		c := newCuckoo(buckets, 12)
		for i := 0; i < 2000; i++ {
			b := rng.Uint64N(buckets)
			fp := uint32(1 + rng.IntN(1<<12-1))
			a := c.alt(b, fp)
			if a >= buckets || c.alt(a, fp) != b {
				t.Fatalf("buckets=%d: alt(%d, %d)=%d, alt of that=%d", buckets, b, fp, a, c.alt(a, fp))
			}
		}
	}
}

// TestCuckooModel runs random Adds and Removes (of added keys only) against
// a multiset model and checks for false negatives and the count.
func TestCuckooModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for trial := 0; trial < 40; trial++ {
		n := 1 + rng.IntN(400)
		c := must(NewCuckoo(n, []float64{0.1, 0.01, 1e-4}[trial%3]))
		pool := randomKeys(rng, n)
		model := map[string]int{}
		total := 0
		for step := 0; step < 4*n; step++ {
			k := pool[rng.IntN(len(pool))]
			if model[string(k)] > 0 && rng.IntN(2) == 0 {
				if err := c.Remove(k); err != nil {
					t.Fatalf("trial %d: Remove of a held key: %v", trial, err)
				}
				model[string(k)]--
				total--
			} else if total < n && model[string(k)] < 2 { // stay within capacity
				if err := c.Add(k); err != nil {
					t.Fatalf("trial %d: Add: %v (%v)", trial, err, c)
				}
				model[string(k)]++
				total++
			}
		}
		for key, m := range model {
			if m > 0 && !c.MayContain([]byte(key)) {
				t.Fatalf("trial %d: false negative for %x (held %d times)", trial, key, m)
			}
		}
		if c.Count() != total {
			t.Fatalf("trial %d: Count=%d, want %d", trial, c.Count(), total)
		}
	}
}

// TestCuckooFullChangesNothing fills filters until Add fails and checks
// the load reached, that the failed Add left the filter byte-for-byte as
// it was, and that every key added before is still there.
func TestCuckooFullChangesNothing(t *testing.T) {
	for _, n := range []int{50, 5000, 100_000} {
		for _, fpp := range []float64{0.01, 0.001} {
			fill := func() (*Cuckoo, int) {
				c := must(NewCuckoo(n, fpp))
				for i := 0; ; i++ {
					if c.Add(keyN('p', i)) != nil {
						return c, i
					}
				}
			}
			c, added := fill()
			// Eviction is deterministic, so a second filter given the same
			// keys reaches the same state; snapshot it just before the
			// failing Add.
			replay := must(NewCuckoo(n, fpp))
			for i := 0; i < added; i++ {
				if err := replay.Add(keyN('p', i)); err != nil {
					t.Fatalf("n=%d: replay failed at %d: %v", n, i, err)
				}
			}
			before, _ := replay.MarshalBinary()
			if err := replay.Add(keyN('p', added)); !errors.Is(err, ErrFull) {
				t.Fatalf("n=%d: err=%v, want ErrFull", n, err)
			}
			if after, _ := replay.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatalf("n=%d: the failed Add changed the filter", n)
			}
			if added < n {
				t.Errorf("n=%d fpp=%v: full after %d keys, fewer than sized for", n, fpp, added)
			}
			minLoad := 0.93
			if n < 1000 {
				minLoad = 0.85
			}
			t.Logf("n=%d fpp=%v: %v full at load %.4f", n, fpp, c, c.LoadFactor())
			if c.LoadFactor() < minLoad {
				t.Errorf("n=%d fpp=%v: full at load %.3f, want >= %.2f", n, fpp, c.LoadFactor(), minLoad)
			}
			for i := 0; i < added; i++ {
				if !c.MayContain(keyN('p', i)) {
					t.Fatalf("n=%d: key %d lost", n, i)
				}
			}
		}
	}
}

// TestCuckooFalsePositiveRate measures a full filter (the worst case) on a
// million absent keys: at or below the target. Its rows of
// filter/README.md's table are kept in testdata/fpr-cuckoo.md (see
// golden_test.go).
func TestCuckooFalsePositiveRate(t *testing.T) {
	const n = 100_000
	table := newGoldenTable(fprHeader...)
	for _, fpp := range []float64{0.01, 0.001} {
		t.Run(fmt.Sprint(fpp), func(t *testing.T) {
			if fpp < 0.01 {
				skipIfTrimmed(t)
			}
			c := must(NewCuckoo(n, fpp))
			for i := 0; c.Add(keyN('p', i)) == nil; i++ {
			}
			probes := absentProbes()
			if fpp < 0.01 {
				probes *= 2
			}
			measured, fps := measureFPR(probes, c.MayContain)
			t.Logf("%v at load %.3f: measured %.5f%%, estimated %.5f%%, target %v%% (%d FPs in %d)",
				c, c.LoadFactor(), 100*measured, 100*c.EstimatedFPR(), 100*fpp, fps, probes)
			if measured > fpp {
				t.Errorf("measured rate %.6f is above the target %v", measured, fpp)
			}
			if est := c.EstimatedFPR(); measured > 1.1*est || measured < 0.9*est {
				t.Errorf("measured rate %.6f is more than 10%% from EstimatedFPR %.6f", measured, est)
			}
			table.row("Cuckoo", fmt.Sprintf("sized for %dk keys, filled (load %.1f%%), target %v%%", n/1000, 100*c.LoadFactor(), 100*fpp),
				millions(probes), pct4(measured)+"%", fmt.Sprintf("≤ %v%% (EstimatedFPR %s%%)", 100*fpp, pct4(c.EstimatedFPR())))
		})
	}
	table.check(t, "fpr-cuckoo.md", 2)
}

func TestCuckooDuplicatesAndRemove(t *testing.T) {
	c := must(NewCuckoo(1000, 0.01))
	k := []byte("dup")
	fp, i1 := c.locate(Hash(k))
	if c.alt(i1, fp) == i1 {
		t.Skip("key has a single bucket")
	}
	for i := 0; i < 2*bucketSlots; i++ {
		if err := c.Add(k); err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
	if err := c.Add(k); !errors.Is(err, ErrFull) {
		t.Fatalf("ninth copy: err=%v, want ErrFull", err)
	}
	for i := 0; i < 2*bucketSlots; i++ {
		if err := c.Remove(k); err != nil {
			t.Fatalf("remove %d: %v", i, err)
		}
	}
	if err := c.Remove(k); !errors.Is(err, ErrAbsent) || c.MayContain(k) || c.Count() != 0 {
		t.Fatalf("after removing every copy: err=%v present=%v count=%d", err, c.MayContain(k), c.Count())
	}
	added, err := c.AddIfAbsent(k)
	again, err2 := c.AddIfAbsent(k)
	if !added || again || err != nil || err2 != nil || c.Count() != 1 {
		t.Fatalf("AddIfAbsent: %v %v, %v %v, count %d", added, err, again, err2, c.Count())
	}
	c.Reset()
	if c.Count() != 0 || c.MayContain(k) {
		t.Fatal("Reset left keys")
	}
}

func TestCuckooConcurrent(t *testing.T) {
	const goroutines, perG = 8, 1000
	c := must(NewCuckoo(goroutines*perG, 0.001))
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				k := keyN(byte(g), i)
				if err := c.Add(k); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 1 {
					if err := c.Remove(keyN(byte(g), i-1)); err != nil {
						t.Error(err)
						return
					}
				}
				c.MayContain(keyN(byte(g+100), i))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5; i++ {
			_ = c.EstimatedFPR()
			if _, err := c.MarshalBinary(); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	if c.Count() != goroutines*perG/2 {
		t.Fatalf("Count=%d, want %d", c.Count(), goroutines*perG/2)
	}
	for g := 0; g < goroutines; g++ {
		for i := 1; i < perG; i += 2 {
			if !c.MayContain(keyN(byte(g), i)) {
				t.Fatalf("goroutine %d key %d lost", g, i)
			}
		}
	}
}
