package filter

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// RangeFilter answers "may the set hold a key in [lo, hi]?" for short
// ranges, never answering no for a range that holds a key. It is the
// design of Grafite (Costa, Ferragina, Vinciguerra, SIGMOD 2024), chosen
// over a Rosetta-style hierarchy of prefix Bloom filters by measurement
// (docs/filter-library.md, "Range filters"):
//
//   - Keys are 64-bit integers (byte keys map onto them with RangeKey, an
//     order-preserving map). The universe is cut into blocks of L = 2^logL
//     integers; a key x is hashed to h(x) = (q(x >> logL) + x) mod r, where
//     q is a seeded 64-bit mixer standing in for the paper's
//     pairwise-independent family. Inside a block h is a shift, so it
//     keeps the order and distances of the block's keys.
//   - The sorted h values are stored in an Elias-Fano sequence: lowBits
//     bits per value verbatim, the rest in unary in a bit vector of about
//     2 bits per value, so b bits per key buy r = n * 2^(b-2) (see
//     NewRangeFilter for fractional b).
//   - A query [a, b] is cut at block boundaries; each piece maps to one
//     interval of h values (two, where it wraps past r), and the filter
//     answers maybe when the sequence holds a value there.
//
// A key in the same block as the query lands at its true distance from
// it, so outside the query's interval; only keys of other blocks, placed
// at random by q, can collide. Hence the false-positive rate of an empty
// range of w integers is at most 1 - (1 - w/r)^n ~ w / 2^(b-2) whatever
// the query distribution, including ranges that start right after a key
// (the case that breaks prefix-based filters). Ranges wider than
// MaxRangeBlocks blocks are answered maybe without looking.
//
// A RangeFilter is immutable and safe for concurrent use.
type RangeFilter struct {
	n       uint64 // values stored
	r       uint64 // hash range: values lie in [0, r)
	seed    uint64
	logL    uint8 // block width L = 2^logL, L <= r/2
	lowBits uint8
	// prefix is stripped from byte keys before RangeKey maps them; every
	// key the filter was built from starts with it (MayContainKeys).
	prefix []byte
	low    []uint64 // n values of lowBits bits, packed little-endian
	high   []uint64 // unary high parts: value i sets bit (v_i >> lowBits) + i
	// highBits is the length of high in bits: n + (r-1)>>lowBits + 1.
	highBits uint64
	// zeroSamples[j] is the position of zero number j*zeroSampleRate in
	// high, built at construction (not stored): select0 starts there.
	zeroSamples []uint32
}

// Limits of the range filter.
const (
	// MinRangeBitsPerKey is the smallest budget: the Elias-Fano high part
	// alone takes about 2 bits per key.
	MinRangeBitsPerKey = 2
	// MaxRangeBitsPerKey bounds the budget (r must stay below 2^62).
	MaxRangeBitsPerKey = 48
	// MaxRangeBlocks is the widest query, in blocks of L integers, that
	// MayContainRange looks at; a wider one is answered maybe.
	MaxRangeBlocks = 8
	// zeroSampleRate: one select0 sample per this many zeros (0.125 bits
	// per key of memory, never on disk).
	zeroSampleRate = 256
	// maxRangeFilterKeys bounds n so that positions fit the uint32 samples.
	maxRangeFilterKeys = 1 << 30
)

