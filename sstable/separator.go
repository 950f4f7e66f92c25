package sstable

import (
	"bytes"

	"github.com/bloomkv/bloomkv/kv"
)

// appendSeparator appends an index key k with a <= k < b for internal keys
// a < b, as short as it can make it. A shortened key is a user key strictly
// between a's and b's user keys with the largest trailer (MaxSeq, KindSeek):
// any trailer would do, and index keys are never returned to callers.
func appendSeparator(dst, a, b []byte) []byte {
	ua, ub := kv.UserKey(a), kv.UserKey(b)
	if bytes.Compare(ua, ub) < 0 {
		n := 0
		for n < len(ua) && n < len(ub) && ua[n] == ub[n] {
			n++
		}
		// ua is not a prefix of ub (else it could not be shortened), so
		// ua[n] < ub[n]. Bumping ua[n] gives a key > ua that is still < ub
		// when it stays below ub[n], or equals it and is a proper prefix of ub.
		if n < len(ua) {
			if ua[n]+1 < ub[n] || n+1 < len(ub) {
				if n+1 < len(ua) {
					return appendShortened(dst, ua[:n+1], n)
				}
			} else {
				// ub = ua[:n] + (ua[n]+1): keep ua[n] and bump a later byte
				// of ua; the result sorts below ub at position n.
				for i := n + 1; i+1 < len(ua); i++ {
					if ua[i] < 0xff {
						return appendShortened(dst, ua[:i+1], i)
					}
				}
			}
		}
	}
	return append(dst, a...)
}

// appendSuccessor appends a short index key >= a for the last data block.
func appendSuccessor(dst, a []byte) []byte {
	ua := kv.UserKey(a)
	for i := 0; i+1 < len(ua); i++ {
		if ua[i] < 0xff {
			return appendShortened(dst, ua[:i+1], i)
		}
	}
	return append(dst, a...)
}

// appendShortened appends prefix with byte i incremented, followed by the
// largest trailer.
func appendShortened(dst, prefix []byte, i int) []byte {
	start := len(dst)
	dst = append(dst, prefix...)
	dst[start+i]++
	return kv.AppendInternalKey(dst, nil, kv.MaxSeq, kv.KindSeek)
}
