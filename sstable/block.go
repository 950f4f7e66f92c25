package sstable

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/kv"
)

// block is a decoded, validated data or index block. It is immutable once
// decoded and may be shared by any number of iterators and the cache.
//
// Invariants established by decodeBlock, which the iterators rely on:
// every entry header and body lies inside data[:restartsOff]; entries tile
// data[:restartsOff] exactly; restart offsets are strictly increasing, the
// first is 0 and each is the start of an entry whose shared length is 0;
// every key is an internal key (>= 8 bytes; in data blocks with a stored
// kind) and keys are strictly increasing in kv.CompareInternal order.
type block struct {
	data        []byte
	restartsOff int // start of the restart array = end of the entries
	numRestarts int
	numEntries  int
	// compact: a compact index partition (index_compact.go), whose keys
	// are user keys and whose values are delta-encoded handles;
	// blockIter rebuilds whole index keys and handles from them.
	compact bool
	// prefixes, when set (index blocks of open tables), speed up the
	// search over restarts (restart_prefixes.go).
	prefixes *restartPrefixes
	// refs and buf let a data block's buffer be recycled once the cache
	// has evicted it and nobody reads it; buf is constant once the block
	// is published (block_recycle.go).
	refs atomic.Int32
	buf  *[]byte
}

// restart returns the offset of restart point i.
func (b *block) restart(i int) int {
	return int(binary.LittleEndian.Uint32(b.data[b.restartsOff+4*i:]))
}

// entry is a decoded entry header.
type entry struct {
	shared, unshared int
	keyStart         int // offset of the unshared key bytes
	valueStart       int
	next             int // offset of the following entry
}

// uvarintAt decodes a uvarint at data[p:end]; next is -1 on failure.
func uvarintAt(data []byte, p, end int) (v uint64, next int) {
	if p < end && data[p] < 0x80 { // the common one-byte case
		return uint64(data[p]), p + 1
	}
	v, n := binary.Uvarint(data[p:end])
	if n <= 0 {
		return 0, -1
	}
	return v, p + n
}

// entryAt decodes the entry header at off; ok is false when it does not fit
// inside the entry area. It checks bounds only, not the shared length.
func (b *block) entryAt(off int) (e entry, ok bool) {
	end := b.restartsOff
	if d := b.data; off+3 <= end && (d[off]|d[off+1]|d[off+2])&0x80 == 0 {
		// The usual header: three one-byte varints.
		e.shared, e.unshared = int(d[off]), int(d[off+1])
		e.keyStart = off + 3
		e.valueStart = e.keyStart + e.unshared
		e.next = e.valueStart + int(d[off+2])
		return e, e.next <= end
	}
	shared, p := uvarintAt(b.data, off, end)
	if p < 0 {
		return entry{}, false
	}
	unshared, p := uvarintAt(b.data, p, end)
	if p < 0 {
		return entry{}, false
	}
	vlen, p := uvarintAt(b.data, p, end)
	if p < 0 {
		return entry{}, false
	}
	room := uint64(end - p)
	if unshared > room || vlen > room-unshared || shared > uint64(end) {
		return entry{}, false
	}
	e.shared = int(shared)
	e.unshared = int(unshared)
	e.keyStart = p
	e.valueStart = p + e.unshared
	e.next = e.valueStart + int(vlen)
	return e, true
}

// restartKey returns the whole key stored at restart point i, aliasing the
// block (restart entries have shared = 0).
func (b *block) restartKey(i int) []byte {
	off, d := b.restart(i), b.data
	// Fast path for the usual header: shared 0, key and value lengths below
	// 128, one byte each. decodeBlock parsed these same bytes, so the key
	// lies inside the block.
	if off+3 <= b.restartsOff && d[off] == 0 && d[off+1] < 0x80 && d[off+2] < 0x80 {
		return d[off+3 : off+3+int(d[off+1])]
	}
	e, _ := b.entryAt(off)
	return d[e.keyStart:e.valueStart]
}

// decodeBlock validates an uncompressed data or index block and returns it.
// It walks every entry once, so iterators need no error paths for malformed
// bytes.
func decodeBlock(data []byte, loc location) (*block, error) {
	return decodeBlockAs(data, loc, false)
}

// decodeBlockAs is decodeBlock for a compact index partition when compact
// is set (decodeCompactIndex).
func decodeBlockAs(data []byte, loc location, compact bool) (*block, error) {
	if len(data) < 4 {
		return nil, loc.corruptf("%d bytes cannot hold the restart count", len(data))
	}
	numRestarts := uint64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	if numRestarts == 0 {
		return nil, loc.corruptf("zero restart points")
	}
	if numRestarts > uint64(len(data)-4)/4 {
		return nil, loc.corruptf("%d restart points do not fit in %d bytes", numRestarts, len(data))
	}
	b := &block{
		data:        data,
		restartsOff: len(data) - 4 - 4*int(numRestarts),
		numRestarts: int(numRestarts),
		compact:     compact,
	}
	prevRestart := -1
	for i := 0; i < b.numRestarts; i++ {
		r := b.restart(i)
		switch {
		case i == 0 && r != 0:
			return nil, loc.corruptf("first restart point is %d, not 0", r)
		case r <= prevRestart:
			return nil, loc.corruptf("restart point %d (%d) is not after the previous one (%d)", i, r, prevRestart)
		case r >= b.restartsOff && !(r == 0 && b.restartsOff == 0):
			return nil, loc.corruptf("restart point %d (%d) lies beyond the entries, which end at %d", i, r, b.restartsOff)
		}
		prevRestart = r
	}
	validate := b.validateEntries
	if compact {
		validate = b.validateCompactEntries
	}
	if err := validate(loc); err != nil {
		return nil, err
	}
	if loc.kind == kindData && b.numEntries == 0 {
		return nil, loc.corruptf("empty data block")
	}
	return b, nil
}