// NewRangeFilter builds a range filter over keys (any order, duplicates
// allowed) spending about bitsPerKey bits per distinct key, in
// [MinRangeBitsPerKey, MaxRangeBitsPerKey]; fractions count. prefix is
// what MayContainKeys strips from byte keys (nil for keys built with
// RangeKey(key) directly); see RangeFilterBuilder.
func NewRangeFilter(keys []uint64, bitsPerKey float64, prefix []byte) (*RangeFilter, error) {
	if !(bitsPerKey >= MinRangeBitsPerKey && bitsPerKey <= MaxRangeBitsPerKey) {
		return nil, invalidArgf("range filter bits per key %v outside [%d, %d]", bitsPerKey, MinRangeBitsPerKey, MaxRangeBitsPerKey)
	}
	if len(prefix) > maxRangePrefix {
		return nil, invalidArgf("range filter prefix of %d bytes exceeds %d", len(prefix), maxRangePrefix)
	}
	xs := slices.Clone(keys)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	n := uint64(len(xs))
	if n > maxRangeFilterKeys {
		return nil, invalidArgf("range filter of %d keys exceeds %d", n, maxRangeFilterKeys)
	}
	// Elias-Fano spends lowBits + 1 + r/(n 2^lowBits) bits per value; with
	// r = n 2^lowBits c, c in [1, 2), that is lowBits + 1 + c = bitsPerKey.
	lowBits := math.Floor(bitsPerKey - 2)
	c := bitsPerKey - 1 - lowBits
	r := uint64(math.Ceil(float64(max(n, 1)) * math.Exp2(lowBits) * c))
	for r >= 1<<62 { // a huge budget on a huge set: give up resolution, never overflow
		lowBits--
		r = uint64(math.Ceil(float64(max(n, 1)) * math.Exp2(lowBits) * c))
	}
	r = max(r, 2)
	f := &RangeFilter{n: n, r: r, seed: rangeSeed(n, r), prefix: slices.Clone(prefix)}
	f.logL = uint8(bits.Len64(r) - 2) // L = 2^logL <= r/2: a query piece never wraps onto its own block's keys
	f.lowBits = uint8(bits.Len64(r/max(n, 1)) - 1)
	if n == 0 {
		f.lowBits = 0
	}
	hs := make([]uint64, n)
	for i, x := range xs {
		hs[i] = f.hash(x)
	}
	slices.Sort(hs)
	f.encodeSequence(hs)
	return f, nil
}

// maxRangePrefix bounds the stored prefix (the engine's key size limit).
const maxRangePrefix = 64 << 10

// rangeSeed derives the block hash's seed from the shape, so that a
// filter is a function of its keys and budget alone (reproducible tables
// and golden tests).
func rangeSeed(n, r uint64) uint64 { return rangeMix(n*0x9e3779b97f4a7c15 ^ r ^ 0x6772616669746521) }

// rangeMix is the splitmix64 finalizer, a bijection that spreads its
// input. It is part of the format: q(block) = rangeMix(block ^ seed) mod r.
func rangeMix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash is h(x) = (q(x >> logL) + x) mod r.
func (f *RangeFilter) hash(x uint64) uint64 {
	q := rangeMix((x>>f.logL)^f.seed) % f.r
	return (q + x%f.r) % f.r
}

// encodeSequence stores the sorted values hs as Elias-Fano.
func (f *RangeFilter) encodeSequence(hs []uint64) {
	n := uint64(len(hs))
	f.highBits = n + (f.r-1)>>f.lowBits + 1
	f.high = make([]uint64, (f.highBits+63)/64)
	f.low = make([]uint64, (n*uint64(f.lowBits)+63)/64)
	mask := uint64(1)<<f.lowBits - 1
	for i, h := range hs {
		f.putLow(uint64(i), h&mask)
		p := h>>f.lowBits + uint64(i)
		f.high[p/64] |= 1 << (p % 64)
	}
	f.buildSamples()
}

func (f *RangeFilter) putLow(i, v uint64) {
	if f.lowBits == 0 {
		return
	}
	bit := i * uint64(f.lowBits)
	w, s := bit/64, bit%64
	f.low[w] |= v << s
	if s+uint64(f.lowBits) > 64 {
		f.low[w+1] |= v >> (64 - s)
	}
}

func (f *RangeFilter) getLow(i uint64) uint64 {
	if f.lowBits == 0 {
		return 0
	}
	bit := i * uint64(f.lowBits)
	w, s := bit/64, bit%64
	v := f.low[w] >> s
	if s+uint64(f.lowBits) > 64 {
		v |= f.low[w+1] << (64 - s)
	}
	return v & (uint64(1)<<f.lowBits - 1)
}

// buildSamples records the position of every zeroSampleRate-th zero of
// high.
func (f *RangeFilter) buildSamples() {
	zeros := f.highBits - f.n
	f.zeroSamples = make([]uint32, 0, zeros/zeroSampleRate+1)
	var seen uint64 // zeros before word w
	for w, word := range f.high {
		inv := ^word
		if rest := f.highBits - uint64(w)*64; rest < 64 {
			inv &= uint64(1)<<rest - 1
		}
		cnt := uint64(bits.OnesCount64(inv))
		for next := uint64(len(f.zeroSamples)) * zeroSampleRate; next < seen+cnt; next += zeroSampleRate {
			f.zeroSamples = append(f.zeroSamples, uint32(uint64(w)*64+selectInWord(inv, next-seen)))
		}
		seen += cnt
	}
}

