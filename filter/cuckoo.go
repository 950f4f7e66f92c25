package filter

import (
	"fmt"
	"math"
	"sync"
)

const (
	// bucketSlots is the number of fingerprints per bucket. Four is the
	// classic choice: loads of about 95% with a short eviction chain.
	bucketSlots = 4
	// maxKicks bounds the eviction chain of one Add.
	maxKicks = 500
	// cuckooSizingLoad is the load NewCuckoo sizes for: n keys fill this
	// fraction of the slots, leaving headroom below the ~95% where Add
	// starts to fail, so the n keys it was sized for always fit.
	cuckooSizingLoad   = 0.9
	minFingerprintBits = 4
	maxFingerprintBits = 32
)

// Cuckoo is a cuckoo filter (Fan et al., 2014): each key is reduced to an
// f-bit fingerprint stored in one of two candidate buckets of four slots.
// The second bucket is derived from the first and the fingerprint alone
// (partial-key cuckoo hashing), so a fingerprint can be moved between its
// buckets without the key, and keys can be removed.
//
// Unlike a bloom filter it can fill up: Add returns ErrFull when the key's
// buckets and a bounded chain of evictions leave no room, and then changes
// nothing. Add is a multiset insert: adding a key twice stores two copies
// (at most eight fit), and each Remove takes one away; use AddIfAbsent for
// set semantics. Remove only keys that were added: removing another key
// whose fingerprint collides with an added one deletes that one, which can
// then be missed (a false negative), as in every cuckoo filter.
//
// Buckets need not be a power of two: the alternate bucket of bucket i for
// fingerprint fp is (H(fp) - i) mod buckets, which maps i2 back to i.
//
// All methods are safe for concurrent use; a read-write mutex serializes
// changes, and MayContain calls share it. UnmarshalBinary and ReadFrom
// replace the filter and must not run alongside other calls.
//
// The zero Cuckoo is a placeholder to decode into (UnmarshalBinary,
// ReadFrom); build filters with NewCuckoo.
type Cuckoo struct {
	buckets uint64 // constant after construction, like the table's f
	fpBits  uint64

	mu sync.RWMutex
	// Guarded by mu:
	table slotTable
	count int
	rng   uint64 // xorshift state choosing eviction victims
	path  []kick // scratch for undoing a failed eviction chain
}

// kick records one eviction so a failed chain can be undone.
type kick struct{ bucket, slot uint64 }

// NewCuckoo returns an empty cuckoo filter sized to hold n keys at a
// false-positive rate of at most fpp. Fingerprints get
// f = ceil(log2(2*4/fpp)) bits (4 to 32): a lookup compares against at most
// 8 fingerprints, each matching with probability about 2^-f. Buckets are
// sized so n keys fill at most 90% of the slots; Add typically succeeds up
// to about 95%. It fails, wrapping ErrInvalidArgument, for n < 0, fpp outside (0, 1)
// or fpp below what 32-bit fingerprints reach (about 1.9e-9).
func NewCuckoo(n int, fpp float64) (*Cuckoo, error) {
	if err := checkSizing("cuckoo", n, fpp); err != nil {
		return nil, err
	}
	f := math.Ceil(math.Log2(2 * bucketSlots / fpp))
	if f > maxFingerprintBits {
		return nil, invalidArgf("cuckoo: false-positive rate %v needs %v-bit fingerprints, more than %d", fpp, f, maxFingerprintBits)
	}
	buckets := cuckooBuckets(n)
	if buckets*bucketSlots*f > maxBloomBits {
		return nil, invalidArgf("cuckoo: %d keys at rate %v need more than %d bits", n, fpp, uint64(maxBloomBits))
	}
	return newCuckoo(uint64(buckets), uint64(max(f, minFingerprintBits))), nil
}

// cuckooBuckets sizes the table so n keys fill 90% of the slots, plus
// slack of 3*sqrt(n) keys and two buckets: small tables vary most in how
// full they get before an eviction chain fails. With it, none of 500,000
// random key sets of 1 to 64 keys failed to fit (20,000 per size); without
// it about one in thirty did.
func cuckooBuckets(n int) float64 {
	keys := float64(max(n, 1))
	return math.Ceil((keys+3*math.Sqrt(keys))/(bucketSlots*cuckooSizingLoad)) + 2
}

func newCuckoo(buckets, f uint64) *Cuckoo {
	return &Cuckoo{
		buckets: buckets,
		fpBits:  f,
		table:   newSlotTable(buckets*bucketSlots, f),
		rng:     0x9e3779b97f4a7c15 ^ buckets,
	}
}

// locate returns a key's fingerprint (never 0, which marks an empty slot)
// and first bucket. The bucket comes from the hash's high bits (reduce is a
// multiply-high) and the fingerprint from its low bits, so the two are
// independent.
func (c *Cuckoo) locate(h uint64) (fp uint32, i1 uint64) {
	fp = uint32(h & c.table.mask)
	if fp == 0 {
		fp = 1
	}
	return fp, reduce(h, c.buckets)
}

// alt returns the other bucket of fingerprint fp in bucket i. It is an
// involution: alt(alt(i, fp), fp) == i.
func (c *Cuckoo) alt(i uint64, fp uint32) uint64 {
	a := reduce(mix64(uint64(fp)), c.buckets)
	if a >= i {
		return a - i
	}
	return a + c.buckets - i
}

