package filter

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// The fuse variant (VariantFuse) is a binary fuse filter (Graf and Lemire,
// "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022): an array
// of 8-bit fingerprints in which every key owns three slots whose XOR is
// the key's fingerprint. An absent key's three slots XOR to its
// fingerprint with probability 2^-8 = 0.39%, whatever the fill; the array
// holds about 1.13 slots per key for large tables (9.0 bits per key), so
// at equal memory it beats a bloom filter's 1.7% at 9 bits. It cannot take
// keys one at a time: the whole key set is needed at once, which is what
// a table's flush or compaction has.
//
// Slots. The array is segmentCount + 2 segments of L = 2^e slots. A key
// hashed to h (below) starts in segment s = reduce(h, segmentCount), from
// h's high bits, and owns slot o_i of segment s + i for i = 0, 1, 2, where
// o_0, o_1, o_2 are bits [0, e), [18, 18+e) and [36, 36+e) of h (e <= 18).
// Its fingerprint is the top byte of h * 0x9e3779b97f4a7c15. The three
// slots of a key lie in three consecutive segments; that locality (the
// "fuse" of spatially coupled hypergraphs) is what lets construction
// succeed at 1.13 slots per key where independent slots need 1.23.
//
// Construction (peeling). Count, for each slot, the keys that own it and
// the XOR of their hashes. A slot owned by exactly one key names that key:
// record (slot, key) and remove the key from its three slots, which may
// leave others owned once. If every key gets recorded, walk the records in
// reverse and set each recorded slot so that its key's three slots XOR to
// the key's fingerprint (the key's other two slots are final by then).
// Peeling fails when a set of keys covers its slots at least twice each,
// a few percent of the time at the sizes below: the builder then tries the
// next seed. Keys hash to h = mix64(Hash(key) + seed), so a new seed gives
// new slots; identical hashes never peel and are removed first.
//
// Block layout, little-endian, the variant byte last like every variant:
//
//	+----------------------------+------+---------+--------+-----+-------+---------+
//	| fingerprints: (segmentCount | seed | segment | numKeys| e   | bits  | variant |
//	|  + 2) * 2^e bytes           | u64  | Count   | u32    | u8  | u8 (8)| u8 (3)  |
//	|                            |      | u32     |        |     |       |         |
//	+----------------------------+------+---------+--------+-----+-------+---------+
//
// e is at most 18; segmentCount is at least 1 (0 only for an empty filter,
// whose fingerprint array is empty too and which answers "absent" to
// everything); numKeys, the keys the builder was given, only informs
// statistics. The fingerprint
// width is recorded so that a later 16-bit form could share the variant;
// this version reads only 8. These rules are part of the on-disk format
// and never change.
const (
	fuseTrailerLen       = 8 + 4 + 4 + 1 + 1 + 1
	fuseMaxSegmentLogLen = 18
	fuseFingerprintBits  = 8
	// fuseOffsetShift is the spacing of the three in-segment offsets in h.
	fuseOffsetShift  = 18
	fuseFPMultiplier = 0x9e3779b97f4a7c15
	// fuseMaxKeys bounds the keys of one fuse filter so that slot numbers
	// fit in 32 bits (a table holds far fewer).
	fuseMaxKeys = 1 << 31
)

// FuseFPR is the false-positive rate of a fuse filter block: 2^-8.
const FuseFPR = 1.0 / (1 << fuseFingerprintBits)

// fuseShape is the geometry of a fuse filter's array.
type fuseShape struct {
	segmentLogLen uint8  // e: segments hold 2^e slots
	segmentCount  uint32 // segments a key may start in
}

func (s fuseShape) segmentLen() uint64 { return 1 << s.segmentLogLen }

// slots returns the array length, (segmentCount + 2) * 2^e.
func (s fuseShape) slots() uint64 {
	if s.segmentCount == 0 {
		return 0
	}
	return (uint64(s.segmentCount) + 2) << s.segmentLogLen
}

// fuseSizeFactor is the slots per key the builder aims for with n keys:
// 0.875 + 0.25 ln(10^6)/ln(n), at least 1.125 (Graf and Lemire's rule).
// Small key sets need more room to peel reliably: 1.125 from a million
// keys up, 1.175 at 100,000, 1.21 at 35,000 (a 2 MiB table of small
// entries), 1.375 at 1,000. Below these the first seed mostly fails
// (measured with this package's hashing; TestFuseConstructionRetries
// checks it mostly succeeds at them).
func fuseSizeFactor(n int) float64 {
	if n < 2 {
		return 3
	}
	return max(1.125, 0.875+0.25*math.Log(1e6)/math.Log(float64(n)))
}

