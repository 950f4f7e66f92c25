package filter

import (
	"fmt"
	"math"
	"sync"
)

const (
	// bucketSlots is the default number of fingerprints per bucket. Four is
	// the classic choice: loads of about 95% with a short eviction chain.
	bucketSlots = defaultBucketSize
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
// f-bit fingerprint stored in one of two candidate buckets of b slots
// (b = 4 unless WithBucketSize says otherwise). The second bucket is
// derived from the first and the fingerprint alone (partial-key cuckoo
// hashing), so a fingerprint can be moved between its buckets without the
// key, and keys can be removed.
//
// Unlike a bloom filter it can fill up. By default its capacity is hard:
// Add returns ErrFull when the key's buckets and a bounded chain of
// evictions leave no room, and then changes nothing. WithExpansion(e)
// makes it grow instead, as RedisBloom's CF.RESERVE EXPANSION does: a full
// filter gets another table e times the size of the last (its own buckets,
// the same fingerprints), lookups then check every table, and the
// false-positive rate grows with the number of tables (EstimatedFPR).
// The chain of tables is capped, as RedisBloom caps its sub-filters: at
// most MaxCuckooTables tables, holding at most MaxCuckooGrowth times the
// slots of the first (and 2^46 bits in all, 2^31-1 on 32-bit platforms);
// past the cap Add returns ErrFull as a filter without expansion does.
//
// Add is a multiset insert: adding a key twice stores two copies, and
// each Remove takes one away; use AddIfAbsent for set semantics. A key's
// copies can only go in its two buckets, so a table holds at most 2b of
// them. When the key's two buckets in the newest table hold nothing but
// its copies, Add returns ErrFull and does not grow the filter: a new
// table would take 2b more copies of one key at the price of a whole
// table, and repeated Adds of one key would grow memory exponentially
// (with expansion 2, 200 Adds of one key once took 24 GiB). Remove only keys that were added: removing another key
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
// ReadFrom, UnmarshalJSON, LoadChunks); build filters with NewCuckoo. Any
// other use of a zero one panics with ErrZeroFilter, and encoding one
// returns it.
type Cuckoo struct {
	cfg cuckooConfig // constant after construction (or decoding)

	mu sync.RWMutex
	// Guarded by mu:
	tables []*cuckooTable // oldest first; more than one only with expansion
	rng    uint64         // xorshift state choosing eviction victims
	path   []kick         // scratch for undoing a failed eviction chain
}

// cuckooConfig is a Cuckoo's shape, shared by its tables.
type cuckooConfig struct {
	slots     uint64 // fingerprints per bucket, 1..maxBucketSize
	fpBits    uint64 // f
	expansion uint64 // size of a new table relative to the last; 0 = none
}

// cuckooTable is one table of buckets. Table i of a filter that grew has
// spread = e^i times the buckets of table 0, and a key's bucket in it is
// its bucket of table 0 times spread plus a digit in [0, spread) from the
// hash: the digits of table i extend those of table i-1 (multiply-high
// reduction keeps prefixes), and alt changes only the table-0 part. So two
// keys that share a fingerprint and a bucket pair in a table share them in
// every older table too, which is what keeps Remove, searching the newest
// table first, from ever leaving an added key unfound: whichever copy it
// takes, the other key finds the one left in an older table.
type cuckooTable struct {
	buckets uint64 // base * spread
	base    uint64 // buckets of table 0
	spread  uint64 // e^i for table i
	slots   uint64 // per bucket, as the Cuckoo's
	table   slotTable
	count   int
}

// kick records one eviction so a failed chain can be undone.
type kick struct{ bucket, slot uint64 }

// CuckooOption sets an optional parameter of NewCuckoo.
type CuckooOption func(*cuckooConfig)

// WithBucketSize sets the fingerprints per bucket, 2 to 16 (default 4).
// Larger buckets fill further before Add fails (about 84% at 2, 95% at 4,
// 98% at 8) but compare more fingerprints per lookup, so they need one
// more fingerprint bit per doubling for the same rate. One slot per bucket
// is refused: with partial-key cuckoo hashing a key whose two buckets
// coincide, or three keys on one pair of buckets, fail at any load.
func WithBucketSize(b int) CuckooOption {
	return func(c *cuckooConfig) { c.slots = uint64(max(b, 0)) }
}

// WithExpansion makes a full filter grow by another table e times the size
// of the last, 1 to 1024, instead of Add returning ErrFull (0, the
// default, keeps the capacity hard). RedisBloom's CF.RESERVE EXPANSION:
// larger factors mean fewer tables to check, in larger steps of memory.
// Growth stops at MaxCuckooTables tables or MaxCuckooGrowth times the
// first table's slots, whichever comes first (32 tables with e = 1, 16
// with e = 2, 2 with e = 1024); then Add returns ErrFull.
func WithExpansion(e int) CuckooOption {
	return func(c *cuckooConfig) { c.expansion = uint64(max(e, 0)) }
}

// Caps on an expanding Cuckoo's chain of tables. Each table adds its own
// share to the false-positive rate and to every lookup, and a chain grown
// by a factor e multiplies memory by e per table; these bound both.
// Decoding accepts longer chains (written before the caps), which then do
// not grow further.
const (
	// MaxCuckooTables is the most tables an expanding Cuckoo grows to: 32,
	// as RedisBloom's cuckoo filters grow to at most 32 sub-filters.
	MaxCuckooTables = 32
	// MaxCuckooGrowth bounds the slots of all tables together, as a
	// multiple of the first table's: with it a filter's memory stays within
	// 65,536 times what NewCuckoo first allocated, whatever e is.
	MaxCuckooGrowth = 1 << 16
)

const (
	defaultBucketSize = 4
	minBucketSize     = 2
	maxBucketSize     = 16
	maxExpansion      = 1024
)

// NewCuckoo returns an empty cuckoo filter sized to hold n keys at a
// false-positive rate of at most fpp. Fingerprints get
// f = ceil(log2(2*b/fpp)) bits (4 to 32) for buckets of b slots: a lookup
// compares against at most 2b fingerprints, each matching with probability
// about 2^-f. Buckets are sized so n keys fill at most 90% of the slots
// (less for buckets under 4 slots, which fill less far); Add typically
// succeeds up to about 95% with 4 slots. It fails, wrapping
// ErrInvalidArgument, for n < 0, fpp outside (0, 1), fpp below what 32-bit
// fingerprints reach (about 1.9e-9 at b = 4), or an option out of range.
func NewCuckoo(n int, fpp float64, opts ...CuckooOption) (*Cuckoo, error) {
	if err := checkSizing("cuckoo", n, fpp); err != nil {
		return nil, err
	}
	cfg := cuckooConfig{slots: defaultBucketSize}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.slots < minBucketSize || cfg.slots > maxBucketSize {
		return nil, invalidArgf("cuckoo: bucket size %d is outside [%d, %d]", cfg.slots, minBucketSize, maxBucketSize)
	}
	if cfg.expansion > maxExpansion {
		return nil, invalidArgf("cuckoo: expansion %d is above %d", cfg.expansion, maxExpansion)
	}
	f := math.Ceil(math.Log2(2 * float64(cfg.slots) / fpp))
	if f > maxFingerprintBits {
		return nil, invalidArgf("cuckoo: false-positive rate %v needs %v-bit fingerprints, more than %d", fpp, f, maxFingerprintBits)
	}
	cfg.fpBits = uint64(max(f, minFingerprintBits))
	buckets := cuckooBuckets(n, cfg.slots)
	if buckets*float64(cfg.slots)*float64(cfg.fpBits) > maxBloomBits {
		return nil, invalidArgf("cuckoo: %d keys at rate %v need more than %d bits", n, fpp, uint64(maxBloomBits))
	}
	return newCuckooOf(cfg, uint64(buckets)), nil
}

// cuckooBuckets sizes the table so n keys fill the sizing load of the
// slots, plus slack of 3*sqrt(n) keys and two buckets: small tables vary
// most in how full they get before an eviction chain fails. With it, none
// of 500,000 random key sets of 1 to 64 keys failed to fit in buckets of 4
// (20,000 per size); without it about one in thirty did.
func cuckooBuckets(n int, slots uint64) float64 {
	keys := float64(max(n, 1))
	return math.Ceil((keys+3*math.Sqrt(keys))/(float64(slots)*sizingLoad(slots))) + 2
}

// sizingLoad is the load NewCuckoo sizes for: below the load at which Add
// starts to fail for that bucket size, so the n keys it was sized for
// always fit.
func sizingLoad(slots uint64) float64 {
	switch slots {
	case 2:
		return 0.75
	case 3:
		return 0.85
	}
	return cuckooSizingLoad
}

// newCuckoo returns a filter of one table of buckets of 4 slots and
// f-bit fingerprints, with no expansion.
func newCuckoo(buckets, f uint64) *Cuckoo {
	return newCuckooOf(cuckooConfig{slots: defaultBucketSize, fpBits: f}, buckets)
}

func newCuckooOf(cfg cuckooConfig, buckets uint64) *Cuckoo {
	return &Cuckoo{
		cfg:    cfg,
		tables: []*cuckooTable{newCuckooTable(cfg, buckets, 1)},
		rng:    0x9e3779b97f4a7c15 ^ buckets,
	}
}

// newCuckooTable returns an empty table of base*spread buckets.
func newCuckooTable(cfg cuckooConfig, base, spread uint64) *cuckooTable {
	buckets := base * spread
	return &cuckooTable{buckets: buckets, base: base, spread: spread, slots: cfg.slots,
		table: newSlotTable(buckets*cfg.slots, cfg.fpBits)}
}

// locate returns a key's fingerprint (never 0, which marks an empty slot)
// and first bucket. The bucket comes from the hash's high bits (reduce is a
// multiply-high) and the fingerprint from its low bits, so the two are
// independent.
func (t *cuckooTable) locate(h uint64) (fp uint32, i1 uint64) {
	fp = uint32(h & t.table.mask)
	if fp == 0 {
		fp = 1
	}
	i1 = reduce(h, t.base)
	if t.spread > 1 {
		i1 = i1*t.spread + reduce(mix64(h^spreadSeed), t.spread)
	}
	return fp, i1
}

// spreadSeed decorrelates a key's digit in a grown table from its table-0
// bucket (the hash's high bits) and fingerprint (its low bits).
const spreadSeed = 0x2545f4914f6cdd1d

// alt returns the other bucket of fingerprint fp in bucket i. It is an
// involution: alt(alt(i, fp), fp) == i. In a grown table it moves only
// the table-0 part of i (see cuckooTable).
func (t *cuckooTable) alt(i uint64, fp uint32) uint64 {
	if t.spread == 1 {
		return altIn(i, fp, t.base)
	}
	return altIn(i/t.spread, fp, t.base)*t.spread + i%t.spread
}

// altIn is alt among n buckets: (H(fp) - i) mod n.
func altIn(i uint64, fp uint32, n uint64) uint64 {
	a := reduce(mix64(uint64(fp)), n)
	if a >= i {
		return a - i
	}
	return a + n - i
}

// locate and alt of the first table: what a filter without expansion has.
func (c *Cuckoo) locate(h uint64) (uint32, uint64) { return c.tables[0].locate(h) }
func (c *Cuckoo) alt(i uint64, fp uint32) uint64   { return c.tables[0].alt(i, fp) }

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
func (t *cuckooTable) find(i uint64, fp uint32) int {
	for j := uint64(0); j < t.slots; j++ {
		if t.table.get(i*t.slots+j) == fp {
			return int(j)
		}
	}
	return -1
}

// put stores fp in a free slot of bucket i, if there is one.
func (t *cuckooTable) put(i uint64, fp uint32) bool {
	if j := t.find(i, 0); j >= 0 {
		t.table.set(i*t.slots+uint64(j), fp)
		return true
	}
	return false
}

// putEither stores the key hashed to h in a free slot of either of its
// buckets, if there is one.
func (t *cuckooTable) putEither(h uint64) bool {
	fp, i1 := t.locate(h)
	if t.put(i1, fp) || t.put(t.alt(i1, fp), fp) {
		t.count++
		return true
	}
	return false
}

func (t *cuckooTable) contains(h uint64) bool {
	fp, i1 := t.locate(h)
	return t.find(i1, fp) >= 0 || t.find(t.alt(i1, fp), fp) >= 0
}

func (c *Cuckoo) random() uint64 {
	c.rng ^= c.rng << 13
	c.rng ^= c.rng >> 7
	c.rng ^= c.rng << 17
	return c.rng
}

// Add inserts key. If its buckets are full it evicts fingerprints along a
// chain of at most 500 moves; if that finds no free slot, it grows the
// filter by a table (WithExpansion, within MaxCuckooTables and
// MaxCuckooGrowth) or else undoes the chain and returns ErrFull, leaving
// the filter as it was. It also returns ErrFull, without growing, when
// key's buckets in the newest table hold only copies of key (see the
// type's doc).
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

// mustBeBuilt panics on a zero Cuckoo, which has no table: it would answer
// "absent" to every key. Requires c.mu held.
func (c *Cuckoo) mustBeBuilt() {
	if len(c.tables) == 0 {
		panic(ErrZeroFilter)
	}
}

// addLocked requires c.mu held for writing. A free slot in any table is
// taken first (newest first: it has the most room); evictions run in the
// newest table only, older ones being full in practice.
func (c *Cuckoo) addLocked(h uint64) error {
	c.mustBeBuilt()
	for i := len(c.tables) - 1; i >= 0; i-- {
		if c.tables[i].putEither(h) {
			return nil
		}
	}
	last := c.tables[len(c.tables)-1]
	if last.onlyCopiesOf(h) {
		// No eviction chain can leave the two buckets (every move swaps a
		// copy for a copy), and a new table for one key's copies is what
		// made repeated Adds grow memory exponentially.
		return ErrFull
	}
	if c.evict(last, h) {
		return nil
	}
	if !c.canGrow() {
		return ErrFull
	}
	spread := last.spread * c.cfg.expansion
	next := newCuckooTable(c.cfg, last.base, spread)
	c.tables = append(c.tables, next)
	next.putEither(h) // an empty table has room
	return nil
}

// canGrow reports whether the chain may take another table: expansion is
// on, and the caps on tables, slots and encodable bits hold with it.
// Requires c.mu held.
func (c *Cuckoo) canGrow() bool {
	if c.cfg.expansion == 0 || len(c.tables) >= MaxCuckooTables {
		return false
	}
	first, last := c.tables[0], c.tables[len(c.tables)-1]
	// Float64 because e^31 overflows; the slot counts involved stay far
	// below 2^53, where the caps cut in.
	slots := float64(c.totalSlots()) + float64(last.buckets)*float64(c.cfg.expansion)*float64(c.cfg.slots)
	return slots <= MaxCuckooGrowth*float64(first.buckets*first.slots) &&
		slots*float64(c.cfg.fpBits) <= maxBloomBits // a larger one could not be encoded
}

// onlyCopiesOf reports whether both buckets of the key hashed to h hold
// nothing but its fingerprint.
func (t *cuckooTable) onlyCopiesOf(h uint64) bool {
	fp, i1 := t.locate(h)
	for _, i := range [2]uint64{i1, t.alt(i1, fp)} {
		for j := uint64(0); j < t.slots; j++ {
			if t.table.get(i*t.slots+j) != fp {
				return false
			}
		}
	}
	return true
}

// evict makes room for the key hashed to h in t by a chain of evictions,
// or undoes the chain and reports false.
func (c *Cuckoo) evict(t *cuckooTable, h uint64) bool {
	fp, i1 := t.locate(h)
	i := i1
	if c.random()&1 == 1 {
		i = t.alt(i1, fp)
	}
	c.path = c.path[:0]
	carry := fp
	for range maxKicks {
		j := c.random() % t.slots
		s := i*t.slots + j
		carry = t.table.swap(s, carry)
		c.path = append(c.path, kick{bucket: i, slot: j})
		i = t.alt(i, carry)
		if t.put(i, carry) {
			t.count++
			return true
		}
	}
	// Undo the chain in reverse: each swap is its own inverse.
	for n := len(c.path) - 1; n >= 0; n-- {
		s := c.path[n].bucket*t.slots + c.path[n].slot
		carry = t.table.swap(s, carry)
	}
	return false
}

// Remove deletes one copy of key's fingerprint, or returns ErrAbsent and
// changes nothing if none of its buckets holds it. See the type's doc
// on removing keys that were never added.
func (c *Cuckoo) Remove(key []byte) error { return c.RemoveHash(Hash(key)) }

// RemoveHash is Remove for a key hashed with Hash or HashString.
func (c *Cuckoo) RemoveHash(h uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mustBeBuilt()
	for n := len(c.tables) - 1; n >= 0; n-- {
		t := c.tables[n]
		fp, i1 := t.locate(h)
		for _, i := range [2]uint64{i1, t.alt(i1, fp)} {
			if j := t.find(i, fp); j >= 0 {
				t.table.set(i*t.slots+uint64(j), 0)
				t.count--
				return nil
			}
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
	c.mustBeBuilt()
	for _, t := range c.tables {
		if t.contains(h) {
			return true
		}
	}
	return false
}

// Count returns the number of fingerprints stored.
func (c *Cuckoo) Count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, t := range c.tables {
		n += t.count
	}
	return n
}

// Capacity returns the number of slots of every table, b per bucket. Add
// starts to fail (or to grow the filter) at about 95% of it with b = 4.
func (c *Cuckoo) Capacity() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return int(c.totalSlots())
}

func (c *Cuckoo) totalSlots() uint64 {
	n := uint64(0)
	for _, t := range c.tables {
		n += t.buckets * t.slots
	}
	return n
}

// LoadFactor returns Count()/Capacity().
func (c *Cuckoo) LoadFactor() float64 { return float64(c.Count()) / float64(c.Capacity()) }

// FingerprintBits returns f, the bits stored per key.
func (c *Cuckoo) FingerprintBits() int { return int(c.cfg.fpBits) }

// BucketSize returns b, the fingerprints per bucket.
func (c *Cuckoo) BucketSize() int { return int(c.cfg.slots) }

// Expansion returns the growth factor of a full filter (0: none).
func (c *Cuckoo) Expansion() int { return int(c.cfg.expansion) }

// Tables returns the number of tables: 1, plus one per expansion.
func (c *Cuckoo) Tables() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.tables)
}

