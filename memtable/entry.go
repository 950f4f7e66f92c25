package memtable

import (
	"bytes"
	"encoding/binary"

	"github.com/bloomkv/bloomkv/kv"
)

// entry is one item of the B-tree (40 bytes, stored inline in the nodes).
//
// For a stored entry, ukey is a prefix of a single allocation
//
//	ukey (len(ukey) bytes) | trailer (8 bytes, little-endian) | value
//
// and cap(ukey) reaches the end of the value, so the internal key and the
// value are recovered by reslicing, with no extra pointers.
//
// prefix holds an integer that orders as ukey does (the first 8 bytes of
// ukey, big-endian, zero-padded, or the bytes after the prefix most keys of
// the tree share: keyCodec) and trailer the decoded trailer, so that most
// comparisons during a B-tree search are settled by integers already in
// the node, without following the ukey pointer to memory that is likely not
// cached: with random keys that made Get about 20% faster (BenchmarkGet,
// 128 Ki entries); with keys sharing 12 bytes the codec made inserts 15-28%
// and Gets 41-46% faster (BenchmarkAddSharedPrefix, BenchmarkGetSharedPrefix).
//
// A search pivot (built by Get and the seeks) has the same shape, but ukey
// is the caller's slice with no trailer or value behind it; pivots are only
// ever compared, never returned.
type entry struct {
	ukey    []byte
	prefix  uint64
	trailer uint64
}

// keyPrefix packs up to the first 8 bytes of ukey into an integer whose
// order agrees with bytes.Compare whenever two prefixes differ: where they
// first differ, either both keys have a real byte there or the shorter key
// has run out (padding 0) while the longer one has a byte that, being
// different, is greater than 0.
func keyPrefix(ukey []byte) uint64 {
	if len(ukey) >= 8 {
		return binary.BigEndian.Uint64(ukey)
	}
	var p uint64
	for i, c := range ukey {
		p |= uint64(c) << (56 - 8*i)
	}
	return p
}

// newEntry copies ukey and value into one allocation.
func newEntry(seq uint64, kind kv.Kind, ukey, value []byte) entry {
	return newEntryIn(make([]byte, len(ukey)+kv.TrailerLen+len(value)), seq, kind, ukey, value)
}

// newEntryIn is newEntry writing into buf, of exactly
// len(ukey)+kv.TrailerLen+len(value) bytes (from the memtable's slab).
func newEntryIn(buf []byte, seq uint64, kind kv.Kind, ukey, value []byte) entry {
	n := len(ukey)
	copy(buf, ukey)
	trailer := kv.MakeTrailer(seq, kind)
	binary.LittleEndian.PutUint64(buf[n:], trailer)
	copy(buf[n+kv.TrailerLen:], value)
	return entry{ukey: buf[:n], prefix: keyPrefix(ukey), trailer: trailer}
}

// pivot returns a search entry that compares like the internal key
// ukey#trailer without copying ukey, for a tree whose entries have no
// common prefix (keyCodec{}).
func pivot(ukey []byte, trailer uint64) entry {
	return entry{ukey: ukey, prefix: keyPrefix(ukey), trailer: trailer}
}

// keyCodec says what an entry's prefix holds in one tree. Without a common
// prefix it is the first 8 bytes of the user key (keyPrefix). Keys that
// share a long prefix, such as "user:0000123" and "user:0000456", would
// all have the same first 8 bytes, and every comparison of a search would
// follow the ukey pointers to memory that is likely not cached; so a tree
// learns the prefix most of its keys share (tuneCodec) and its entries'
// prefixes hold the bytes after it instead:
//
//	class (2 bits) | 62 bits of keyPrefix(rest)
//
// where, for common prefix C, a key that starts with C is class 1 and rest
// is what follows C; a key before every such key is class 0, one after them
// class 2, and rest is the whole key. Keys with prefix C are contiguous in
// key order, so classes order as their keys do, and within a class the
// 62 bits order as keyPrefix does (truncated: ties, never inversions).
// Equal prefixes fall back to comparing the keys, so compareEntries is the
// same for every codec; but a tree's entries and pivots must all be made
// with the tree's codec.
type keyCodec struct {
	common []byte // C; empty: prefix is keyPrefix(ukey)
}

func (c *keyCodec) prefix(ukey []byte) uint64 {
	if c == nil || len(c.common) == 0 {
		return keyPrefix(ukey)
	}
	n := len(c.common)
	if len(ukey) >= n && bytes.Equal(ukey[:n], c.common) {
		return 1<<62 | keyPrefix(ukey[n:])>>2
	}
	if bytes.Compare(ukey, c.common) < 0 {
		return keyPrefix(ukey) >> 2
	}
	return 2<<62 | keyPrefix(ukey)>>2
}

// pivot is pivot for a tree whose entries were made with c (nil: the
// empty codec).
func (c *keyCodec) pivot(ukey []byte, trailer uint64) entry {
	return entry{ukey: ukey, prefix: c.prefix(ukey), trailer: trailer}
}

// minCommonPrefix is the shortest common prefix worth a codec: below it
// the first 8 bytes of the keys still tell most of them apart.
const minCommonPrefix = 4

// tuneCodec returns the codec for sorted entries es: the longest prefix
// shared by a run of three quarters of them (so that at most a quarter of
// the keys, such as a few bookkeeping keys beside many user keys, fall in
// classes 0 and 2), or the empty codec when that prefix is shorter than
// minCommonPrefix.
func tuneCodec(es []entry) *keyCodec {
	n := len(es)
	run := n * 3 / 4
	var best []byte
	for start := 0; start+run <= n && run > 0; start += max(n/8, 1) {
		a, b := es[start].ukey, es[start+run-1].ukey
		l := 0
		for l < len(a) && l < len(b) && a[l] == b[l] {
			l++
		}
		if l > len(best) {
			best = a[:l]
		}
	}
	if len(best) < minCommonPrefix {
		return &keyCodec{}
	}
	return &keyCodec{common: bytes.Clone(best)}
}

// internalKey returns ukey followed by its trailer, capped at the trailer.
func (e entry) internalKey() []byte {
	n := len(e.ukey) + kv.TrailerLen
	return e.ukey[:n:n]
}

// value returns the entry's value, capped at its end.
func (e entry) value() []byte {
	c := cap(e.ukey)
	return e.ukey[len(e.ukey)+kv.TrailerLen : c : c]
}

func (e entry) kind() kv.Kind { return kv.Kind(e.trailer & 0xFF) }

// size is the number of payload bytes the entry holds.
func (e entry) size() int { return cap(e.ukey) }

// compareEntries orders entries as kv.CompareInternal orders their
// internal keys: user key ascending, then trailer descending.
func compareEntries(a, b entry) int {
	if a.prefix != b.prefix {
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(a.ukey, b.ukey); c != 0 {
		return c
	}
	return kv.CompareTrailers(a.trailer, b.trailer)
}

// lessEntries is the B-tree's order. It settles unequal prefixes itself,
// which is most comparisons of a search, without calling compareEntries.
func lessEntries(a, b entry) bool {
	if a.prefix != b.prefix {
		return a.prefix < b.prefix
	}
	return compareEntries(a, b) < 0
}