// selectInWord returns the position of the j-th (0-based) set bit of w,
// which must have more than j.
func selectInWord(w, j uint64) uint64 {
	for ; j > 0; j-- {
		w &= w - 1
	}
	return uint64(bits.TrailingZeros64(w))
}

// select0 returns the position of zero number j (0-based) of high; j is
// below the number of zeros.
func (f *RangeFilter) select0(j uint64) uint64 {
	p := uint64(f.zeroSamples[j/zeroSampleRate])
	j %= zeroSampleRate
	// p is a zero; count on from it.
	w := p / 64
	inv := ^f.high[w] &^ (uint64(1)<<(p%64) - 1)
	for {
		cnt := uint64(bits.OnesCount64(inv))
		if j < cnt {
			return w*64 + selectInWord(inv, j)
		}
		j -= cnt
		w++
		inv = ^f.high[w]
	}
}

// successor returns the smallest stored value >= u, and false when there
// is none.
func (f *RangeFilter) successor(u uint64) (uint64, bool) {
	if u >= f.r || f.n == 0 {
		return 0, false
	}
	hb := u >> f.lowBits
	var p uint64 // first position of bucket hb
	if hb > 0 {
		p = f.select0(hb-1) + 1
	}
	i := p - hb // values before bucket hb
	for i < f.n && f.high[p/64]>>(p%64)&1 == 1 {
		if v := hb<<f.lowBits | f.getLow(i); v >= u {
			return v, true
		}
		i, p = i+1, p+1
	}
	if i >= f.n {
		return 0, false
	}
	// The next value is in a later bucket: the next set bit.
	w := p / 64
	word := f.high[w] &^ (uint64(1)<<(p%64) - 1)
	for word == 0 {
		w++
		word = f.high[w]
	}
	p = w*64 + uint64(bits.TrailingZeros64(word))
	return (p-i)<<f.lowBits | f.getLow(i), true
}

// anyIn reports whether a stored value lies in [s, s+w) mod r, w <= r.
func (f *RangeFilter) anyIn(s, w uint64) bool {
	v, ok := f.successor(s)
	if ok && v-s < w {
		return true
	}
	if s+w > f.r { // wraps: [0, s+w-r) too
		v, ok = f.successor(0)
		return ok && v < s+w-f.r
	}
	return false
}

// MayContainRange reports whether the filter may hold a key in [lo, hi]
// (both inclusive). It never answers false when it holds one.
func (f *RangeFilter) MayContainRange(lo, hi uint64) bool {
	if lo > hi || f.n == 0 {
		return false
	}
	first, last := lo>>f.logL, hi>>f.logL
	if last-first >= MaxRangeBlocks {
		return true
	}
	for b := first; ; b++ {
		s, e := max(lo, b<<f.logL), min(hi, b<<f.logL|(uint64(1)<<f.logL-1))
		// e - s < L <= r/2: one interval of h values, maybe wrapping.
		if f.anyIn(f.hash(s), e-s+1) {
			return true
		}
		if b == last {
			return false
		}
	}
}

// MayContainKeys reports whether the filter may hold a byte key k with
// lo <= k < hi; nil lo or hi is unbounded. Keys map to integers with
// RangeKey after the filter's prefix, conservatively: it never answers
// false when a key of the set lies in the range.
func (f *RangeFilter) MayContainKeys(lo, hi []byte) bool {
	a, b, ok := f.KeyInterval(lo, hi)
	return ok && f.MayContainRange(a, b)
}

