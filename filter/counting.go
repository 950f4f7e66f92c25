package filter

import (
	"fmt"
	"math"
	"sync"
)

// counterMax is the value at which a 4-bit counter saturates. A saturated
// counter is never decremented again: it may have counted more keys than
// it can show, and lowering it could later produce a false negative.
const counterMax = 15

// Counting is a counting bloom filter: a bloom filter whose bits are 4-bit
// counters, so keys can be removed. It answers MayContain exactly as a Bloom
// of the same m and k would (a bit is set where a counter is non-zero) at
// four times the memory.
//
// Removing a key that was never added decrements other keys' counters and
// can make MayContain miss keys that were added: the no-false-negative
// guarantee holds only while every Remove matches an earlier Add, as in
// every counting filter. Remove refuses (ErrAbsent) a key whose counters
// are not all non-zero, since that key was certainly never added, but it
// cannot detect a false positive.
//
// Count never goes below zero: on an empty filter (Count() == 0) Remove
// returns ErrAbsent and changes nothing, even where saturated counters
// still answer "maybe" for the key. Every Add is then matched by a Remove,
// so no Remove can match an earlier Add. Without that rule a key added 20
// times and removed 21 times (its counters stuck at 15) left Count at -1,
// which no encoding can hold.
//
// All methods are safe for concurrent use; a read-write mutex serializes
// Add and Remove, and MayContain calls share it. UnmarshalBinary and
// ReadFrom replace the filter and must not run alongside other calls.
//
// The zero Counting is a placeholder to decode into (UnmarshalBinary,
// ReadFrom, UnmarshalJSON, LoadChunks); build filters with NewCounting. Any
// other use of a zero one panics with ErrZeroFilter, and encoding one
// returns it.
type Counting struct {
	m uint64 // counters: a positive multiple of 64; constant after construction
	k int    // probes per key; constant after construction

	mu sync.RWMutex
	// Guarded by mu:
	counters []uint64 // counter i is bits 4*(i%16) .. 4*(i%16)+3 of counters[i/16]
	count    int      // successful Adds minus successful Removes: 0..math.MaxInt
}

// NewCounting returns an empty counting filter sized for n keys at
// false-positive rate fpp, with the m and k NewBloom would choose (m
// counters of 4 bits: m/2 bytes). It fails, wrapping ErrInvalidArgument,
// for n < 0 or fpp outside (0, 1).
func NewCounting(n int, fpp float64) (*Counting, error) {
	m, k, err := bloomShape("counting", n, fpp)
	if err != nil {
		return nil, err
	}
	return &Counting{m: m, k: k, counters: make([]uint64, m/16)}, nil
}

func (c *Counting) get(i uint64) uint64 { return c.counters[i/16] >> (4 * (i % 16)) & 0xf }

// inc and dec require the counter to be below counterMax and above zero.
func (c *Counting) inc(i uint64) { c.counters[i/16] += 1 << (4 * (i % 16)) }
func (c *Counting) dec(i uint64) { c.counters[i/16] -= 1 << (4 * (i % 16)) }

// mustBeBuilt panics on a zero Counting, which would answer "maybe" to
// every key (its probe loop runs no probe).
func (c *Counting) mustBeBuilt() {
	if c.k == 0 {
		panic(ErrZeroFilter)
	}
}

// Add adds key, raising its k counters (a counter at 15 stays there), and
// reports whether one of them was zero: true means key was certainly not in
// the filter before.
func (c *Counting) Add(key []byte) bool { return c.AddHash(Hash(key)) }

// AddHash is Add for a key hashed with Hash or HashString.
func (c *Counting) AddHash(h uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mustBeBuilt()
	h1, h2 := probeStep(h)
	fresh := false
	for i := 0; i < c.k; i++ {
		pos := reduce(h1, c.m)
		switch v := c.get(pos); v {
		case 0:
			fresh = true
			c.inc(pos)
		case counterMax:
		default:
			c.inc(pos)
		}
		h1 += h2
	}
	// Saturate rather than wrap: 2^31 Adds are within reach on 32-bit
	// platforms, and a wrapped, negative count would not decode.
	if c.count < math.MaxInt {
		c.count++
	}
	return fresh
}

// Remove removes one earlier Add of key by lowering its k counters
// (saturated counters stay at 15). If a counter would drop below zero, or
// the filter is empty (Count() == 0), key was certainly never added (or
// every Add of it was already removed): Remove returns ErrAbsent and
// changes nothing. See the type's doc for what removing a never-added key
// costs.
func (c *Counting) Remove(key []byte) error { return c.RemoveHash(Hash(key)) }

// RemoveHash is Remove for a key hashed with Hash or HashString.
func (c *Counting) RemoveHash(h uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Two probes of one key can share a counter, so checking each counter
	// for non-zero first is not enough; decrement as we go and undo the
	// decrements if one would underflow.
	c.mustBeBuilt()
	if c.count == 0 {
		// Saturated counters may still answer "maybe", but every Add has
		// been matched by a Remove already.
		return ErrAbsent
	}
	var lowered [MaxProbes]uint64
	n := 0
	h1, h2 := probeStep(h)
	for i := 0; i < c.k; i++ {
		pos := reduce(h1, c.m)
		switch c.get(pos) {
		case 0:
			for _, p := range lowered[:n] {
				c.inc(p)
			}
			return ErrAbsent
		case counterMax:
		default:
			c.dec(pos)
			lowered[n] = pos
			n++
		}
		h1 += h2
	}
	c.count--
	return nil
}

// MayContain reports whether key may have been added and not removed since.
// False is certain (see the type's doc for the one exception).
func (c *Counting) MayContain(key []byte) bool { return c.MayContainHash(Hash(key)) }

// MayContainHash is MayContain for a key hashed with Hash or HashString.
func (c *Counting) MayContainHash(h uint64) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.mustBeBuilt()
	h1, h2 := probeStep(h)
	for i := 0; i < c.k; i++ {
		if c.get(reduce(h1, c.m)) == 0 {
			return false
		}
		h1 += h2
	}
	return true
}

// Count returns the number of successful Adds minus successful Removes,
// never below zero (see Remove) and at most math.MaxInt (Add stops
// counting there).
func (c *Counting) Count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.count
}

// Counters returns m, the number of 4-bit counters.
func (c *Counting) Counters() uint64 { return c.m }

// NumProbes returns k, the number of counters per key.
func (c *Counting) NumProbes() int { return c.k }

// SizeBytes returns the memory the counters occupy, m/2 bytes.
func (c *Counting) SizeBytes() int { return len(c.counters) * 8 }

// Saturated returns how many counters are stuck at 15. Each such counter
// can no longer be lowered; many of them mean the filter is far over
// capacity. O(m).
func (c *Counting) Saturated() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for i := uint64(0); i < c.m; i++ {
		if c.get(i) == counterMax {
			n++
		}
	}
	return n
}

// EstimatedFPR returns the false-positive rate at the current fill, (z/m)^k
// where z counts the non-zero counters. O(m).
func (c *Counting) EstimatedFPR() float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nonzero := 0
	for i := uint64(0); i < c.m; i++ {
		if c.get(i) != 0 {
			nonzero++
		}
	}
	return math.Pow(float64(nonzero)/float64(c.m), float64(c.k))
}

// Reset sets every counter to zero.
func (c *Counting) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counters)
	c.count = 0
}

func (c *Counting) String() string {
	return fmt.Sprintf("counting(m=%d counters, k=%d, %d bytes, count=%d)", c.m, c.k, c.SizeBytes(), c.Count())
}