// Buckets returns the number of buckets of every table.
func (c *Cuckoo) Buckets() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := uint64(0)
	for _, t := range c.tables {
		n += t.buckets
	}
	return n
}

// SizeBytes returns the memory the packed slots occupy.
func (c *Cuckoo) SizeBytes() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, t := range c.tables {
		n += len(t.table.words) * 8
	}
	return n
}

// EstimatedFPR returns the expected false-positive rate at the current
// loads: in each table a lookup compares against about 2bα stored
// fingerprints (α that table's load), each equal to the key's with
// probability 1/(2^f - 1); a key is a false positive if any table says so.
func (c *Cuckoo) EstimatedFPR() float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	pass := 1.0
	for _, t := range c.tables {
		compared := 2 * float64(t.count) / float64(t.buckets)
		pass *= math.Exp(compared * math.Log1p(-1/float64(uint64(1)<<c.cfg.fpBits-1)))
	}
	return 1 - pass
}

// Reset removes every key, and every table but the first.
func (c *Cuckoo) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables = []*cuckooTable{c.tables[0]}
	clear(c.tables[0].table.words)
	c.tables[0].count = 0
}

func (c *Cuckoo) String() string {
	return fmt.Sprintf("cuckoo(%d buckets x %d slots in %d table(s), f=%d bits, %d bytes, count=%d, expansion %d)",
		c.Buckets(), c.cfg.slots, c.Tables(), c.cfg.fpBits, c.SizeBytes(), c.Count(), c.cfg.expansion)
}
