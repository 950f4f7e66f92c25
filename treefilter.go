package bloomkv

import (
	"math"
	"math/bits"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// The tree-wide filter (Options.TreeFilter; after Chucky, Dayan and
// Twitto, SIGMOD 2021) is one cuckoo filter over every table of a version
// whose entries say which level holds a key. An absent Get asks it once
// instead of one filter per sorted run, and a present Get goes straight to
// the level it names. The per-table filters stay: they are the format's
// promise, the fallback when the tree filter is off or broken, and a
// second check on the tables the tree filter sends a Get to.
//
// # Entries
//
// A bucket is one uint64 of four 16-bit slots. A slot holds a prefix
// code of a level (0..6, manifest.NumLevels = 7) and a fingerprint in the
// bits left: 10 to 15 of them (treefilter_code.go); an all-zero slot is
// empty. A key has one entry per table holding a
// point entry for it (a value or a point tombstone), with that table's
// level: the filter is a multiset, so the same key in level 0 twice and in
// level 3 has three entries, and removing one table's keys removes exactly
// one of them. A lookup returns the set of levels whose entries match the
// key's fingerprint in its two buckets: empty means no table holds the key
// (the filter never forgets an entry; only a fingerprint collision can
// add a level, never drop one).
//
// The level an entry carries is the level its table had when the entry
// was inserted: its tag. A table moved down unchanged (a trivial move)
// keeps its entries and their tag, and the filter records the move
// (moved, movedInto), so a Get whose key matches tag t also reads the
// levels tables carrying t moved to: updates never need a table's keys
// but from the flush or compaction that wrote or read it.
//
// # Buckets and the alternate bucket
//
// The table has any number n of buckets (sized to the keys, not rounded to
// a power of two): a key's first bucket is its hash reduced to [0, n) by
// multiply-high, and the alternate of bucket i for fingerprint fp is
// (c(fp) - i) mod n, an involution (the alternate of the alternate is i),
// so an entry can move between its two buckets knowing only its
// fingerprint, as in a cuckoo filter.
//
// # Snapshots, not locks
//
// A treeFilter is immutable once published: each version that changes
// the set of tables gets its own copy (copy-on-write), attached to the
// version, so a Get reads the filter of the very version it reads, with
// no lock, while the next one is made (treefilter_db.go). A copy costs a
// memcpy of the buckets (~2.2 MB per million entries at 90% load).

const (
	tfSlots     = 4 // slots per bucket
	tfMaxKicks  = 500
	tfMinBucket = 64
	// tfOpenLoad is the load a filter is built to from a settled tree
	// (Open); tfGrowLoad the load it is rebuilt to when the tree outgrows
	// it, leaving room to grow before the next rebuild; tfMaxLoad the
	// load past which an update rebuilds instead (a 4-slot cuckoo table
	// with tfMaxKicks fills to ~96% before insertions start failing).
	tfOpenLoad = 0.92
	tfGrowLoad = 0.55
	tfMaxLoad  = 0.95
)

// treeFilter is one version's tree-wide filter. Immutable once published.
type treeFilter struct {
	buckets []uint64
	entries int
	code    *tfCode                 // the level code, fixed at build
	byTag   [manifest.NumLevels]int // entries per tag (level carried)
	// v is the version the filter describes: the next version's filter
	// is this one plus the tables v lacks, minus those it has alone.
	v *manifest.Version
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
	moved     map[uint64]tfMoved
	movedInto [manifest.NumLevels]uint8
}

// tfMoved is a moved table's tag and level.
type tfMoved struct{ tag, level uint8 }

// tfHash returns the 64-bit hash the tree filter uses for key: the
// per-table filters' xxHash64, remixed (a bijection, the murmur3
// finalizer) so the tree filter's fingerprint and bucket bits are not
// the bits a table's bloom filter probes with: a key that collides in
// one is no likelier to collide in the other.
func tfHash(key []byte) uint64 {
	h := filter.Hash(key) ^ 0x9e3779b97f4a7c15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func newTreeFilter(expected int, load float64, code *tfCode) *treeFilter {
	n := int(math.Ceil(float64(expected) / (tfSlots * load)))
	return &treeFilter{buckets: make([]uint64, max(n, tfMinBucket)), code: code, rangeDelFiles: map[uint64]int{}}
}

// index returns h's first bucket and 16-bit fingerprint.
func (t *treeFilter) index(h uint64) (uint64, uint16) {
	return (uint64(uint32(h)) * uint64(len(t.buckets))) >> 32, uint16(h >> 32)
}

// alt returns the other bucket of an entry in bucket i whose
// fingerprint's top tfAltBits are a.
func (t *treeFilter) alt(i, a uint64) uint64 {
	n := uint64(len(t.buckets))
	c := (uint64(uint32((a+1)*0x5bd1e9955bd1e995>>16)) * n) >> 32
	if c >= i {
		return c - i
	}
	return c + n - i
}

// levels returns the set of tags (bit l for level l) whose entries match
// key hash h; 0 means no table of the version holds the key.
func (t *treeFilter) levels(h uint64) uint8 {
	i, fp := t.index(h)
	return t.code.match(t.buckets[i], fp) | t.code.match(t.buckets[t.alt(i, uint64(fp>>tfMaxCode))], fp)
}

// put stores entry e in a free slot of bucket i, if it has one.
func (t *treeFilter) put(i uint64, e uint16) bool {
	b := t.buckets[i]
	for s := 0; s < tfSlots; s++ {
		if uint16(b>>(16*s)) == 0 {
			t.buckets[i] = b | uint64(e)<<(16*s)
			return true
		}
	}
	return false
}

// insert adds an entry for key hash h carrying level. false means an
// entry was lost (the table is too full): the filter must then be
// discarded.
// REQUIRES: t is not published.
func (t *treeFilter) insert(h uint64, level int, rng *uint64) bool {
	i, fp := t.index(h)
	e := t.code.entry(fp, level)
	t.entries++
	t.byTag[level]++
	if t.put(i, e) || t.put(t.alt(i, uint64(fp>>tfMaxCode)), e) {
		return true
	}
	if xorshift(rng)&1 == 1 {
		i = t.alt(i, uint64(fp>>tfMaxCode))
	}
	for range tfMaxKicks {
		s := xorshift(rng) % tfSlots
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

// remove deletes one entry for key hash h carrying level; false if there
// is none (the filter does not describe the tables it was told it does).
// REQUIRES: t is not published.
func (t *treeFilter) remove(h uint64, level int) bool {
	i, fp := t.index(h)
	e := t.code.entry(fp, level)
	if t.del(i, e) || t.del(t.alt(i, uint64(fp>>tfMaxCode)), e) {
		t.entries--
		t.byTag[level]--
		return true
	}
	return false
}

func (t *treeFilter) del(i uint64, e uint16) bool {
	b := t.buckets[i]
	for s := 0; s < tfSlots; s++ {
		if uint16(b>>(16*s)) == e {
			t.buckets[i] = b &^ (0xffff << (16 * s))
			return true
		}
	}
	return false
}

// clone returns an unpublished copy for the next version to change.
func (t *treeFilter) clone() *treeFilter {
	c := *t
	c.buckets = append([]uint64(nil), t.buckets...)
	return &c
}

// capacity is the number of slots.
func (t *treeFilter) capacity() int { return len(t.buckets) * tfSlots }

// memory is the bytes the filter holds.
func (t *treeFilter) memory() int64 {
	return int64(len(t.buckets))*8 + int64(len(t.rangeDelFiles))*16 + int64(len(t.moved))*16
}

// setRangeDels records whether table fileNum of level holds range
// tombstones (has) and recomputes rangeDelLevels. The map is copied
// before a change: a clone shares it with the published original.
func (t *treeFilter) setRangeDels(fileNum uint64, level int, has bool) {
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

// fprTheory is the rate at which an absent key matches some entry: each of
// the 2 × 4 slots it looks at holds an entry of level l with probability
// load_l (that level's entries over the slots), which matches with
// probability 2^-(16 - len(l)) (treefilter_code.go).
func (t *treeFilter) fprTheory() float64 {
	var p float64
	for l, n := range t.byTag {
		p += float64(n) / float64(t.capacity()) * math.Ldexp(1, int(t.code.lens[l])-tfSlotBits)
	}
	return 1 - math.Pow(1-p, 2*tfSlots)
}

// probeLevels is the set of levels a Get for a key whose entries carry
// the tags mask must read: those levels, the levels tables carrying those
// tags moved to, and every level above the deepest of them holding range
// tombstones (which may hide the key's value below).
func (t *treeFilter) probeLevels(mask uint8) uint8 {
	want := mask
	if len(t.moved) > 0 {
		for m := mask; m != 0; m &= m - 1 {
			want |= t.movedInto[bits.TrailingZeros8(m)]
		}
	}
	deepest := bits.Len8(want) - 1
	return want | t.rangeDelLevels&(1<<(deepest+1)-1)
}

// tagOf returns the level the entries of table fileNum, in level, carry.
func (t *treeFilter) tagOf(fileNum uint64, level int) int {
	if m, ok := t.moved[fileNum]; ok {
		return int(m.tag)
	}
	return level
}

// setMoved records that table fileNum is in level with entries carrying
// tag (tag == level, or level < 0 for a table gone: no record) and
// recomputes movedInto. The map is copied before a change.
func (t *treeFilter) setMoved(fileNum uint64, level, tag int) {
	_, had := t.moved[fileNum]
	keep := level >= 0 && tag != level
	if !had && !keep {
		return
	}
	m := make(map[uint64]tfMoved, len(t.moved)+1)
	for k, v := range t.moved {
		m[k] = v
	}
	if keep {
		m[fileNum] = tfMoved{uint8(tag), uint8(level)}
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
