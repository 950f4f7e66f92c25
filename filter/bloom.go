package filter

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
)

// Bloom is a standalone bloom filter: no false negatives, a false-positive
// rate fixed by its size m, probe count k and the number of keys added.
//
// Its bits and probes are those of the SSTable filter blocks (see the
// package doc): bit i is bit i%64 of words[i/64], which is byte i/8 of a
// filter block's bit array, so a Bloom and a block with the same m, k and
// keys hold identical bits (BloomFromBlock, AppendBlock).
//
// Add, AddHash, AddBatch, Merge (as the receiver) and all the read methods
// are safe to call from many goroutines at once without a lock: bits are
// set with an atomic OR and read with atomic loads. Reset, UnmarshalBinary
// and ReadFrom replace the contents and must not run alongside other calls.
//
// The zero Bloom is a placeholder to decode into (UnmarshalBinary,
// ReadFrom, UnmarshalJSON, LoadChunks); build filters with NewBloom or
// NewBloomWithShape. Any other use of a zero Bloom panics with
// ErrZeroFilter, and encoding one returns it: with no bits it could only
// answer "maybe" to every key.
type Bloom struct {
	words []uint64 // the bit array; every access is atomic
	m     uint64   // bits, len(words)*64; constant after construction
	k     int      // probes per key; constant after construction
}

// NewBloom returns an empty bloom filter sized for n keys at false-positive
// rate fpp by EstimateParameters: the fewest bits (whole 64-bit words) for
// which the theoretical rate with n keys is at most fpp, and k about
// m/n ln 2 probes (at most MaxProbes). n = 0 is sized as 1. It fails,
// wrapping ErrInvalidArgument, for n < 0, fpp outside (0, 1), or a size
// beyond 2^46 bits (2^31-1 on 32-bit platforms).
func NewBloom(n int, fpp float64) (*Bloom, error) {
	m, k, err := bloomShape("bloom", n, fpp)
	if err != nil {
		return nil, err
	}
	return newBloom(m, k), nil
}

// NewBloomWithShape returns an empty bloom filter of m bits (rounded up to
// whole 64-bit words, at least 64, as filter blocks round it) and k probes.
// Use it to match the shape of another filter or of a filter block. It
// fails, wrapping ErrInvalidArgument, for k outside [1, MaxProbes] or m
// that is 0 or, rounded up, beyond 2^46 bits (2^31-1 on 32-bit platforms,
// where 2^31-64 is the largest m accepted).
func NewBloomWithShape(m uint64, k int) (*Bloom, error) {
	m, err := checkShape("bloom", m, k)
	if err != nil {
		return nil, err
	}
	return newBloom(m, k), nil
}

// newBloom requires m to be a positive multiple of 64 and k in [1, MaxProbes].
func newBloom(m uint64, k int) *Bloom {
	return &Bloom{words: make([]uint64, m/64), m: m, k: k}
}

// mustBeBuilt panics on a zero Bloom (k = 0): its probe loops would run no
// probe at all, so every key would read as "maybe".
func (b *Bloom) mustBeBuilt() {
	if b.k == 0 {
		panic(ErrZeroFilter)
	}
}

// Add adds key and reports whether any bit changed: true means key was
// certainly not in the filter before, false that it may have been.
func (b *Bloom) Add(key []byte) bool { return b.AddHash(Hash(key)) }

// AddHash is Add for a key hashed with Hash or HashString.
func (b *Bloom) AddHash(h uint64) bool {
	b.mustBeBuilt()
	h1, h2 := probeStep(h)
	changed := false
	for i := 0; i < b.k; i++ {
		bit := reduce(h1, b.m)
		w, mask := &b.words[bit>>6], uint64(1)<<(bit&63)
		// Load first: once a filter fills up most probes hit set bits, and
		// a plain load keeps the cache line shared among goroutines where an
		// OR would take it exclusive.
		if atomic.LoadUint64(w)&mask == 0 && atomic.OrUint64(w, mask)&mask == 0 {
			changed = true
		}
		h1 += h2
	}
	return changed
}

// MayContain reports whether key may have been added. False is certain.
func (b *Bloom) MayContain(key []byte) bool { return b.MayContainHash(Hash(key)) }

// MayContainHash is MayContain for a key hashed with Hash or HashString.
func (b *Bloom) MayContainHash(h uint64) bool {
	b.mustBeBuilt()
	h1, h2 := probeStep(h)
	for i := 0; i < b.k; i++ {
		bit := reduce(h1, b.m)
		if atomic.LoadUint64(&b.words[bit>>6])&(1<<(bit&63)) == 0 {
			return false
		}
		h1 += h2
	}
	return true
}

