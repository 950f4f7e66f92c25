package filter

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Variant identifies a filter block layout. Values are stored on disk.
type Variant uint8

const (
	// VariantStandard is a classic bloom filter over the whole bit array.
	VariantStandard Variant = 1
	// VariantBlocked confines each key's probes to one 512-bit block (one
	// cache line): faster probes, a somewhat higher false-positive rate at
	// equal bits per key. See blocked.go.
	VariantBlocked Variant = 2
	// VariantFuse is a binary fuse filter of 8-bit fingerprints: a 0.39%
	// false-positive rate in about 9.0 bits per key (more for small
	// tables), built once over a table's whole key set. Its size follows
	// from the number of keys, not from a bits-per-key setting. See fuse.go.
	VariantFuse Variant = 3
)

// String returns the variant's name as kvbench and kvtool spell it:
// "standard", "blocked", or "variant N" for any other value.
func (v Variant) String() string {
	switch v {
	case VariantStandard:
		return "standard"
	case VariantBlocked:
		return "blocked"
	case VariantFuse:
		return "fuse"
	}
	return fmt.Sprintf("variant %d", uint8(v))
}

// blockTrailerLen is numKeys (4) + k (1) + variant (1).
const blockTrailerLen = 6

// minBits keeps tiny tables' filters from degenerating.
const minBits = 64

// BlockBuilder accumulates the hashes of one table's keys and encodes its
// filter block. Consecutive duplicate keys (versions of one user key, or rows
// repeated under a FilterKey extractor) are added once.
type BlockBuilder struct {
	bitsPerKey float64
	variant    Variant
	hashes     []uint64
}

// MaxBlockBitsPerKey bounds the bits per key of a filter block builder: far
// beyond any useful setting (k stops growing at 30 probes, about 43 bits
// per key), it keeps the size arithmetic away from overflow.
const MaxBlockBitsPerKey = 1 << 16

// NewBlockBuilder returns a builder spending bitsPerKey bits per distinct key
// (values below 1 are taken as 1).
func NewBlockBuilder(bitsPerKey int) *BlockBuilder {
	return &BlockBuilder{bitsPerKey: float64(min(max(1, bitsPerKey), MaxBlockBitsPerKey)), variant: VariantStandard}
}

// NewBlockBuilderVariant is NewBlockBuilder for a chosen layout variant,
// VariantStandard, VariantBlocked or VariantFuse.
func NewBlockBuilderVariant(bitsPerKey int, v Variant) (*BlockBuilder, error) {
	return NewBlockBuilderBits(float64(min(max(1, bitsPerKey), MaxBlockBitsPerKey)), v)
}

// NewBlockBuilderBits returns a builder of variant v spending bitsPerKey
// bits per distinct key, fractional allowed: the bit array has
// ceil(n * bitsPerKey) bits rounded up as the variant requires, and
// k = NumProbes(bitsPerKey). bitsPerKey must be in (0, MaxBlockBitsPerKey].
// A VariantFuse filter's size follows from its keys alone (about 9 bits
// per key); bitsPerKey is then only checked.
func NewBlockBuilderBits(bitsPerKey float64, v Variant) (*BlockBuilder, error) {
	if v != VariantStandard && v != VariantBlocked && v != VariantFuse {
		return nil, invalidArgf("filter block variant %d is not %d (standard), %d (blocked) or %d (fuse)", v, VariantStandard, VariantBlocked, VariantFuse)
	}
	if !(bitsPerKey > 0 && bitsPerKey <= MaxBlockBitsPerKey) { // also rejects NaN
		return nil, invalidArgf("filter block bits per key %v outside (0, %d]", bitsPerKey, MaxBlockBitsPerKey)
	}
	return &BlockBuilder{bitsPerKey: bitsPerKey, variant: v}, nil
}

// AddKey adds a key's hash.
func (b *BlockBuilder) AddKey(key []byte) { b.AddHash(Hash(key)) }

// AddHash adds a pre-computed Hash.
func (b *BlockBuilder) AddHash(h uint64) {
	if n := len(b.hashes); n > 0 && b.hashes[n-1] == h {
		return
	}
	b.hashes = append(b.hashes, h)
}

// NumKeys returns the number of distinct keys added so far.
func (b *BlockBuilder) NumKeys() int { return len(b.hashes) }

// Variant returns the layout the builder writes.
func (b *BlockBuilder) Variant() Variant { return b.variant }

