package base

import "github.com/bloomkv/bloomkv/kv"

// The internal-key vocabulary is defined in the public package kv, so that
// the public packages' signatures name public types; the engine keeps using
// these names. Aliases and one-line wrappers: no conversion, no cost.

// Kind says what an entry is (kv.Kind).
type Kind = kv.Kind

// The kinds (see kv).
const (
	KindDelete      = kv.KindDelete
	KindSet         = kv.KindSet
	KindRangeDelete = kv.KindRangeDelete
	KindSeek        = kv.KindSeek
)

// MaxSeq is the largest sequence number (56 bits).
const MaxSeq = kv.MaxSeq

// TrailerLen is the size of an internal key's trailer in bytes.
const TrailerLen = kv.TrailerLen

// InternalIterator walks internal keys in CompareInternal order (kv.Iterator).
type InternalIterator = kv.Iterator

// MakeTrailer packs a sequence number and a kind.
func MakeTrailer(seq uint64, kind Kind) uint64 { return kv.MakeTrailer(seq, kind) }

// AppendInternalKey appends ukey followed by its trailer to dst.
func AppendInternalKey(dst, ukey []byte, seq uint64, kind Kind) []byte {
	return kv.AppendInternalKey(dst, ukey, seq, kind)
}

// MakeInternalKey returns a freshly allocated internal key.
func MakeInternalKey(ukey []byte, seq uint64, kind Kind) []byte {
	return kv.MakeInternalKey(ukey, seq, kind)
}

// MakeSearchKey returns the internal key that sorts before every stored
// version of ukey with a sequence number <= seq.
func MakeSearchKey(ukey []byte, seq uint64) []byte { return kv.MakeSearchKey(ukey, seq) }

// UserKey returns the user-key part of a valid internal key.
func UserKey(ikey []byte) []byte { return kv.UserKey(ikey) }

// Trailer returns the trailer of a valid internal key.
func Trailer(ikey []byte) uint64 { return kv.Trailer(ikey) }

// ParseInternalKey splits an internal key (kv.ParseInternalKey).
func ParseInternalKey(ikey []byte) (ukey []byte, seq uint64, kind Kind, ok bool) {
	return kv.ParseInternalKey(ikey)
}

// ValidBoundKey reports whether ikey may bound a table's key range
// (kv.ValidBoundKey).
func ValidBoundKey(ikey []byte) bool { return kv.ValidBoundKey(ikey) }

// CompareInternal orders internal keys (kv.CompareInternal).
func CompareInternal(a, b []byte) int { return kv.CompareInternal(a, b) }

// CompareTrailers orders the trailers of two versions of one user key
// (kv.CompareTrailers).
func CompareTrailers(ta, tb uint64) int { return kv.CompareTrailers(ta, tb) }

// FormatInternalKey renders an internal key for messages and tests.
func FormatInternalKey(ikey []byte) string { return kv.FormatInternalKey(ikey) }
