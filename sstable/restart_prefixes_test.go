package sstable

import (
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestRestartPrefixesSearchAgrees checks the prefix-accelerated restart
// search against the plain binary search over whole keys, on blocks whose
// keys share prefixes of every length (so that the common prefix, the
// eight packed bytes after it and ties among them all matter), over an
// alphabet with 0x00 and 0xff (zero padding must not reorder "ab" and
// "ab\x00"), with targets inside, below, above and shorter than the keys.
func TestRestartPrefixesSearchAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := "ab\x00\xff"
	randKey := func(n int) []byte {
		k := make([]byte, n)
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	searches, accelerated := 0, 0
	for round := 0; round < 400; round++ {
		common := randKey(rng.IntN(12))
		es := randomEntries(rng, 1+rng.IntN(200), 3)
		for i := range es {
			es[i].key = append(append([]byte(nil), common...), es[i].key...)
		}
		ri := []int{1, 1, 2, 16}[rng.IntN(4)]
		b, err := decodeBlock(buildBlock(es, ri), testLoc)
		if err != nil {
			t.Fatal(err)
		}
		plain := &block{data: b.data, restartsOff: b.restartsOff, numRestarts: b.numRestarts, numEntries: b.numEntries}
		b.buildRestartPrefixes()
		if b.prefixes == nil {
			t.Fatal("no prefixes built")
		}
		if len(b.prefixes.common) < len(common) {
			t.Fatalf("common prefix %q shorter than the one every key was given (%q)", b.prefixes.common, common)
		}
		for q := 0; q < 200; q++ {
			var uk []byte
			switch rng.IntN(4) {
			case 0: // an existing user key
				uk = kv.UserKey(es[rng.IntN(len(es))].key)
			case 1: // the common prefix, cut anywhere, plus noise
				uk = append(append([]byte(nil), b.prefixes.common[:rng.IntN(len(b.prefixes.common)+1)]...), randKey(rng.IntN(3))...)
			case 2: // anything
				uk = randKey(rng.IntN(20))
			default: // an existing key with its tail changed
				k := kv.UserKey(es[rng.IntN(len(es))].key)
				uk = append(append([]byte(nil), k[:rng.IntN(len(k)+1)]...), randKey(rng.IntN(10))...)
			}
			seq := []uint64{kv.MaxSeq, 0, rng.Uint64N(1000)}[rng.IntN(3)]
			target := kv.AppendInternalKey(nil, uk, seq, kv.KindSeek)
			got, want := b.searchRestarts(target), plain.searchRestarts(target)
			if got != want {
				t.Fatalf("round %d, target %s: accelerated search gives restart %d, plain %d (common %q, %d restarts)",
					round, kv.FormatInternalKey(target), got, want, b.prefixes.common, b.numRestarts)
			}
			searches++
			if got > 0 && got < b.numRestarts {
				accelerated++
			}
		}
	}
	t.Logf("%d searches agree, %d landing inside the block", searches, accelerated)
}
