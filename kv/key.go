package kv

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Kind says what an entry is. The values are stored on disk and never change.
type Kind uint8

const (
	// KindDelete is a tombstone: the user key is absent as of this sequence.
	KindDelete Kind = 0
	// KindSet holds a value.
	KindSet Kind = 1
	// KindRangeDelete is a range tombstone: a batch operation and the kind
	// of the spans of a range-deletion block (package rangedel). It is never
	// an entry of a memtable's tree or a data block: ParseInternalKey
	// rejects it.
	KindRangeDelete Kind = 2
	// KindSeek is never stored. With MaxSeq it forms the largest trailer, so
	// a search key built from it sorts before every stored version of its
	// user key.
	KindSeek Kind = 0xFF
)

func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindRangeDelete:
		return "RANGEDEL"
	case KindSeek:
		return "SEEK"
	}
	return fmt.Sprintf("KIND(%d)", uint8(k))
}

// MaxSeq is the largest sequence number (56 bits).
const MaxSeq uint64 = 1<<56 - 1

// TrailerLen is the size of an internal key's trailer in bytes.
const TrailerLen = 8

// MakeTrailer packs a sequence number and a kind.
func MakeTrailer(seq uint64, kind Kind) uint64 { return seq<<8 | uint64(kind) }

// AppendInternalKey appends ukey followed by its trailer to dst.
func AppendInternalKey(dst, ukey []byte, seq uint64, kind Kind) []byte {
	dst = append(dst, ukey...)
	return binary.LittleEndian.AppendUint64(dst, MakeTrailer(seq, kind))
}

// MakeInternalKey returns a freshly allocated internal key.
func MakeInternalKey(ukey []byte, seq uint64, kind Kind) []byte {
	return AppendInternalKey(make([]byte, 0, len(ukey)+TrailerLen), ukey, seq, kind)
}

// MakeSearchKey returns the internal key that sorts before every stored
// version of ukey with a sequence number <= seq. SeekGE(MakeSearchKey(k, s))
// lands on the newest version of k visible at s (or a later user key).
func MakeSearchKey(ukey []byte, seq uint64) []byte {
	return MakeInternalKey(ukey, seq, KindSeek)
}

// UserKey returns the user-key part of a valid internal key.
func UserKey(ikey []byte) []byte { return ikey[:len(ikey)-TrailerLen] }

// Trailer returns the trailer of a valid internal key.
func Trailer(ikey []byte) uint64 {
	return binary.LittleEndian.Uint64(ikey[len(ikey)-TrailerLen:])
}

// ParseInternalKey splits an internal key. ok is false when ikey is too short
// to hold a trailer or its kind is not a stored kind.
func ParseInternalKey(ikey []byte) (ukey []byte, seq uint64, kind Kind, ok bool) {
	if len(ikey) < TrailerLen {
		return nil, 0, 0, false
	}
	t := Trailer(ikey)
	kind = Kind(t & 0xFF)
	if kind != KindSet && kind != KindDelete {
		return nil, 0, 0, false
	}
	return ikey[:len(ikey)-TrailerLen], t >> 8, kind, true
}

// ValidBoundKey reports whether ikey may bound a table's key range: an
// internal key of a stored kind, or of KindRangeDelete (the bound a range
// tombstone gives a table).
func ValidBoundKey(ikey []byte) bool {
	if len(ikey) < TrailerLen {
		return false
	}
	k := Kind(Trailer(ikey) & 0xFF)
	return k == KindSet || k == KindDelete || k == KindRangeDelete
}

// CompareInternal orders internal keys: user key ascending, then trailer
// descending (newer first).
func CompareInternal(a, b []byte) int {
	if c := bytes.Compare(UserKey(a), UserKey(b)); c != 0 {
		return c
	}
	return CompareTrailers(Trailer(a), Trailer(b))
}

// CompareTrailers orders the trailers of two versions of one user key:
// descending, so that the newest version (highest sequence) sorts first.
// It is the one definition of that order; the memtable and block decoder
// use it too.
func CompareTrailers(ta, tb uint64) int {
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// FormatInternalKey renders an internal key for messages and tests.
func FormatInternalKey(ikey []byte) string {
	if len(ikey) < TrailerLen {
		return fmt.Sprintf("invalid(%q)", ikey)
	}
	t := Trailer(ikey)
	return fmt.Sprintf("%q#%d,%s", UserKey(ikey), t>>8, Kind(t&0xFF))
}