// BitsPerKey returns the bits per key the builder spends.
func (b *BlockBuilder) BitsPerKey() float64 { return b.bitsPerKey }

// Finish encodes the filter block and resets the builder.
func (b *BlockBuilder) Finish() []byte {
	if b.variant == VariantFuse {
		out := encodeFuseBlock(b.hashes)
		b.hashes = b.hashes[:0]
		return out
	}
	n := uint64(len(b.hashes))
	k := NumProbes(b.bitsPerKey)
	// n < 2^32 keys at most 2^16 bits each: the product is exact in a
	// float64 for every whole bitsPerKey, so whole settings size as before.
	bits := uint64(math.Ceil(float64(n) * b.bitsPerKey))
	set := setBits
	m := roundBits(bits)
	if b.variant == VariantBlocked {
		set, m = setBitsBlocked, blockedBits(bits)
	}
	out := make([]byte, m/8+blockTrailerLen)
	array := out[:m/8]
	for _, h := range b.hashes {
		set(array, m, k, h)
	}
	binary.LittleEndian.PutUint32(out[m/8:], uint32(min(n, math.MaxUint32)))
	out[m/8+4] = byte(k)
	out[m/8+5] = byte(b.variant)
	b.hashes = b.hashes[:0]
	return out
}

// roundBits rounds a bit count up to a whole number of 64-bit words, at least
// minBits.
func roundBits(m uint64) uint64 {
	m = max(m, minBits)
	return (m + 63) &^ 63
}

func setBits(array []byte, m uint64, k int, h uint64) {
	h1, h2 := probeStep(h)
	for i := 0; i < k; i++ {
		bit := reduce(h1, m)
		array[bit>>3] |= 1 << (bit & 7)
		h1 += h2
	}
}

func testBits(array []byte, m uint64, k int, h uint64) bool {
	h1, h2 := probeStep(h)
	for i := 0; i < k; i++ {
		bit := reduce(h1, m)
		if array[bit>>3]&(1<<(bit&7)) == 0 {
			return false
		}
		h1 += h2
	}
	return true
}

// Block is a decoded, read-only view of a filter block. It aliases the
// encoded bytes, which must not change while the Block is in use.
type Block struct {
	array   []byte // bits, or a fuse filter's fingerprints
	m       uint64
	k       int
	numKeys uint32
	variant Variant
	// VariantFuse only.
	fuse     fuseShape
	fuseSeed uint64
}

// DecodeBlock validates an encoded filter block and returns a view of it.
// Malformed input yields an error wrapping ErrCorruption; callers add
// the file and offset.
func DecodeBlock(data []byte) (Block, error) {
	if len(data) > 0 && Variant(data[len(data)-1]) == VariantFuse {
		return decodeFuseBlock(data)
	}
	if len(data) < blockTrailerLen {
		return Block{}, base.CorruptionErrorf("bloomkv/filter: block of %d bytes is shorter than its %d-byte trailer", len(data), blockTrailerLen)
	}
	arrayLen := len(data) - blockTrailerLen
	t := data[arrayLen:]
	b := Block{
		array:   data[:arrayLen],
		m:       uint64(arrayLen) * 8,
		numKeys: binary.LittleEndian.Uint32(t),
		k:       int(t[4]),
		variant: Variant(t[5]),
	}
	switch {
	case b.variant != VariantStandard && b.variant != VariantBlocked:
		return Block{}, base.CorruptionErrorf("bloomkv/filter: unknown filter variant %d", b.variant)
	case b.variant == VariantBlocked && arrayLen%blockedBlockBytes != 0:
		return Block{}, base.CorruptionErrorf("bloomkv/filter: blocked bit array of %d bytes is not a whole number of %d-byte blocks", arrayLen, blockedBlockBytes)
	case b.k < 1 || b.k > MaxProbes:
		return Block{}, base.CorruptionErrorf("bloomkv/filter: probe count %d outside [1, %d]", b.k, MaxProbes)
	case arrayLen == 0 || arrayLen%8 != 0:
		return Block{}, base.CorruptionErrorf("bloomkv/filter: bit array of %d bytes is not a positive whole number of 64-bit words", arrayLen)
	}
	return b, nil
}

// MayContain reports whether key may have been added. False is certain.
func (b Block) MayContain(key []byte) bool { return b.MayContainHash(Hash(key)) }

