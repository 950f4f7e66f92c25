package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bloomkv/bloomkv/kv"
)

// Compact index partitions (FormatVersionCompactIndex).
//
// A version 3 index entry costs about 19 bytes for a 4 KiB data block of
// 16-byte keys: three header bytes, a separator of about three bytes, its
// 8-byte trailer -- nearly always (kv.MaxSeq, kv.KindSeek), the trailer of
// every shortened separator (separator.go) -- and a block handle of about
// five. At 32 entries a block that is 0.58 bytes per key, held in the
// block cache beside the filters and the data. A version 4 index
// partition drops what a reader can infer:
//
//   - the trailer, when it is (kv.MaxSeq, kv.KindSeek): the key stores
//     the separator's user key, and a flag marks the rare entry whose
//     separator is a whole data key (the blocks split the versions of one
//     user key), which stores its trailer;
//   - the offset of a data block that starts where the previous entry's
//     block (and its 5-byte trailer) ends, which is every block but the
//     first of a restart run: the data blocks lie back to back.
//
// TestCompactIndexSize measures 19.6 bytes per data block in version 3,
// 8.5 in version 4 (0.594 and 0.258 bytes per key, decoded).
//
// # Layout
//
// A compact index partition is a block of the usual shape (doc.go, "Data
// and index blocks": shared, unshared and value lengths as uvarints, the
// unshared key bytes, the value, then the restart array), restarting
// every 8 entries (compactRestartInterval). What its keys and values hold
// differs:
//
//	key:    the separator's user key (prefix compressed against the
//	        previous entry's key as usual)
//	value:  [offset uvarint]   only when shared = 0 (every restart entry)
//	        size<<1 | x uvarint
//	        [trailer 8 bytes]  only when x = 1: the separator's trailer as
//	                           an internal key stores it (sequence << 8 |
//	                           kind, little-endian)
//
// The entry's index key is its user key followed by the trailer, or by
// (kv.MaxSeq, kv.KindSeek) when x = 0. An entry without an offset
// (shared > 0) locates the block starting where the previous entry's ends:
// previous offset + previous size + 5. Deriving the offset from the
// previous entry, like the key, keeps an entry readable from its restart
// point on; tying it to shared = 0 rather than to the restart array lets
// the iterator decode an entry without asking whether it is a restart.
// (A non-restart entry whose key shares nothing pays for its offset: rare,
// as neighbouring separators share their first bytes.) size<<1 keeps
// sizes below 8 KiB -- a 4 KiB block and its overshoot -- in two bytes.
//
// A decoder checks, besides the block's structure: each value parses
// exactly; x = 1 only with the trailer of a stored kind (set or delete),
// never the implicit one; offsets and sizes do not overflow; the index
// keys strictly increase in kv.CompareInternal order. Where a handle
// points is checked when it is used, against DataSize, as in version 3.
//
// The top-level index keeps the version 3 layout: it has one entry per
// partition, a few hundred bytes per table, and is held by the Reader.
//
// # Cutting partitions
//
// A partition is cut when its entries would take IndexPartitionSize bytes
// in the version 3 encoding, so a version 4 table has the partitions --
// and the filter partitions, which a Get reads whole -- of a version 3
// table of the same entries; its index partitions take some 43% of the
// bytes.

// implicitTrailerValue is the trailer of a shortened separator, the one a
// compact index entry leaves out: (kv.MaxSeq, kv.KindSeek).
const implicitTrailerValue = kv.MaxSeq<<8 | uint64(kv.KindSeek)

// implicitTrailer is implicitTrailerValue as an internal key stores it.
var implicitTrailer = func() (t [kv.TrailerLen]byte) {
	binary.LittleEndian.PutUint64(t[:], implicitTrailerValue)
	return t
}()

// compactIndexBuilder encodes one compact index partition.
type compactIndexBuilder struct {
	block blockBuilder
	prev  blockHandle // the last entry's handle
	value []byte
	// v3Size, v3Restarts, v3Since and v3Last follow what a version 3
	// partition of the same entries would take (blockBuilder's
	// estimatedSize), which decides where partitions are cut.
	v3Size     int
	v3Restarts int
	v3Since    int
	v3Last     []byte
}

func newCompactIndexBuilder() *compactIndexBuilder {
	c := &compactIndexBuilder{block: newBlockBuilder(compactRestartInterval)}
	c.reset()
	return c
}

// reset empties the builder, keeping its buffers.
func (c *compactIndexBuilder) reset() {
	c.block.reset()
	c.prev = blockHandle{}
	c.v3Size, c.v3Restarts, c.v3Since = 0, 1, 0
	c.v3Last = c.v3Last[:0]
}

func (c *compactIndexBuilder) empty() bool { return c.block.empty() }

