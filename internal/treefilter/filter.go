package treefilter

// The cuckoo filter: buckets, lookup, insertion and removal, and the
// records of range tombstones and moved tables a lookup needs.

import (
	"math"
	"math/bits"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

const (
	slots     = 4 // slots per bucket
	maxKicks  = 500
	minBucket = 64
)

// Filter is one version's tree-wide filter. Immutable once published; a
// copy of the value shares its contents (see the package doc).
type Filter struct {
	buckets []uint64
	entries int
	built   int                     // entries when built or loaded (MarkBuilt): the shrink rule's base
	code    *Code                   // the level code, fixed at build
	byTag   [manifest.NumLevels]int // entries per tag (level carried)
	// rangeDelFiles maps the tables holding range tombstones to their
	// level; rangeDelLevels has bit l set when level l holds one. A Get
	// sent to a deep level must still see the tombstones above it.
	rangeDelFiles  map[uint64]int
	rangeDelLevels uint8
	// moved maps each table whose entries carry a level other than the
	// one it is in (it moved down unchanged, in a trivial move, and its
	// keys were not read again) to the level its entries carry (its
	// tag) and the one it is in; movedInto[t] has bit l set when a table
	// in level l carries tag t. Copied before a change, like
	// rangeDelFiles.
	moved     map[uint64]movedTable
	movedInto [manifest.NumLevels]uint8
}

// movedTable is a moved table's tag and level.
type movedTable struct{ tag, level uint8 }

// Hash returns the 64-bit hash the tree filter uses for key: the
// per-table filters' xxHash64, remixed (a bijection, the murmur3
// finalizer) so the tree filter's fingerprint and bucket bits are not
// the bits a table's bloom filter probes with: a key that collides in
// one is no likelier to collide in the other. It is part of the saved
// format: a new hash is a new format version.
func Hash(key []byte) uint64 {
	h := filter.Hash(key) ^ 0x9e3779b97f4a7c15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// New returns an empty filter sized for expected entries at load, with
// the level code code.
func New(expected int, load float64, code *Code) *Filter {
	n := int(math.Ceil(float64(expected) / (slots * load)))
	return &Filter{buckets: make([]uint64, max(n, minBucket)), code: code, rangeDelFiles: map[uint64]int{}}
}

// index returns h's first bucket and 16-bit fingerprint.
func (t *Filter) index(h uint64) (uint64, uint16) {
	return (uint64(uint32(h)) * uint64(len(t.buckets))) >> 32, uint16(h >> 32)
}

// alt returns the other bucket of an entry in bucket i whose
// fingerprint's top altBits are a.
func (t *Filter) alt(i, a uint64) uint64 {
	n := uint64(len(t.buckets))
	c := (uint64(uint32((a+1)*0x5bd1e9955bd1e995>>16)) * n) >> 32
	if c >= i {
		return c - i
	}
	return c + n - i
}

// Lookup returns the set of tags (bit l for level l) whose entries match
// key hash h (from Hash); 0 means no table the filter describes holds
// the key.
func (t *Filter) Lookup(h uint64) uint8 {
	i, fp := t.index(h)
	// Both buckets are loaded before either is matched, so that their
	// cache misses (the filter is tens of MiB at 10M keys) overlap.
	b1, b2 := t.buckets[i], t.buckets[t.alt(i, uint64(fp>>maxCode))]
	return t.code.match(b1, fp) | t.code.match(b2, fp)
}

// put stores entry e in a free slot of bucket i, if it has one.
func (t *Filter) put(i uint64, e uint16) bool {
	b := t.buckets[i]
	for s := 0; s < slots; s++ {
		if uint16(b>>(16*s)) == 0 {
			t.buckets[i] = b | uint64(e)<<(16*s)
			return true
		}
	}
	return false
}

// Insert adds an entry for key hash h carrying level (its tag); rng is
// the state of the cuckoo kicks' generator, any non-zero value. false
// means an entry was lost (the table is too full): the filter must then
// be discarded.
// REQUIRES: t is not published.
func (t *Filter) Insert(h uint64, level int, rng *uint64) bool {
	i, fp := t.index(h)
	e := t.code.entry(fp, level)
	t.entries++
	t.byTag[level]++
	if t.put(i, e) || t.put(t.alt(i, uint64(fp>>maxCode)), e) {
		return true
	}
	if xorshift(rng)&1 == 1 {
		i = t.alt(i, uint64(fp>>maxCode))
	}
	for range maxKicks {
		s := xorshift(rng) % slots
		old := uint16(t.buckets[i] >> (16 * s))
		t.buckets[i] = t.buckets[i]&^(0xffff<<(16*s)) | uint64(e)<<(16*s)
		e = old
		i = t.alt(i, t.code.altKey(e))
		if t.put(i, e) {
			return true
		}
	}
	return false
}

// Remove deletes one entry for key hash h carrying level; false if there
// is none (the filter does not describe the tables it was told it does).
// REQUIRES: t is not published.
func (t *Filter) Remove(h uint64, level int) bool {
	i, fp := t.index(h)
	e := t.code.entry(fp, level)
	if t.del(i, e) || t.del(t.alt(i, uint64(fp>>maxCode)), e) {
		t.entries--
		t.byTag[level]--
		return true
	}
	return false
}

func (t *Filter) del(i uint64, e uint16) bool {
	b := t.buckets[i]
	for s := 0; s < slots; s++ {
		if uint16(b>>(16*s)) == e {
			t.buckets[i] = b &^ (0xffff << (16 * s))
			return true
		}
	}
	return false
}

// Clone returns an unpublished copy to change.
func (t *Filter) Clone() *Filter {
	c := *t
	c.buckets = append([]uint64(nil), t.buckets...)
	return &c
}

// Entries is the number of entries.
func (t *Filter) Entries() int { return t.entries }

// Capacity is the number of slots.
func (t *Filter) Capacity() int { return len(t.buckets) * slots }

// Memory is the bytes the filter holds.
func (t *Filter) Memory() int64 {
	return int64(len(t.buckets))*8 + int64(len(t.rangeDelFiles))*16 + int64(len(t.moved))*16
}

// SetRangeDels records whether table fileNum of level holds range
// tombstones (has) and recomputes RangeDelLevels. The map is copied
// before a change: a clone shares it with the published original.
// REQUIRES: t is not published.
func (t *Filter) SetRangeDels(fileNum uint64, level int, has bool) {
	if l, ok := t.rangeDelFiles[fileNum]; ok == has && (!has || l == level) {
		return
	}
	m := make(map[uint64]int, len(t.rangeDelFiles)+1)
	for k, v := range t.rangeDelFiles {
		m[k] = v
	}
	if has {
		m[fileNum] = level
	} else {
		delete(m, fileNum)
	}
	t.rangeDelFiles = m
	t.rangeDelLevels = 0
	for _, l := range m {
		t.rangeDelLevels |= 1 << l
	}
}

// HasRangeDels reports whether table fileNum is recorded as holding range
// tombstones.
func (t *Filter) HasRangeDels(fileNum uint64) bool {
	_, ok := t.rangeDelFiles[fileNum]
	return ok
}

// RangeDelLevels has bit l set when a table of level l holds range
// tombstones.
func (t *Filter) RangeDelLevels() uint8 { return t.rangeDelLevels }

// FPRTheory is the rate at which an absent key matches some entry: each of
// the 2 × 4 slots it looks at holds an entry of level l with probability
// load_l (that level's entries over the slots), which matches with
// probability 2^-(16 - len(l)) (code.go).
func (t *Filter) FPRTheory() float64 {
	var p float64
	for l, n := range t.byTag {
		p += float64(n) / float64(t.Capacity()) * math.Ldexp(1, int(t.code.lens[l])-slotBits)
	}
	return 1 - math.Pow(1-p, 2*slots)
}

// ProbeLevels is the set of levels a Get for a key whose entries carry
// the tags mask (from Lookup) must read: those levels, the levels tables
// carrying those tags moved to, and every level above the deepest of them
// holding range tombstones (which may hide the key's value below).
func (t *Filter) ProbeLevels(mask uint8) uint8 {
	want := mask
	if len(t.moved) > 0 {
		for m := mask; m != 0; m &= m - 1 {
			want |= t.movedInto[bits.TrailingZeros8(m)]
		}
	}
	deepest := bits.Len8(want) - 1
	return want | t.rangeDelLevels&(1<<(deepest+1)-1)
}

// AnyMoved reports whether some table's entries carry a level other than
// its own (it moved down unchanged).
func (t *Filter) AnyMoved() bool { return len(t.moved) > 0 }

// NumMoved is the number of tables recorded as moved.
func (t *Filter) NumMoved() int { return len(t.moved) }

// Moved returns the tag and level recorded for table fileNum, if it moved.
func (t *Filter) Moved(fileNum uint64) (tag, level int, ok bool) {
	m, ok := t.moved[fileNum]
	return int(m.tag), int(m.level), ok
}

// TagOf returns the level the entries of table fileNum, in level, carry.
func (t *Filter) TagOf(fileNum uint64, level int) int {
	if m, ok := t.moved[fileNum]; ok {
		return int(m.tag)
	}
	return level
}

// SetMoved records that table fileNum is in level with entries carrying
// tag (tag == level, or level < 0 for a table gone: no record). The map
// is copied before a change.
// REQUIRES: t is not published.
func (t *Filter) SetMoved(fileNum uint64, level, tag int) {
	_, had := t.moved[fileNum]
	keep := level >= 0 && tag != level
	if !had && !keep {
		return
	}
	m := make(map[uint64]movedTable, len(t.moved)+1)
	for k, v := range t.moved {
		m[k] = v
	}
	if keep {
		m[fileNum] = movedTable{uint8(tag), uint8(level)}
	} else {
		delete(m, fileNum)
	}
	t.moved = m
	t.movedInto = [manifest.NumLevels]uint8{}
	for _, v := range m {
		t.movedInto[v.tag] |= 1 << v.level
	}
}

func xorshift(s *uint64) uint64 {
	x := *s
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*s = x
	return x
}