// KeyInterval returns the integers [a, b] that the byte keys in [lo, hi)
// with the filter's prefix map to; ok is false when no such key exists.
// Every key k in [lo, hi) that starts with the prefix has RangeKey of its
// rest in [a, b].
func (f *RangeFilter) KeyInterval(lo, hi []byte) (a, b uint64, ok bool) {
	p := f.prefix
	a, b = 0, math.MaxUint64
	if lo != nil {
		switch {
		case bytes.HasPrefix(lo, p):
			a = RangeKey(lo[len(p):])
		case bytes.Compare(lo, p) > 0:
			return 0, 0, false // above every key with the prefix
		}
	}
	if hi != nil {
		switch {
		case bytes.HasPrefix(hi, p):
			rest := hi[len(p):]
			if len(rest) == 0 {
				return 0, 0, false // hi is the prefix: nothing with it lies below
			}
			b = RangeKey(rest)
			// A key below hi maps to at most b, and to b only when it is
			// hi less trailing zero bytes or hi is longer than 8 bytes; a
			// rest of at most 8 bytes ending in a nonzero byte excludes b.
			if len(rest) <= 8 && rest[len(rest)-1] != 0 {
				b--
			}
		case bytes.Compare(hi, p) < 0:
			return 0, 0, false // below every key with the prefix
		}
	}
	return a, b, a <= b
}

