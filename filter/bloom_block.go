package filter

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
)

// BloomFromBlock returns a standalone Bloom holding a copy of a standard
// filter block's bits, with the block's m and k: it answers MayContain
// exactly as the block does, and can take further keys.
func BloomFromBlock(blk Block) (*Bloom, error) {
	if blk.variant != VariantStandard {
		return nil, fmt.Errorf("bloomkv/filter: filter block variant %d has no standalone Bloom form", blk.variant)
	}
	b := newBloom(blk.m, blk.k)
	for i := range b.words {
		b.words[i] = binary.LittleEndian.Uint64(blk.array[i*8:])
	}
	return b, nil
}

// AppendBlock appends b encoded as a standard SSTable filter block (see the
// package doc) to dst and returns the extended slice; DecodeBlock reads it
// back. The block's key count, which only informs statistics, is
// ApproximateCount clamped to 32 bits.
func (b *Bloom) AppendBlock(dst []byte) []byte {
	for i := range b.words {
		dst = binary.LittleEndian.AppendUint64(dst, atomic.LoadUint64(&b.words[i]))
	}
	n := min(uint64(b.ApproximateCount()), math.MaxUint32)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	return append(dst, byte(b.k), byte(VariantStandard))
}
