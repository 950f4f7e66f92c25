package treefilter

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// TestLevelCode checks the slot code (code.go) for
// trees of many shapes: no entry is the empty slot 0, every entry decodes
// to its level and matches its own fingerprint only at its level, every
// entry gives the alternate bucket the same key (the fingerprint's top
// bits), and the code chosen is no worse than the fixed 3-bit one.
func TestLevelCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 28))
	for trial := range 300 {
		var keys [manifest.NumLevels]float64
		for l := range keys {
			if rng.IntN(3) > 0 {
				keys[l] = math.Pow(10, float64(l)*rng.Float64())
			}
		}
		if trial == 0 {
			keys = [manifest.NumLevels]float64{} // an empty tree
		}
		c := ChooseCode(keys)
		var total, cost float64
		for l, n := range keys {
			total += n
			cost += n * float64(int(1)<<c.lens[l])
		}
		if total > 0 && cost > 8*total*(1+1e-9) {
			t.Fatalf("%v: code %v costs %.3f per key, more than a fixed 3-bit level's 8", keys, c.lens, cost/total)
		}
		for fp := 0; fp < 1<<16; fp += 1 + rng.IntN(40) {
			for l := range manifest.NumLevels {
				e := c.entry(uint16(fp), l)
				if e == 0 {
					t.Fatalf("code %v: level %d fingerprint %#x is the empty slot", c.lens, l, fp)
				}
				if d := c.dec[e>>(slotBits-maxCode)]; int(d.level) != l || d.len != c.lens[l] {
					t.Fatalf("code %v: level %d decodes as %+v", c.lens, l, d)
				}
				if c.match(uint64(e), uint16(fp)) != 1<<l {
					t.Fatalf("code %v: level %d fingerprint %#x matches %b", c.lens, l, fp, c.match(uint64(e), uint16(fp)))
				}
				if c.altKey(e) != uint64(fp>>maxCode) {
					t.Fatalf("code %v: level %d fingerprint %#x: alternate key %#x", c.lens, l, fp, c.altKey(e))
				}
			}
		}
	}
}