// AddBatch adds every key and returns how many were certainly new (the
// number of Add calls that would have returned true).
func (b *Bloom) AddBatch(keys [][]byte) int {
	added := 0
	for _, key := range keys {
		if b.AddHash(Hash(key)) {
			added++
		}
	}
	return added
}

// MayContainBatch appends MayContain(keys[i]) for each key to dst and
// returns the extended slice; with enough capacity in dst it allocates
// nothing.
func (b *Bloom) MayContainBatch(keys [][]byte, dst []bool) []bool {
	// A version that first loaded every key's first probe words, so their
	// cache misses would overlap, measured no faster (within noise on a
	// 1.2 MB filter): out-of-order execution already overlaps them.
	for _, key := range keys {
		dst = append(dst, b.MayContainHash(Hash(key)))
	}
	return dst
}

// Bits returns m, the size of the bit array in bits.
func (b *Bloom) Bits() uint64 { return b.m }

// NumProbes returns k, the number of bits set and tested per key.
func (b *Bloom) NumProbes() int { return b.k }

// SizeBytes returns the memory the bit array occupies, m/8 bytes.
func (b *Bloom) SizeBytes() int { return len(b.words) * 8 }

// BitsSet counts the bits that are 1. It reads the whole array: O(m/64).
func (b *Bloom) BitsSet() uint64 {
	var set uint64
	for i := range b.words {
		set += uint64(bits.OnesCount64(atomic.LoadUint64(&b.words[i])))
	}
	return set
}

// FillRatio returns the fraction of bits set, BitsSet()/m.
func (b *Bloom) FillRatio() float64 { return float64(b.BitsSet()) / float64(b.m) }

// ApproximateCount estimates the number of distinct keys added from the
// bits set X: n ≈ -(m/k) ln(1 - X/m) (Swamidass and Baldi). It is exact in
// expectation while the filter is within capacity and grows unreliable as
// the array saturates; a full array reports math.MaxInt. O(m/64).
func (b *Bloom) ApproximateCount() int {
	return estimateCount(b.BitsSet(), b.m, b.k)
}

func estimateCount(set, m uint64, k int) int {
	if set >= m {
		return math.MaxInt
	}
	n := math.Round(-float64(m) / float64(k) * math.Log1p(-float64(set)/float64(m)))
	if n >= math.MaxInt { // a large, nearly full array, on 32-bit platforms
		return math.MaxInt
	}
	return int(n)
}

// EstimatedFPR returns the false-positive rate at the current fill,
// (X/m)^k: the chance that k probes of an absent key all land on set bits.
// A value above the rate the filter was sized for means it holds more keys
// than it was sized for. O(m/64).
func (b *Bloom) EstimatedFPR() float64 {
	return math.Pow(b.FillRatio(), float64(b.k))
}

// Merge ORs other's bits into b, so b then answers "may contain" for every
// key added to either. The filters must have equal m and k; otherwise Merge
// returns an error wrapping ErrShapeMismatch and changes nothing. Adds to
// other while Merge runs may or may not be carried over.
func (b *Bloom) Merge(other *Bloom) error {
	if b.m != other.m || b.k != other.k {
		return fmt.Errorf("%w: merging bloom(m=%d, k=%d) into bloom(m=%d, k=%d)",
			ErrShapeMismatch, other.m, other.k, b.m, b.k)
	}
	for i := range b.words {
		if w := atomic.LoadUint64(&other.words[i]); w != 0 {
			atomic.OrUint64(&b.words[i], w)
		}
	}
	return nil
}

// Clone returns an independent copy of b.
func (b *Bloom) Clone() *Bloom {
	c := newBloom(b.m, b.k)
	for i := range b.words {
		c.words[i] = atomic.LoadUint64(&b.words[i])
	}
	return c
}

// Reset clears every bit, leaving the shape unchanged.
func (b *Bloom) Reset() {
	for i := range b.words {
		atomic.StoreUint64(&b.words[i], 0)
	}
}

// Equal reports whether b and other have the same shape and bits.
func (b *Bloom) Equal(other *Bloom) bool {
	if b.m != other.m || b.k != other.k {
		return false
	}
	for i := range b.words {
		if atomic.LoadUint64(&b.words[i]) != atomic.LoadUint64(&other.words[i]) {
			return false
		}
	}
	return true
}

func (b *Bloom) String() string {
	return fmt.Sprintf("bloom(m=%d bits, k=%d, %d bytes)", b.m, b.k, b.SizeBytes())
}