// RangeKey maps a byte key to the integer a RangeFilter indexes: its first
// 8 bytes, big-endian, zero-padded. The map is monotone (k1 <= k2 implies
// RangeKey(k1) <= RangeKey(k2)), which is all that rules out false
// negatives; keys that share their first 8 bytes share an integer, so the
// filter resolves ranges only to those bytes (keys that start with an
// integer or a timestamp are what it suits).
func RangeKey(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// NumKeys returns the number of distinct integers the filter holds.
func (f *RangeFilter) NumKeys() uint64 { return f.n }

// HashRange returns r, the size of the hash range: an empty range of w
// integers is a false positive with probability about 1 - (1-w/r)^n.
func (f *RangeFilter) HashRange() uint64 { return f.r }

// Prefix returns the prefix MayContainKeys strips (the caller must not
// modify it).
func (f *RangeFilter) Prefix() []byte { return f.prefix }

// SizeBytes returns the bytes of the stored sequence (what the encoding
// holds beyond its fixed fields).
func (f *RangeFilter) SizeBytes() int { return 8 * (len(f.low) + len(f.high)) }

// MemoryBytes returns the bytes the filter holds in memory: the sequence,
// the prefix and the select samples.
func (f *RangeFilter) MemoryBytes() int {
	return f.SizeBytes() + len(f.prefix) + 4*len(f.zeroSamples)
}

// BitsPerKey returns the bits per key the stored sequence spends.
func (f *RangeFilter) BitsPerKey() float64 {
	if f.n == 0 {
		return 0
	}
	return float64(f.SizeBytes()*8) / float64(f.n)
}

// TheoreticalFPR returns the false-positive rate the design promises for
// an empty range of width integers that lies inside one block:
// 1 - (1 - width/r)^n, about width / 2^(bitsPerKey-2).
func (f *RangeFilter) TheoreticalFPR(width uint64) float64 {
	return RangeFilterFPR(f.n, f.r, width)
}

// RangeFilterFPR is TheoreticalFPR for a filter of n keys and hash range r.
func RangeFilterFPR(n, r, width uint64) float64 {
	if width >= r {
		return 1
	}
	return -math.Expm1(float64(n) * math.Log1p(-float64(width)/float64(r)))
}

// RangeFilterTheory returns the false-positive rate of an empty range of
// width integers for a large filter of bitsPerKey bits per key: r/n is
// then 2^floor(b-2) * (b - 1 - floor(b-2)) (see NewRangeFilter), and the
// rate 1 - exp(-width n / r), about width / 2^(b-2).
func RangeFilterTheory(bitsPerKey float64, width uint64) float64 {
	low := math.Floor(bitsPerKey - 2)
	perKey := math.Exp2(low) * (bitsPerKey - 1 - low) // r / n
	return -math.Expm1(-float64(width) / perKey)
}

// RangeFilterBuilder collects the byte keys of a table in increasing order
// and builds a RangeFilter over RangeKey of each, after a prefix they all
// share when adaptive. Keys that map to one integer are kept once.
//
// Choosing the prefix (adaptive). The filter resolves ranges to the 8
// bytes it indexes, so those should be where the keys differ: all of
// "user:42/" + a big-endian integer share 8 bytes of "user:42/", and
// indexing those would make every range of the user a "maybe". The
// builder counts, for each pair of adjacent keys, the first byte where
// they differ (keys cut to maxWindowStart+8 bytes). Of the prefixes no
// longer than the one all keys share (which keeps the map monotone) whose
// following 8 bytes tell the most adjacent pairs apart, it takes the one
// whose 8 bytes end where the shortest key ends, when there is one (the
// last bytes of such keys are their finest unit: "user:42/" above), else
// the shortest (the first 8 bytes of keys that start with an integer,
// kvbench's among them, whatever follows). It keeps the cut keys until
// Finish.
type RangeFilterBuilder struct {
	bitsPerKey float64
	keys       []uint64 // without adaptive: the integers so far
	adaptive   bool
	arena      []byte   // adaptive: the cut keys, back to back
	ends       []uint32 // end of each cut key in arena
	cpl        int      // bytes every cut key shares with the first
	minLen     int      // the shortest cut key
	diffAt     [maxWindowStart + 9]int
}

// maxWindowStart bounds the prefix an adaptive builder strips.
const maxWindowStart = 64

// NewRangeFilterBuilder returns a builder spending bitsPerKey per distinct
// key (see NewRangeFilter). With adaptive it indexes the 8 bytes after a
// common prefix chosen from the keys (see RangeFilterBuilder); without,
// the first 8 bytes of each key.
func NewRangeFilterBuilder(bitsPerKey float64, adaptive bool) (*RangeFilterBuilder, error) {
	if !(bitsPerKey >= MinRangeBitsPerKey && bitsPerKey <= MaxRangeBitsPerKey) {
		return nil, invalidArgf("range filter bits per key %v outside [%d, %d]", bitsPerKey, MinRangeBitsPerKey, MaxRangeBitsPerKey)
	}
	return &RangeFilterBuilder{bitsPerKey: bitsPerKey, adaptive: adaptive}, nil
}

func commonPrefixLen(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// AddKey adds key; keys must come in increasing order (equal keys are
// fine). The builder copies what it keeps.
func (b *RangeFilterBuilder) AddKey(key []byte) {
	if !b.adaptive {
		x := RangeKey(key)
		if len(b.keys) == 0 || b.keys[len(b.keys)-1] != x {
			b.keys = append(b.keys, x)
		}
		return
	}
	cut := key[:min(len(key), maxWindowStart+8)]
	if n := len(b.ends); n > 0 {
		prev := b.arena[b.prevStart():]
		d := commonPrefixLen(prev, cut)
		if d == len(prev) && d == len(cut) {
			return // the same cut key: the same integer at any prefix
		}
		b.diffAt[d]++
		b.cpl = min(b.cpl, commonPrefixLen(b.arena[:b.ends[0]], cut))
		b.minLen = min(b.minLen, len(cut))
	} else {
		b.cpl, b.minLen = len(cut), len(cut)
	}
	b.arena = append(b.arena, cut...)
	b.ends = append(b.ends, uint32(len(b.arena)))
}

func (b *RangeFilterBuilder) prevStart() uint32 {
	if n := len(b.ends); n > 1 {
		return b.ends[n-2]
	}
	return 0
}

// NumKeys returns the distinct integers (adaptive: cut keys) added so far.
func (b *RangeFilterBuilder) NumKeys() int { return len(b.keys) + len(b.ends) }

// Finish builds the filter.
func (b *RangeFilterBuilder) Finish() (*RangeFilter, error) {
	if !b.adaptive || len(b.ends) == 0 {
		return NewRangeFilter(b.keys, b.bitsPerKey, nil)
	}
	score := func(s int) int {
		n := 0
		for d := s; d < s+8 && d < len(b.diffAt); d++ {
			n += b.diffAt[d]
		}
		return n
	}
	best, bestScore := 0, -1
	for s := 0; s <= min(b.cpl, maxWindowStart); s++ {
		if n := score(s); n > bestScore {
			best, bestScore = s, n
		}
	}
	if s := b.minLen - 8; s > best && s <= min(b.cpl, maxWindowStart) && score(s) == bestScore {
		best = s
	}
	xs := make([]uint64, len(b.ends))
	start := uint32(0)
	for i, end := range b.ends {
		xs[i] = RangeKey(b.arena[start+uint32(best) : end])
		start = end
	}
	return NewRangeFilter(xs, b.bitsPerKey, b.arena[:best])
}