// mix64 is a 64-bit finalizer (xor-shift-multiply), spreading the few bits
// of a fingerprint over a whole word.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// find returns the slot in bucket i holding fp, or -1.
func (c *Cuckoo) find(i uint64, fp uint32) int {
	for j := uint64(0); j < bucketSlots; j++ {
		if c.table.get(i*bucketSlots+j) == fp {
			return int(j)
		}
	}
	return -1
}

// put stores fp in a free slot of bucket i, if there is one.
func (c *Cuckoo) put(i uint64, fp uint32) bool {
	if j := c.find(i, 0); j >= 0 {
		c.table.set(i*bucketSlots+uint64(j), fp)
		return true
	}
	return false
}

func (c *Cuckoo) random() uint64 {
	c.rng ^= c.rng << 13
	c.rng ^= c.rng >> 7
	c.rng ^= c.rng << 17
	return c.rng
}

// Add inserts key. If its buckets are full it evicts fingerprints along a
// chain of at most 500 moves; if that finds no free slot, it undoes the
// chain and returns ErrFull, leaving the filter as it was.
func (c *Cuckoo) Add(key []byte) error { return c.AddHash(Hash(key)) }

// AddHash is Add for a key hashed with Hash or HashString.
func (c *Cuckoo) AddHash(h uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addLocked(h)
}

// AddIfAbsent adds key unless MayContain(key) already holds, and reports
// whether it added it. It returns ErrFull as Add does.
func (c *Cuckoo) AddIfAbsent(key []byte) (bool, error) {
	h := Hash(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.containsLocked(h) {
		return false, nil
	}
	if err := c.addLocked(h); err != nil {
		return false, err
	}
	return true, nil
}

// addLocked requires c.mu held for writing.
func (c *Cuckoo) addLocked(h uint64) error {
	fp, i1 := c.locate(h)
	if c.put(i1, fp) || c.put(c.alt(i1, fp), fp) {
		c.count++
		return nil
	}
	i := i1
	if c.random()&1 == 1 {
		i = c.alt(i1, fp)
	}
	c.path = c.path[:0]
	carry := fp
	for range maxKicks {
		j := c.random() % bucketSlots
		s := i*bucketSlots + j
		carry = c.table.swap(s, carry)
		c.path = append(c.path, kick{bucket: i, slot: j})
		i = c.alt(i, carry)
		if c.put(i, carry) {
			c.count++
			return nil
		}
	}
	// Undo the chain in reverse: each swap is its own inverse.
	for n := len(c.path) - 1; n >= 0; n-- {
		s := c.path[n].bucket*bucketSlots + c.path[n].slot
		carry = c.table.swap(s, carry)
	}
	return ErrFull
}

// Remove deletes one copy of key's fingerprint, or returns ErrAbsent and
// changes nothing if neither of its buckets holds it. See the type's doc
// on removing keys that were never added.
func (c *Cuckoo) Remove(key []byte) error { return c.RemoveHash(Hash(key)) }

// RemoveHash is Remove for a key hashed with Hash or HashString.
func (c *Cuckoo) RemoveHash(h uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fp, i1 := c.locate(h)
	for _, i := range [2]uint64{i1, c.alt(i1, fp)} {
		if j := c.find(i, fp); j >= 0 {
			c.table.set(i*bucketSlots+uint64(j), 0)
			c.count--
			return nil
		}
	}
	return ErrAbsent
}

// MayContain reports whether key may have been added (and not removed).
// False is certain.
func (c *Cuckoo) MayContain(key []byte) bool { return c.MayContainHash(Hash(key)) }

// MayContainHash is MayContain for a key hashed with Hash or HashString.
func (c *Cuckoo) MayContainHash(h uint64) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.containsLocked(h)
}

// containsLocked requires c.mu held.
func (c *Cuckoo) containsLocked(h uint64) bool {
	fp, i1 := c.locate(h)
	return c.find(i1, fp) >= 0 || c.find(c.alt(i1, fp), fp) >= 0
}

// Count returns the number of fingerprints stored.
func (c *Cuckoo) Count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.count
}

// Capacity returns the number of slots, 4 per bucket. Add starts to fail
// at about 95% of it.
func (c *Cuckoo) Capacity() int { return int(c.buckets * bucketSlots) }

// LoadFactor returns Count()/Capacity().
func (c *Cuckoo) LoadFactor() float64 { return float64(c.Count()) / float64(c.Capacity()) }

// FingerprintBits returns f, the bits stored per key.
func (c *Cuckoo) FingerprintBits() int { return int(c.fpBits) }

// Buckets returns the number of buckets.
func (c *Cuckoo) Buckets() uint64 { return c.buckets }

// SizeBytes returns the memory the packed slots occupy.
func (c *Cuckoo) SizeBytes() int {
	return int(slotWords(c.buckets*bucketSlots, c.fpBits) * 8)
}

// EstimatedFPR returns the expected false-positive rate at the current
// load α: a lookup compares against about 8α stored fingerprints, each
// equal to the key's with probability 1/(2^f - 1).
func (c *Cuckoo) EstimatedFPR() float64 {
	compared := 2 * bucketSlots * c.LoadFactor()
	return -math.Expm1(compared * math.Log1p(-1/float64(uint64(1)<<c.fpBits-1)))
}

// Reset removes every key.
func (c *Cuckoo) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.table.words)
	c.count = 0
}

func (c *Cuckoo) String() string {
	return fmt.Sprintf("cuckoo(%d buckets x %d slots, f=%d bits, %d bytes, count=%d)",
		c.buckets, bucketSlots, c.fpBits, c.SizeBytes(), c.Count())
}
