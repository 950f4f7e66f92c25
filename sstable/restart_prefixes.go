package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/bloomkv/bloomkv/kv"
)

// Restart prefixes speed up seeks in index blocks.
//
// An index block has one restart per entry (one per data block, about a
// thousand in a 2 MiB table), and every Get and seek binary searches it.
// The block stays in memory for as long as its table is open, but with
// dozens of open tables it is not in the CPU cache: each of the ~10 probes
// of the search touches another cache line of a 30 KB block and decodes an
// entry header there. (In a profile of random Gets on a 1M-key tree this
// search was 12% of a Get.)
//
// restartPrefixes keeps, next to the block, eight bytes of each restart's
// user key packed into a uint64: the bytes after the prefix that every key
// of the block shares (the first and last keys' common prefix, since keys
// are sorted), big-endian and zero-padded, so that comparing two numbers
// orders the keys as bytes.Compare would, except that keys whose eight bytes
// agree compare equal. The search runs on the compact array and compares
// whole keys only among restarts whose number equals the target's.
//
// Soundness: for user keys a and b sharing the common prefix, a < b implies
// num(a) <= num(b). So a restart whose number is below the target's has a
// user key below the target's, and sorts before the target whatever the
// trailers; one whose number is above sorts after it.
type restartPrefixes struct {
	common []byte   // the prefix every user key in the block shares
	nums   []uint64 // per restart: the 8 bytes after common
}

// prefixNum packs ukey[skip:skip+8] big-endian, zero-padded.
func prefixNum(ukey []byte, skip int) uint64 {
	if len(ukey) >= skip+8 {
		return binary.BigEndian.Uint64(ukey[skip:])
	}
	var buf [8]byte
	if skip < len(ukey) {
		copy(buf[:], ukey[skip:])
	}
	return binary.BigEndian.Uint64(buf[:])
}

// buildRestartPrefixes computes b's restart prefixes. b must be a decoded
// (validated) block.
func (b *block) buildRestartPrefixes() {
	if b.numRestarts == 0 || b.numEntries == 0 {
		return
	}
	first := b.restartUserKey(0)
	last := kv.UserKey(b.lastKey())
	n := 0
	for n < len(first) && n < len(last) && first[n] == last[n] {
		n++
	}
	p := &restartPrefixes{common: first[:n:n], nums: make([]uint64, b.numRestarts)}
	for i := range p.nums {
		p.nums[i] = prefixNum(b.restartUserKey(i), n)
	}
	b.prefixes = p
}

// lastKey returns the block's last key (a fresh slice).
func (b *block) lastKey() []byte {
	var it blockIter
	it.init(b)
	if !it.Last() {
		return nil
	}
	return append([]byte(nil), it.Key()...)
}

// searchRestarts returns the index of the first restart whose key is >=
// target, or numRestarts when there is none.
func (b *block) searchRestarts(target []byte) int {
	lo, hi := 0, b.numRestarts
	if p := b.prefixes; p != nil {
		ut := kv.UserKey(target)
		c := len(p.common)
		// Targets outside the shared prefix sort before or after every key.
		if len(ut) < c {
			if bytes.Compare(ut, p.common[:len(ut)]) <= 0 {
				return 0 // a proper prefix of every key, or below them
			}
			return b.numRestarts
		}
		if cmp := bytes.Compare(ut[:c], p.common); cmp != 0 {
			if cmp < 0 {
				return 0
			}
			return b.numRestarts
		}
		tn := prefixNum(ut, c)
		// [lo, hi): the restarts whose number equals the target's.
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if p.nums[mid] < tn {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		i, j := lo, b.numRestarts
		for i < j {
			mid := int(uint(i+j) >> 1)
			if p.nums[mid] <= tn {
				i = mid + 1
			} else {
				j = mid
			}
		}
		hi = i
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if b.compareRestart(mid, target) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// prefixesMemory returns the bytes the restart prefixes hold.
func (b *block) prefixesMemory() int {
	if b.prefixes == nil {
		return 0
	}
	return 8*len(b.prefixes.nums) + len(b.prefixes.common)
}