// fuseShapeFor sizes a fuse filter for n keys: segments of 2^e slots with
// e = floor(log_3.33(n) + 2.25) clamped to [1, 18], and enough segments for
// n * fuseSizeFactor(n) slots in all.
func fuseShapeFor(n int) fuseShape {
	if n == 0 {
		return fuseShape{}
	}
	e := int(math.Floor(math.Log(float64(n))/math.Log(3.33) + 2.25))
	e = min(max(e, 1), fuseMaxSegmentLogLen)
	want := math.Ceil(float64(n) * fuseSizeFactor(n))
	count := int64(math.Ceil(want/float64(uint64(1)<<e))) - 2
	return fuseShape{segmentLogLen: uint8(e), segmentCount: uint32(max(count, 1))}
}

// fuseMix hashes a key's Hash with the filter's seed.
func fuseMix(keyHash, seed uint64) uint64 { return mix64(keyHash + seed) }

// fuseFingerprint returns the 8-bit fingerprint of a mixed hash.
func fuseFingerprint(h uint64) uint8 { return uint8((h * fuseFPMultiplier) >> 56) }

// fuseSlots returns the three slots a mixed hash owns.
func fuseSlots(h uint64, s fuseShape) (uint32, uint32, uint32) {
	e := s.segmentLogLen
	mask := uint64(1)<<e - 1
	start, _ := bits.Mul64(h, uint64(s.segmentCount))
	base := start << e
	p0 := base + h&mask
	p1 := base + (1 << e) + (h>>fuseOffsetShift)&mask
	p2 := base + (2 << e) + (h>>(2*fuseOffsetShift))&mask
	return uint32(p0), uint32(p1), uint32(p2)
}

// fuseSeed returns the seed of the builder's attempt-th try: a fixed
// sequence (SplitMix64's increment), so the same keys always give the same
// block.
func fuseSeed(attempt int) uint64 { return uint64(attempt+1) * 0x9e3779b97f4a7c15 }

// fuseBuilder holds the scratch space of one construction.
type fuseBuilder struct {
	mixed   []uint64   // the keys' mixed hashes, in order of start segment
	cells   []fuseCell // per slot
	stack   []uint32   // slots owned once, to peel
	order   []uint32   // peeled slots, in order
	owner   []uint64   // the mixed hash of each peeled slot's key
	buckets []int      // radix partition counts
}

// fuseCell is what construction knows of a slot: how many keys own it and
// the XOR of their mixed hashes (which is the key, when one is left). The
// two share a cache line: peeling reads both at random slots.
type fuseCell struct {
	xorHash uint64
	count   uint32
}

// fuseRadixBits is the most high bits of the mixed hashes the builder
// partitions them by, so that it visits the slots roughly in order.
const fuseRadixBits = 12

// buildFuse builds the fingerprint array for keyHashes (Hash values,
// duplicates allowed: they are removed, which may reorder keyHashes),
// starting from shape. It always succeeds: after every 16 failed seeds the
// array grows by one segment.
func buildFuse(keyHashes []uint64, shape fuseShape) (fingerprints []byte, seed uint64, _ fuseShape) {
	if len(keyHashes) == 0 {
		return nil, 0, fuseShape{}
	}
	var b fuseBuilder
	deduped := false
	for attempt := 0; ; attempt++ {
		seed = fuseSeed(attempt)
		if fp, ok := b.try(keyHashes, seed, shape); ok {
			return fp, seed, shape
		}
		if !deduped {
			// Equal hashes can never be peeled: remove them once. (The
			// block builder drops consecutive duplicates already; others
			// are rare, so this runs only after a failure.)
			deduped = true
			slices.Sort(keyHashes)
			if k := slices.Compact(keyHashes); len(k) != len(keyHashes) {
				keyHashes = k
				shape = fuseShapeFor(len(keyHashes))
			}
		}
		if attempt%16 == 15 {
			shape.segmentCount++
		}
	}
}