// validateEntries walks the entries, checking the invariants listed on block.
//
// It keeps one key buffer: an entry's key is the previous key's first
// shared bytes followed by its own unshared bytes, so the order check can
// compare the previous key's tail with the unshared bytes before the
// buffer is overwritten, without building each key in a second buffer.
// (This walk runs for every block read from a file; in a profile of short
// scans it was a tenth of the time.)
//
// The key buffer starts on the stack, so validating a block of keys up to
// its size allocates nothing: every block a cache-miss Get reads is
// validated, and each allocation there is garbage for the collector that
// two readers pay for. The error paths hand the formatter a copy, or the
// buffer would escape.
func (b *block) validateEntries(loc location) error {
	var keyArr [64]byte
	key := keyArr[:0] // the previous entry's key, then this one's
	nextRestart := 0
	off := 0
	d, end := b.data, b.restartsOff
	for off < end {
		var e entry
		if off+3 <= end && (d[off]|d[off+1]|d[off+2])&0x80 == 0 {
			// The usual header, inline (entryAt's fast path, without the
			// call: this loop runs for every entry of every block read).
			// Sharing one inlined helper with entryAt measured 25-50%
			// slower in BenchmarkDecodeBlock, so the lines stay twice.
			e.shared, e.unshared = int(d[off]), int(d[off+1])
			e.keyStart = off + 3
			e.valueStart = e.keyStart + e.unshared
			e.next = e.valueStart + int(d[off+2])
			if e.next > end {
				return loc.corruptf("entry at block offset %d overruns the entries", off)
			}
		} else {
			var ok bool
			if e, ok = b.entryAt(off); !ok {
				return loc.corruptf("entry at block offset %d overruns the entries", off)
			}
		}
		if nextRestart < b.numRestarts && b.restart(nextRestart) <= off {
			if err := b.checkRestart(nextRestart, off, e.shared, loc); err != nil {
				return err
			}
			nextRestart++
		}
		if e.shared > len(key) {
			return loc.corruptf("entry at block offset %d shares %d bytes of a %d-byte previous key", off, e.shared, len(key))
		}
		unshared := d[e.keyStart:e.valueStart]
		klen := e.shared + len(unshared)
		if klen < kv.TrailerLen {
			return loc.corruptf("entry at block offset %d: key of %d bytes is too short for an internal key", off, klen)
		}
		if b.numEntries > 0 && !sortsAfter(key, e.shared, unshared) {
			prev := bytes.Clone(key)
			cur := append(prev[:e.shared:e.shared], unshared...)
			return loc.corruptf("entry at block offset %d: key %s does not sort after %s", off, kv.FormatInternalKey(cur), kv.FormatInternalKey(prev))
		}
		key = append(key[:e.shared], unshared...)
		if loc.kind == kindData {
			if k := kv.Kind(key[klen-kv.TrailerLen]); k != kv.KindSet && k != kv.KindDelete {
				return loc.corruptf("entry at block offset %d: key %s has an invalid kind", off, kv.FormatInternalKey(bytes.Clone(key)))
			}
		}
		b.numEntries++
		off = e.next
	}
	if off != end {
		return loc.corruptf("entries end at %d, past the restart array at %d", off, end)
	}
	if nextRestart != b.numRestarts && b.numEntries > 0 {
		return loc.corruptf("restart point %d (%d) is not at an entry boundary", nextRestart, b.restart(nextRestart))
	}
	return nil
}

// checkRestart checks restart point i, which validation has reached at
// the entry at off (sharing shared bytes): it must be that entry, and the
// entry must share nothing.
func (b *block) checkRestart(i, off, shared int, loc location) error {
	if r := b.restart(i); r < off {
		return loc.corruptf("restart point %d (%d) is not at an entry boundary", i, r)
	}
	if shared != 0 {
		return loc.corruptf("restart entry at block offset %d shares %d bytes", off, shared)
	}
	return nil
}

// sortsAfter reports whether prev[:shared] + unshared sorts strictly after
// prev. A writer shares the longest common prefix, so the byte after it
// differs and usually decides inside both user keys; anything else takes
// compareWithSuccessor.
func sortsAfter(prev []byte, shared int, unshared []byte) bool {
	if len(unshared) > kv.TrailerLen && shared < len(prev)-kv.TrailerLen {
		// The byte at shared lies in both user keys.
		if a, b := prev[shared], unshared[0]; a != b {
			return a < b
		}
	}
	return compareWithSuccessor(prev, shared, unshared) < 0
}

// compareWithSuccessor is kv.CompareInternal(prev, next) for the internal
// key next = prev[:shared] + unshared (len(next) >= kv.TrailerLen,
// shared <= len(prev)), without building next when the shared prefix lies
// inside both user keys.
func compareWithSuccessor(prev []byte, shared int, unshared []byte) int {
	pu := len(prev) - kv.TrailerLen
	nu := shared + len(unshared) - kv.TrailerLen
	if shared > pu || shared > nu {
		next := append(prev[:shared:shared], unshared...)
		return kv.CompareInternal(prev, next)
	}
	if c := bytes.Compare(prev[shared:pu], unshared[:nu-shared]); c != 0 {
		return c
	}
	return kv.CompareTrailers(kv.Trailer(prev), kv.Trailer(unshared[nu-shared:]))
}
