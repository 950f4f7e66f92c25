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
// on words. The variant byte is VariantStandard (1); VariantBlocked (2),
// whose array is whole 512-bit blocks with each key's probes inside one
// (see blocked.go); or VariantFuse (3), a binary fuse filter whose block
// has its own layout before the same last byte: 8-bit fingerprints, then
// seed, segment count, numKeys, segment size and fingerprint width (see
// fuse.go). DecodeBlock reads the last byte first and rejects other
// values, reserved for later variants. NewBlockBuilder writes
// VariantStandard; NewBlockBuilderVariant and NewBlockBuilderBits (for
// fractional bits per key) choose. The SSTable layer checksums the block;
// this package validates its shape, so damage that a checksum lets through
// is an error wrapping ErrCorruption, never a panic.
//
// These layouts and constants are part of the on-disk format and never
// change: a new layout gets a new variant number.
//
// # Sizing
//
// EstimateParameters(n, p) returns the bits and probes of the smallest
// standard bloom filter meeting a target rate p for n keys (see sizing.go);
// the standalone filters are sized with it. BitsPerKeyForFPR and
// FPRForBitsPerKey convert between a target rate and the bits per key of
// a filter block, the form the engine's settings take.
//
// # Standalone filters
//
// Go programs can use four filter types on their own: a guard in front of
// a database that rejects keys certainly absent (cache penetration), URL
// de-duplication in a crawler, blacklists, weak-password dictionaries.
//
//	type      deletes  n known?   bits/key   bits/key   Add       MayContain  goroutines
//	                              at 1%      at 0.1%              (absent)
//	Bloom     no       yes        9.6        14.4       23-33 ns  34 ns       lock-free
//	Counting  yes      yes        38.3       57.5       64 ns     55 ns       RWMutex
//	Cuckoo    yes      yes, hard  11.1       14.5       67 ns     58 ns       RWMutex
//	Scalable  no       no         ~22        ~27        480 ns    240 ns      lock-free reads
//
// Space is for a filter sized for a million keys and holding them (Cuckoo:
// at the 90% load it is sized for; 10.5 and 13.7 bits/key at 95%;
// Scalable: grown from 1000 to a million keys through 10 layers). Times
// are for 16-byte keys on a filter of a million keys on a 2-core Xeon;
// see README.md in this directory for the benchmarks behind them.
//
//   - Bloom is the default: the smallest and fastest when the number of
//     keys is known and nothing is removed. Add and MayContain need no
//     lock; filters of equal shape Merge; its bits are a filter block's.
//   - Counting adds Remove to a Bloom at four times the memory. It never
//     fills up (an overfull filter's counters saturate and its rate
//     degrades, as a Bloom's does).
//   - Cuckoo also removes keys, in about a Bloom's space (less below a
//     rate of about 0.1%, or 0.5% when filled to 95%). But its capacity
//     is hard (Add returns ErrFull past about 95% load) unless
//     WithExpansion lets it grow by tables (each one more to check, and
//     a higher false-positive rate; at most MaxCuckooTables of them and
//     MaxCuckooGrowth times the first one's slots), adding a key twice
//     stores it twice (2b copies at most per table, and more never grow
//     the filter), and two cuckoo filters cannot be merged.
//     WithBucketSize trades load for lookup cost.
//   - Scalable is for an unknown number of keys: it adds layers as keys
//     arrive. Each doubling costs about 1.44 more bits per key and another
//     layer to probe, so when n can be bounded, a Bloom sized for the
//     bound is smaller and faster.
//
// Every type reports its size (SizeBytes) and its false-positive rate at
// the current fill (EstimatedFPR), so a caller sees when a filter holds
// more keys than it was sized for. Every type serializes with
// MarshalBinary/UnmarshalBinary and WriteTo/ReadFrom in one versioned,
// checksummed format, described in encoding.go with each type's body in
// its *_codec.go; decoding rejects damaged input with an error wrapping
// ErrCorruption. The same encoding goes into JSON (a base64 string) and
// into chunked dumps (DumpChunks, LoadChunks) that move a large filter in
// checked pieces. Insert adds keys to a Scalable it creates on first use.
// A zero-value filter is only something to decode into: any other use
// panics with ErrZeroFilter.
//
// # Range filter
//
// RangeFilter (rangefilter.go) answers "may the set hold a key in
// [lo, hi]?" for short ranges: a Grafite filter (locality-preserving
// hashes in an Elias-Fano sequence), whose false-positive rate for an
// empty range of w integers is about w / 2^(bitsPerKey-2) whatever the
// query distribution. Byte keys map onto integers with RangeKey after a
// prefix RangeFilterBuilder chooses. It is the SSTable range-filter block
// and serializes as envelope kind 6 (rangefilter_codec.go).
//
// # Invariants
//
// A filter never answers "absent" for a key that was added (no false
// negatives), whatever its size or fill, and through a serialization round
// trip. The one exception is the one every deletable filter shares:
// removing from a Counting or Cuckoo filter a key that was never added can
// remove another key's trace. Decoding never panics on bad input. All
// types are safe for concurrent use, except that UnmarshalBinary and
// ReadFrom, which replace a filter, must not run alongside other calls on
// it.
package filter
