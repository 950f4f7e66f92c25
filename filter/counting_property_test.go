package filter

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// countingOps applies n random Adds and Removes of keys drawn from a small
// universe to c, and returns what each call answered, so two filters given
// the same rng seed can be compared call by call. A small universe makes
// keys repeat until their counters saturate; a small filter makes Removes
// of never-added keys that test positive common. Both are the histories
// that once drove Count below zero (issue 35).
func countingOps(t *testing.T, c *Counting, rng *rand.Rand, n, universe int, addBias float64) []string {
	t.Helper()
	var answers []string
	for range n {
		k := keyN('u', rng.IntN(universe))
		if rng.Float64() < addBias {
			answers = append(answers, map[bool]string{true: "fresh", false: "old"}[c.Add(k)])
		} else {
			err := c.Remove(k)
			answers = append(answers, map[bool]string{true: "removed", false: "absent"}[err == nil])
		}
		if c.Count() < 0 {
			t.Fatalf("Count() = %d after %d operations", c.Count(), len(answers))
		}
	}
	return answers
}

// sameCounting fails unless got answers every question as want does.
func sameCounting(t *testing.T, how string, want, got *Counting, universe int) {
	t.Helper()
	if got.Count() != want.Count() || got.Counters() != want.Counters() || got.NumProbes() != want.NumProbes() ||
		got.Saturated() != want.Saturated() || got.EstimatedFPR() != want.EstimatedFPR() {
		t.Fatalf("%s: got %v (saturated %d), want %v (saturated %d)", how, got, got.Saturated(), want, want.Saturated())
	}
	for i := range universe + 200 {
		if k := keyN('u', i); got.MayContain(k) != want.MayContain(k) {
			t.Fatalf("%s: MayContain(key %d) = %v, want %v", how, i, got.MayContain(k), want.MayContain(k))
		}
	}
	if !bytes.Equal(mustMarshal(t, got), mustMarshal(t, want)) {
		t.Fatalf("%s: the decoded filter encodes differently", how)
	}
}

// TestCountingEncodingsRoundTripAnyHistory: whatever sequence of Adds and
// Removes built a Counting filter, each encoding (binary, stream, JSON,
// chunked dump) decodes to a filter that answers exactly as the original,
// and keeps doing so through the same further operations.
func TestCountingEncodingsRoundTripAnyHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 1))
	rounds := 300
	if trimmed() {
		rounds = 60
	}
	type codec struct {
		name   string
		decode func(t *testing.T, c *Counting) (*Counting, error)
	}
	codecs := []codec{
		{"binary", func(t *testing.T, c *Counting) (*Counting, error) {
			got := new(Counting)
			return got, got.UnmarshalBinary(mustMarshal(t, c))
		}},
		{"stream", func(t *testing.T, c *Counting) (*Counting, error) {
			var buf bytes.Buffer
			if _, err := c.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			got := new(Counting)
			_, err := got.ReadFrom(&buf)
			return got, err
		}},
		{"json", func(t *testing.T, c *Counting) (*Counting, error) {
			js, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got := new(Counting)
			return got, json.Unmarshal(js, got)
		}},
		{"chunks", func(t *testing.T, c *Counting) (*Counting, error) {
			var buf bytes.Buffer
			if _, err := DumpChunks(&buf, c, 1+rng.IntN(40)); err != nil {
				t.Fatal(err)
			}
			got := new(Counting)
			_, err := LoadChunks(&buf, got)
			return got, err
		}},
	}
	for round := range rounds {
		n := 1 + rng.IntN(40)
		universe := 1 + rng.IntN(2*n)
		addBias := 0.2 + 0.6*rng.Float64()
		ops := rng.IntN(600)
		c := must(NewCounting(n, 0.05+0.3*rng.Float64()))
		countingOps(t, c, rng, ops, universe, addBias)
		for _, cd := range codecs {
			got, err := cd.decode(t, c)
			if err != nil {
				t.Fatalf("round %d (%v after %d ops): %s: %v", round, c, ops, cd.name, err)
			}
			sameCounting(t, cd.name, c, got, universe)
			// The decoded filter goes on as the original would: the same
			// calls get the same answers and leave the same state.
			orig := must(NewCounting(n, 0.5))
			if err := orig.UnmarshalBinary(mustMarshal(t, c)); err != nil {
				t.Fatal(err)
			}
			seed := rng.Uint64()
			a := countingOps(t, orig, rand.New(rand.NewPCG(seed, 2)), 200, universe, addBias)
			b := countingOps(t, got, rand.New(rand.NewPCG(seed, 2)), 200, universe, addBias)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("round %d: %s: operation %d after decoding answered %s, the original %s", round, cd.name, i, b[i], a[i])
				}
			}
			sameCounting(t, cd.name+", then 200 more operations", orig, got, universe)
		}
	}
}

// TestCountingRemoveBeyondAdds is issue 35's history: a key added 20 times
// (its counters saturate at 15) and removed 21 times. Count stays at zero,
// the 21st Remove is refused, and the filter encodes and decodes.
func TestCountingRemoveBeyondAdds(t *testing.T) {
	c := must(NewCounting(1000, 0.01))
	key := []byte("hot")
	for range 20 {
		c.Add(key)
	}
	for i := range 21 {
		err := c.Remove(key)
		if i < 20 && err != nil {
			t.Fatalf("Remove #%d: %v", i+1, err)
		}
		if i == 20 && err != ErrAbsent {
			t.Fatalf("Remove #21 of a key added 20 times: %v, want ErrAbsent", err)
		}
	}
	if c.Count() != 0 {
		t.Fatalf("Count() = %d, want 0", c.Count())
	}
	back := new(Counting)
	if err := back.UnmarshalBinary(mustMarshal(t, c)); err != nil {
		t.Fatalf("the filter's own encoding: %v", err)
	}
	// Removing a never-added key that tests positive, then the added one.
	c = must(NewCounting(10, 0.5))
	c.Add(keyN('a', 0))
	for i := 1; c.Count() > 0; i++ {
		if i > 100_000 {
			t.Fatal("no removable false positive found")
		}
		if c.MayContain(keyN('a', i)) {
			// ErrAbsent when two of its probes share a counter at 1.
			if err := c.Remove(keyN('a', i)); err != nil && err != ErrAbsent {
				t.Fatalf("Remove of a false positive: %v", err)
			}
		}
	}
	if err := c.Remove(keyN('a', 0)); err != ErrAbsent || c.Count() != 0 {
		t.Fatalf("Remove on an empty filter: %v, Count() = %d", err, c.Count())
	}
	if err := new(Counting).UnmarshalBinary(mustMarshal(t, c)); err != nil {
		t.Fatalf("the filter's own encoding: %v", err)
	}
}