// add appends the entry for the data block h with index key sep. A block
// that does not start where the previous one ended can be added only where
// the entry stores its offset; the Writer's blocks always do.
func (c *compactIndexBuilder) add(sep []byte, h blockHandle) error {
	ukey, trailer := kv.UserKey(sep), sep[len(sep)-kv.TrailerLen:]
	shared := c.block.sharedWith(ukey)
	v := c.value[:0]
	if shared == 0 {
		v = binary.AppendUvarint(v, h.offset)
	} else if h.offset != c.prev.end() {
		return fmt.Errorf("bloomkv/sstable: index entry %s: block at %d does not follow the previous one (%d + %d)",
			formatKey(sep), h.offset, c.prev.offset, c.prev.size)
	}
	if bytes.Equal(trailer, implicitTrailer[:]) {
		v = binary.AppendUvarint(v, h.size<<1)
	} else {
		v = binary.AppendUvarint(v, h.size<<1|1)
		v = append(v, trailer...)
	}
	c.value = v
	c.block.add(ukey, v)
	c.prev = h
	c.noteV3(sep, h)
	return nil
}

// noteV3 adds what sep and h would take in a version 3 partition.
func (c *compactIndexBuilder) noteV3(sep []byte, h blockHandle) {
	shared := 0
	if c.v3Since == partitionRestartInterval {
		c.v3Restarts++
		c.v3Since = 0
	} else if len(c.v3Last) > 0 {
		n := min(len(sep), len(c.v3Last))
		for shared < n && sep[shared] == c.v3Last[shared] {
			shared++
		}
	}
	vlen := uvarintLen(h.offset) + uvarintLen(h.size)
	unshared := len(sep) - shared
	c.v3Size += uvarintLen(uint64(shared)) + uvarintLen(uint64(unshared)) + uvarintLen(uint64(vlen)) + unshared + vlen
	c.v3Last = append(c.v3Last[:0], sep...)
	c.v3Since++
}

// v3EstimatedSize is what blockBuilder.estimatedSize would say of a
// version 3 partition of the entries added so far.
func (c *compactIndexBuilder) v3EstimatedSize() int {
	return c.v3Size + 4*c.v3Restarts + 4
}

// finish returns the encoded partition, valid until the next reset or add.
func (c *compactIndexBuilder) finish() []byte { return c.block.finish() }

// uvarintLen is the length of v's uvarint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// compactFromBlock re-encodes the Writer's first index partition, built
// as an unpartitioned (version 1) index block, as a compact partition.
func compactFromBlock(raw []byte) ([]byte, error) {
	b, err := decodeBlock(raw, location{file: "the writer's index", kind: kindIndexPartition})
	if err != nil {
		return nil, fmt.Errorf("bloomkv/sstable: re-encoding the first index partition: %w", err)
	}
	out := newCompactIndexBuilder()
	var it blockIter
	it.init(b)
	for ok := it.First(); ok; ok = it.Next() {
		h, ok := decodeHandle(it.Value())
		if !ok {
			return nil, fmt.Errorf("bloomkv/sstable: re-encoding the first index partition: bad handle %x", it.Value())
		}
		if err := out.add(it.Key(), h); err != nil {
			return nil, err
		}
	}
	return append([]byte(nil), out.finish()...), nil
}

// decodeCompactIndex validates a compact index partition and returns it.
func decodeCompactIndex(data []byte, loc location) (*block, error) {
	return decodeBlockAs(data, loc, true)
}

// decodeCompactValue completes the entry blockIter.decodeAt has just
// decoded in a compact block: appends the trailer to the key and computes
// the handle, from the previous entry's when the entry shares key bytes.
// decodeCompactIndex checked the bytes. (Every entry a seek scans comes
// through here, so the usual one- and two-byte sizes are decoded inline:
// a 4 KiB block's size<<1 takes two bytes.)
func (it *blockIter) decodeCompactValue(full bool) {
	v := it.value
	offset := it.h.end()
	if full {
		var n int
		offset, n = binary.Uvarint(v)
		v = v[n:]
	}
	var x uint64
	switch {
	case v[0] < 0x80:
		x, v = uint64(v[0]), v[1:]
	case v[1] < 0x80:
		x, v = uint64(v[0]&0x7f)|uint64(v[1])<<7, v[2:]
	default:
		var n int
		x, n = binary.Uvarint(v)
		v = v[n:]
	}
	t := implicitTrailerValue
	if x&1 != 0 {
		t = binary.LittleEndian.Uint64(v)
	}
	it.key = binary.LittleEndian.AppendUint64(it.key, t)
	it.h = blockHandle{offset: offset, size: x >> 1}
}