// try attempts one construction with seed.
func (b *fuseBuilder) try(keyHashes []uint64, seed uint64, shape fuseShape) ([]byte, bool) {
	slots := int(shape.slots())
	if cap(b.cells) < slots {
		b.cells = make([]fuseCell, slots)
	}
	b.cells = b.cells[:slots]
	clear(b.cells)
	b.partition(keyHashes, seed, shape)
	cells := b.cells
	for _, h := range b.mixed {
		p0, p1, p2 := fuseSlots(h, shape)
		cells[p0].count++
		cells[p0].xorHash ^= h
		cells[p1].count++
		cells[p1].xorHash ^= h
		cells[p2].count++
		cells[p2].xorHash ^= h
	}
	// Peel in slot order, following each peeled key to the slots it
	// frees at once: a key's slots lie within three segments, so the work
	// stays in a window of the arrays that the caches hold.
	n := len(b.mixed)
	if cap(b.order) < n {
		b.order, b.owner = make([]uint32, 0, n), make([]uint64, 0, n)
	}
	b.order, b.owner = b.order[:0], b.owner[:0]
	for i := range cells {
		if cells[i].count != 1 {
			continue
		}
		b.stack = append(b.stack[:0], uint32(i))
		for len(b.stack) > 0 {
			j := b.stack[len(b.stack)-1]
			b.stack = b.stack[:len(b.stack)-1]
			if cells[j].count != 1 {
				continue // peeled since it was pushed
			}
			h := cells[j].xorHash
			b.order = append(b.order, j)
			b.owner = append(b.owner, h)
			p0, p1, p2 := fuseSlots(h, shape)
			for _, p := range [3]uint32{p0, p1, p2} {
				c := &cells[p]
				c.count--
				c.xorHash ^= h
				if c.count == 1 {
					b.stack = append(b.stack, p)
				}
			}
		}
	}
	if len(b.order) != n {
		return nil, false
	}
	fp := make([]byte, slots)
	for j := len(b.order) - 1; j >= 0; j-- {
		h := b.owner[j]
		p0, p1, p2 := fuseSlots(h, shape)
		// The slot being set is one of the three and still 0.
		fp[b.order[j]] = fuseFingerprint(h) ^ fp[p0] ^ fp[p1] ^ fp[p2]
	}
	return fp, true
}

// partition fills b.mixed with the keys' mixed hashes ordered by their
// high bits (a counting sort), hence by start segment, which is monotonic
// in h: counting then touches the arrays nearly sequentially instead of
// at random, several times faster once they outgrow the CPU caches.
func (b *fuseBuilder) partition(keyHashes []uint64, seed uint64, shape fuseShape) {
	radix := bits.Len32(shape.segmentCount)
	radix = min(max(radix, 1), fuseRadixBits)
	shift := 64 - radix
	b.buckets = resetSliceInt(b.buckets, 1<<radix+1)
	for _, kh := range keyHashes {
		b.buckets[fuseMix(kh, seed)>>shift+1]++
	}
	for i := 1; i < len(b.buckets); i++ {
		b.buckets[i] += b.buckets[i-1]
	}
	if cap(b.mixed) < len(keyHashes) {
		b.mixed = make([]uint64, len(keyHashes))
	}
	b.mixed = b.mixed[:len(keyHashes)]
	for _, kh := range keyHashes {
		h := fuseMix(kh, seed)
		i := h >> shift
		b.mixed[b.buckets[i]] = h
		b.buckets[i]++
	}
}

func resetSliceInt(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// encodeFuseBlock builds the fuse filter block for keyHashes. The block's
// key count is len(keyHashes), as for the bloom variants (it counts a key
// the builder saw twice, apart, twice; the filter holds it once).
func encodeFuseBlock(keyHashes []uint64) []byte {
	n := len(keyHashes)
	if uint64(n) > fuseMaxKeys {
		// Slot numbers would not fit in 32 bits. Unreachable for a table
		// (it would be tens of gigabytes); a standard block keeps every key.
		bb := &BlockBuilder{bitsPerKey: 10, variant: VariantStandard, hashes: keyHashes}
		return bb.Finish()
	}
	fp, seed, shape := buildFuse(keyHashes, fuseShapeFor(n))
	out := make([]byte, len(fp), len(fp)+fuseTrailerLen)
	copy(out, fp)
	out = binary.LittleEndian.AppendUint64(out, seed)
	out = binary.LittleEndian.AppendUint32(out, shape.segmentCount)
	out = binary.LittleEndian.AppendUint32(out, uint32(min(uint64(n), math.MaxUint32)))
	return append(out, shape.segmentLogLen, fuseFingerprintBits, byte(VariantFuse))
}

// fuseMayContain probes a decoded fuse block.
func (b Block) fuseMayContain(keyHash uint64) bool {
	if b.fuse.segmentCount == 0 {
		return false
	}
	h := fuseMix(keyHash, b.fuseSeed)
	p0, p1, p2 := fuseSlots(h, b.fuse)
	a := b.array
	return fuseFingerprint(h) == a[p0]^a[p1]^a[p2]
}