// MayContainHash is MayContain for a pre-computed Hash.
func (b Block) MayContainHash(h uint64) bool {
	switch b.variant {
	case VariantBlocked:
		return testBitsBlocked(b.array, b.m, b.k, h)
	case VariantFuse:
		return b.fuseMayContain(h)
	}
	return testBits(b.array, b.m, b.k, h)
}

// NumKeys returns the number of distinct keys the filter was built from.
func (b Block) NumKeys() int { return int(b.numKeys) }

// NumProbes returns k, the array positions a probe reads (3 for a fuse
// filter).
func (b Block) NumProbes() int { return b.k }

// Bits returns m, the size of the bit array in bits (of the fingerprint
// array for a fuse filter).
func (b Block) Bits() uint64 { return b.m }

// BitsPerKey returns the bits actually spent per distinct key.
func (b Block) BitsPerKey() float64 {
	if b.numKeys == 0 {
		return 0
	}
	return float64(b.m) / float64(b.numKeys)
}

// Variant returns the block's layout variant.
func (b Block) Variant() Variant { return b.variant }

// TheoreticalFPR returns the expected false-positive rate for this block's
// m, n and k.
func (b Block) TheoreticalFPR() float64 {
	switch b.variant {
	case VariantBlocked:
		return BlockedTheoreticalFPR(b.m, uint64(b.numKeys), b.k)
	case VariantFuse:
		if b.numKeys == 0 {
			return 0
		}
		return FuseFPR
	}
	return TheoreticalFPR(b.m, uint64(b.numKeys), b.k)
}

func (b Block) String() string {
	if b.variant == VariantFuse {
		return fmt.Sprintf("binary fuse(%d fingerprints of 8 bits in %d+2 segments of %d, n=%d, %.2f bits/key)",
			len(b.array), b.fuse.segmentCount, b.fuse.segmentLen(), b.numKeys, b.BitsPerKey())
	}
	if b.variant == VariantBlocked {
		return fmt.Sprintf("blocked bloom(m=%d bits, n=%d, k=%d, %.2f bits/key)", b.m, b.numKeys, b.k, b.BitsPerKey())
	}
	return fmt.Sprintf("bloom(m=%d bits, n=%d, k=%d, %.2f bits/key)", b.m, b.numKeys, b.k, b.BitsPerKey())
}

// decodeFuseBlock validates a VariantFuse block (see fuse.go).
func decodeFuseBlock(data []byte) (Block, error) {
	if len(data) < fuseTrailerLen {
		return Block{}, base.CorruptionErrorf("bloomkv/filter: fuse block of %d bytes is shorter than its %d-byte trailer", len(data), fuseTrailerLen)
	}
	arrayLen := len(data) - fuseTrailerLen
	t := data[arrayLen:]
	b := Block{
		array:    data[:arrayLen],
		m:        uint64(arrayLen) * 8,
		k:        3,
		variant:  VariantFuse,
		fuseSeed: binary.LittleEndian.Uint64(t),
		fuse: fuseShape{
			segmentCount:  binary.LittleEndian.Uint32(t[8:]),
			segmentLogLen: t[16],
		},
		numKeys: binary.LittleEndian.Uint32(t[12:]),
	}
	fpBits := t[17]
	switch {
	case fpBits != fuseFingerprintBits:
		return Block{}, base.CorruptionErrorf("bloomkv/filter: fuse fingerprints of %d bits, not %d", fpBits, fuseFingerprintBits)
	case b.fuse.segmentLogLen > fuseMaxSegmentLogLen:
		return Block{}, base.CorruptionErrorf("bloomkv/filter: fuse segments of 2^%d slots, more than 2^%d", b.fuse.segmentLogLen, fuseMaxSegmentLogLen)
	case uint64(arrayLen) != b.fuse.slots():
		return Block{}, base.CorruptionErrorf("bloomkv/filter: fuse array of %d bytes, but %d+2 segments of %d slots make %d",
			arrayLen, b.fuse.segmentCount, b.fuse.segmentLen(), b.fuse.slots())
	case b.fuse.segmentCount == 0 && (b.numKeys != 0 || b.fuse.segmentLogLen != 0):
		return Block{}, base.CorruptionErrorf("bloomkv/filter: empty fuse filter claims %d keys in segments of 2^%d slots", b.numKeys, b.fuse.segmentLogLen)
	}
	return b, nil
}