// validateCompactEntries is validateEntries for a compact index
// partition: the structure, the values, and the order of the index keys
// the entries stand for.
//
// It runs for every index partition read from a file (a Get's cache
// miss), so the usual cases are inline: a one-byte entry header, and
// values whose varints decode in place. The order check keeps the
// previous user key and its trailer apart, so the trailer bytes are not
// copied for each entry. (BenchmarkDecodeCompactIndex, six alternating
// runs at load 6: median 7.4 -> 3.7 us a partition.)
func (b *block) validateCompactEntries(loc location) error {
	var keyArr [64]byte
	key := keyArr[:0]                   // the previous entry's user key
	prevTrailer := implicitTrailerValue // and its trailer
	var h blockHandle
	nextRestart := 0
	d, end := b.data, b.restartsOff
	for off := 0; off < end; {
		var e entry
		if off+3 <= end && (d[off]|d[off+1]|d[off+2])&0x80 == 0 {
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
		v := d[e.valueStart:e.next]
		offset, p := h.end(), 0
		if e.shared == 0 {
			o, n := binary.Uvarint(v)
			if n <= 0 {
				return loc.corruptf("entry at block offset %d: bad block offset %x", off, v)
			}
			offset, p = o, n
		}
		var x uint64
		if p < len(v) && v[p] < 0x80 {
			x = uint64(v[p])
			p++
		} else if p+1 < len(v) && v[p+1] < 0x80 {
			x = uint64(v[p]&0x7f) | uint64(v[p+1])<<7
			p += 2
		} else {
			var n int
			if x, n = binary.Uvarint(v[p:]); n <= 0 {
				return loc.corruptf("entry at block offset %d: bad block size %x", off, v)
			}
			p += n
		}
		trailer := implicitTrailerValue
		if x&1 != 0 {
			if len(v)-p < kv.TrailerLen {
				return loc.corruptf("entry at block offset %d: %d bytes cannot hold a trailer", off, len(v)-p)
			}
			trailer = binary.LittleEndian.Uint64(v[p:])
			p += kv.TrailerLen
			if k := kv.Kind(trailer & 0xff); k != kv.KindSet && k != kv.KindDelete {
				return loc.corruptf("entry at block offset %d: stored trailer %x is not a data key's", off, v[p-kv.TrailerLen:p])
			}
		}
		if p != len(v) {
			return loc.corruptf("entry at block offset %d: %d bytes after the value", off, len(v)-p)
		}
		size := x >> 1
		if offset > math.MaxUint64-blockTrailerLen || size > math.MaxUint64-blockTrailerLen-offset {
			return loc.corruptf("entry at block offset %d: handle (%d, %d) overflows", off, offset, size)
		}
		h = blockHandle{offset: offset, size: size}
		unshared := d[e.keyStart:e.valueStart]
		if b.numEntries > 0 {
			// The user keys share key[:e.shared]; then the rest decides,
			// then the trailers.
			c := bytes.Compare(key[e.shared:], unshared)
			if c > 0 || c == 0 && kv.CompareTrailers(prevTrailer, trailer) >= 0 {
				prev := binary.LittleEndian.AppendUint64(bytes.Clone(key), prevTrailer)
				cur := binary.LittleEndian.AppendUint64(append(bytes.Clone(key[:e.shared]), unshared...), trailer)
				return loc.corruptf("entry at block offset %d: key %s does not sort after %s", off, kv.FormatInternalKey(cur), kv.FormatInternalKey(prev))
			}
		}
		key = append(key[:e.shared], unshared...)
		prevTrailer = trailer
		b.numEntries++
		off = e.next
	}
	if nextRestart != b.numRestarts && b.numEntries > 0 {
		return loc.corruptf("restart point %d (%d) is not at an entry boundary", nextRestart, b.restart(nextRestart))
	}
	return nil
}

// restartUserKey returns the user key of the key at restart point i.
func (b *block) restartUserKey(i int) []byte {
	if b.compact {
		return b.restartKey(i)
	}
	return kv.UserKey(b.restartKey(i))
}

// compareRestart is kv.CompareInternal(key of restart i, target).
func (b *block) compareRestart(i int, target []byte) int {
	if !b.compact {
		return kv.CompareInternal(b.restartKey(i), target)
	}
	if c := bytes.Compare(b.restartKey(i), kv.UserKey(target)); c != 0 {
		return c
	}
	// A restart entry shares nothing, so its value starts with the offset.
	e, _ := b.entryAt(b.restart(i))
	v := b.data[e.valueStart:e.next]
	_, n := binary.Uvarint(v)
	x, m := binary.Uvarint(v[n:])
	t := implicitTrailerValue
	if x&1 != 0 {
		t = binary.LittleEndian.Uint64(v[n+m:])
	}
	return kv.CompareTrailers(t, kv.Trailer(target))
}

// compactRestartInterval is the restart interval of compact partitions.
// A seek scans on average half a run from the restart before its target,
// and a compact entry costs more to decode than a version 3 one (its
// value holds the size every later offset in the run is derived from):
// with version 3's 16, BenchmarkIndexPartitionSeek took about a quarter
// longer than in version 3 (481 against 383 ns, medians of 10 at load 7,
// p = 0.09); with 8, a third less (269 against 400 ns, p < 0.001), for
// about half a byte more per entry (a restart offset and a whole handle
// per 8 entries; 0.018 bytes per key in TestCompactIndexSize).
const compactRestartInterval = 8
