package treefilter

// The level code of the filter's slots (filter.go). After Chucky
// (Dayan and Twitto, SIGMOD 2021), which Huffman-codes run identifiers
// into its fingerprints: a slot is 16 bits, a prefix-free codeword naming
// the entry's level (its tag) followed by as many fingerprint bits as are
// left. A level holding most keys gets a short codeword and so long
// fingerprints. An absent key matches an entry of level l with
// probability 2^-(16 - len(l)), so the false-positive rate is
//
//	1 - (1 - sum_l load_l 2^(len(l) - 16))^8     (8 slots per lookup)
//
// and the lengths minimise sum_l share_l 2^len(l) under Kraft's
// inequality (an exponential cost, not Huffman's sum share × len; the
// brute force over sorted lengths, 792 of them, is instant). In a leveled
// tree, where the last level holds ~70-90% of the keys, this is 2.5-3x
// fewer false positives than a fixed 3-bit level in the same 16 bits.
//
// The all-zero slot is an empty slot: the canonical code reserves the
// last codeword of the longest length (maxCode bits), complemented to
// all zeros, so no real codeword and fingerprint make 0. The code is
// chosen when a filter is built (from the tree's key share per level, and
// a floor for the others, most for the level below the deepest, where a
// growing tree goes next) and fixed for the filter's life; the saved copy records it.

import (
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

const (
	slotBits = 16
	maxCode  = 6                  // longest codeword: fingerprints keep >= 10 bits
	altBits  = slotBits - maxCode // fingerprint bits every entry keeps: the alternate bucket's input
)

// Code is a prefix code of the levels. Immutable; filters share it.
type Code struct {
	lens  [manifest.NumLevels]uint8  // codeword length per level, 1..maxCode
	words [manifest.NumLevels]uint16 // codewords, right-aligned
	// dec maps a slot's top maxCode bits to its level and codeword
	// length (len 0: no codeword, an empty slot).
	dec [1 << maxCode]decoded
}

type decoded struct{ level, len uint8 }

// newCode returns the canonical code of lens, or false when lens are
// out of range or break Kraft's inequality (with the reserved codeword).
func newCode(lens [manifest.NumLevels]uint8) (*Code, bool) {
	c := &Code{lens: lens}
	kraft := 1 // the reserved codeword, in units of 2^-maxCode
	order := make([]int, 0, manifest.NumLevels)
	for l, n := range lens {
		if n < 1 || n > maxCode {
			return nil, false
		}
		kraft += 1 << (maxCode - n)
		order = append(order, l)
	}
	if kraft > 1<<maxCode {
		return nil, false
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(lens[a]) - int(lens[b]) })
	code, prev := 0, int(lens[order[0]])
	for _, l := range order {
		code <<= int(lens[l]) - prev
		prev = int(lens[l])
		c.words[l] = uint16(^code & (1<<lens[l] - 1))
		code++
	}
	for p := range c.dec {
		for l, n := range lens {
			if uint16(p>>(maxCode-n)) == c.words[l] {
				c.dec[p] = decoded{uint8(l), n}
			}
		}
	}
	if c.dec[0].len != 0 {
		return nil, false // cannot happen with the reserved codeword last
	}
	return c, true
}

// entry returns the slot of an entry with 16-bit fingerprint fp in level.
func (c *Code) entry(fp uint16, level int) uint16 {
	n := c.lens[level]
	return c.words[level]<<(slotBits-n) | fp>>n
}

// altKey returns the top altBits of the fingerprint of slot e, which
// every entry keeps whatever its level: the alternate bucket's input.
func (c *Code) altKey(e uint16) uint64 {
	n := c.dec[e>>(slotBits-maxCode)].len
	return uint64(e&(1<<(slotBits-n)-1)) >> (maxCode - n)
}

// match returns the levels (bit l for level l) of the entries of bucket b
// that fingerprint fp matches.
func (c *Code) match(b uint64, fp uint16) uint8 {
	var m uint8
	for s := 0; s < slots; s++ {
		e := uint16(b >> (16 * s))
		d := c.dec[e>>(slotBits-maxCode)]
		if d.len != 0 && e&(1<<(slotBits-d.len)-1) == fp>>d.len {
			m |= 1 << d.level
		}
	}
	return m
}

// ChooseCode returns the code that minimises the expected false
// positives, sum_l share_l 2^len(l), for keys[l] keys in level l. Levels
// without keys still get a codeword (tables may come): the level just
// below the deepest one holding keys is weighed as 2% of the keys (a
// growing tree deepens), the others 0.2%.
func ChooseCode(keys [manifest.NumLevels]float64) *Code {
	var total float64
	deepest := -1
	for l, n := range keys {
		total += n
		if n > 0 {
			deepest = l
		}
	}
	var share [manifest.NumLevels]float64
	for l := range share {
		switch {
		case keys[l] > 0:
			share[l] = keys[l] / total
		case l == deepest+1 || deepest < 0 && l <= 1:
			share[l] = 0.02
		default:
			share[l] = 0.002
		}
	}
	order := make([]int, manifest.NumLevels)
	for l := range order {
		order[l] = l
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case share[a] > share[b]:
			return -1
		case share[a] < share[b]:
			return 1
		}
		return 0
	})
	// Lengths in the order of falling share never decrease in the best
	// code: try every such sequence.
	best, bestCost := [manifest.NumLevels]uint8{}, math.Inf(1)
	var seq [manifest.NumLevels]uint8
	var try func(i int, from uint8, kraft int, cost float64)
	try = func(i int, from uint8, kraft int, cost float64) {
		if kraft > 1<<maxCode || cost >= bestCost {
			return
		}
		if i == manifest.NumLevels {
			best, bestCost = seq, cost
			return
		}
		for n := from; n <= maxCode; n++ {
			seq[order[i]] = n
			try(i+1, n, kraft+1<<(maxCode-n), cost+share[order[i]]*float64(int(1)<<n))
		}
	}
	try(0, 1, 1, 0) // kraft starts with the reserved codeword
	c, ok := newCode(best)
	if !ok {
		panic("bloomkv: tree filter: no level code") // all lengths maxCode always fit
	}
	return c
}
