// Package filter implements the membership filters of bloomkv: the bloom
// filter block embedded in every SSTable, and standalone filters that Go
// programs can use on their own.
//
// # Hashing and probing (shared by every bloom variant here)
//
// A key is hashed once to 64 bits with xxHash64 (github.com/cespare/xxhash/v2).
// The k probe positions come from that one hash by double hashing
// (Kirsch–Mitzenmacher): with h1 = h and h2 = h rotated by 32 bits, forced
// odd, probe i sets or tests bit g_i = reduce(h1 + i*h2, m), where reduce maps
// a 64-bit value onto [0, m) by multiply-high (Lemire's fast range) instead of
// a division. k = round(bitsPerKey * ln 2) clamped to [1, 30], which minimises
// the false-positive rate (1 - e^(-kn/m))^k for a given m/n.
//
// # Filter block (as stored in an SSTable)
//
//	+------------------------------------+-----------+----------+----------+
//	| bit array: m/8 bytes (m % 64 == 0) | numKeys   | k        | variant  |
//	| bit i = byte[i/8] >> (i%8) & 1     | uint32 LE | uint8    | uint8    |
//	+------------------------------------+-----------+----------+----------+
//
// The block says its own k, size and variant, so tables written with other
// bits-per-key settings are read correctly. Bit i of the array is also bit
// i%64 of little-endian 64-bit word i/64, which lets in-memory filters work
// on words. The variant byte is VariantStandard (1); other values are
// reserved for later variants and are rejected by DecodeBlock. The SSTable
// layer checksums the block; this package validates its shape.
//
// These layouts and constants are part of the on-disk format and never
// change: a new layout gets a new variant number.
//
// # Invariants
//
// A filter never answers "absent" for a key that was added (no false
// negatives), whatever its size or fill. Decoding never panics on bad input.
package filter
