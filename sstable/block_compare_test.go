package sstable

import (
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestCompareWithSuccessor checks the order check of validateEntries
// against kv.CompareInternal on keys sharing every possible prefix,
// including prefixes that reach into either key's trailer.
func TestCompareWithSuccessor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randKey := func() []byte {
		k := make([]byte, kv.TrailerLen+rng.IntN(6))
		for i := range k {
			k[i] = byte('a' + rng.IntN(3)) // a small alphabet: long shared prefixes
		}
		return k
	}
	for range 200_000 {
		prev, next := randKey(), randKey()
		shared := 0
		for shared < len(prev) && shared < len(next) && prev[shared] == next[shared] {
			shared++
		}
		shared = rng.IntN(shared + 1) // a writer may share less than it could
		want := kv.CompareInternal(prev, next)
		if got := compareWithSuccessor(prev, shared, next[shared:]); got != want {
			t.Fatalf("prev %x next %x shared %d: got %d, want %d", prev, next, shared, got, want)
		}
	}
}
