package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// keySpace maps slots to keys and values. Slot 2i is the i-th key the fill
// writes (i in [0, num)); odd slots are never written, so slot 2i+1 is an
// absent key between the i-th and (i+1)-th present keys. The mapping
// depends only on its parameters, never on -seed (see doc.go).
type keySpace struct {
	num int
	// rows and cols: with rows > 0 the keys are row+column keys: present
	// key i is column i%cols of row i/cols, and absent slot 2i+1 is an odd
	// (never written) column of the same row (see rowKey).
	rows, cols int
	keySize    int
	valueSize  int
	// rawSize is the random part of each value: a value is rawSize bytes
	// cut from pool, repeated up to valueSize, so that it compresses to
	// about -compression_ratio by itself (db_bench builds values alike).
	rawSize int
	// stride is the width of one slot's share of the 64-bit prefix space.
	stride uint64
	// pool is fixed pseudo-random bytes that values are cut from.
	pool []byte
}

func newKeySpace(num, keySize, valueSize int, compressionRatio float64) *keySpace {
	return newRowKeySpace(0, 0, num, keySize, valueSize, compressionRatio)
}

// newRowKeySpace is newKeySpace for row+column keys when rows > 0 (num
// must be rows*cols then).
func newRowKeySpace(rows, cols, num, keySize, valueSize int, compressionRatio float64) *keySpace {
	spread := 2 * num
	if rows > 0 {
		spread = 2 * rows
	}
	ks := &keySpace{
		rows:      rows,
		cols:      cols,
		num:       num,
		keySize:   keySize,
		valueSize: valueSize,
		rawSize:   min(valueSize, max(1, int(math.Ceil(float64(valueSize)*compressionRatio)))),
		stride:    math.MaxUint64 / uint64(spread),
	}
	rng := rand.New(rand.NewPCG(0x6b7662656e6368, 0x706f6f6c)) // fixed: values never depend on -seed
	ks.pool = make([]byte, max(1<<20, 2*ks.rawSize))
	for i := range ks.pool {
		ks.pool[i] = byte(rng.Uint32())
	}
	return ks
}

// mix64 is the splitmix64 finalizer: a bijection on uint64 that spreads
// consecutive inputs over the whole range.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// key appends slot's key to dst[:0]. The first 8 bytes, big-endian, are
// slot*stride plus a pseudo-random offset below stride: strictly increasing
// with slot (so fillseq writes in key order and odd slots fall between
// their neighbours) yet spread over the whole 64-bit space like random keys.
// The rest of the key is pseudo-random padding derived from the slot.
func (ks *keySpace) key(dst []byte, slot uint64) []byte {
	if ks.rows > 0 {
		i := slot / 2
		return ks.cellKey(dst, 2*(i/uint64(ks.cols)), 2*(i%uint64(ks.cols))+slot%2)
	}
	prefix := slot*ks.stride + mix64(slot)%ks.stride
	dst = binary.BigEndian.AppendUint64(dst[:0], prefix)
	for h := mix64(^slot); len(dst) < ks.keySize; h = mix64(h) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], h)
		dst = append(dst, b[:min(8, ks.keySize-len(dst))]...)
	}
	return dst
}

// value appends slot's value to dst[:0]: rawSize pool bytes chosen by the
// slot, repeated to valueSize.
func (ks *keySpace) value(dst []byte, slot uint64) []byte {
	dst = dst[:0]
	if ks.valueSize == 0 {
		return dst
	}
	off := mix64(slot+0x5eed) % uint64(len(ks.pool)-ks.rawSize+1)
	raw := ks.pool[off : off+uint64(ks.rawSize)]
	for len(dst) < ks.valueSize {
		dst = append(dst, raw[:min(len(raw), ks.valueSize-len(dst))]...)
	}
	return dst
}

// presentSlot returns the slot of the i-th present key, i in [0, num).
func presentSlot(i int) uint64 { return 2 * uint64(i) }

// randomPresent returns the slot of a uniformly chosen present key.
func (ks *keySpace) randomPresent(rng *rand.Rand) uint64 {
	return presentSlot(rng.IntN(ks.num))
}

// randomAbsent returns the slot of a uniformly chosen absent key strictly
// inside the key range: slots 1, 3, ..., 2*num-3 (slot 2*num-1 would lie
// above the largest key, where no table would even be probed).
func (ks *keySpace) randomAbsent(rng *rand.Rand) uint64 {
	return 2*uint64(rng.IntN(ks.num-1)) + 1
}

// rowKeyLen is the width of the row part of a row+column key: the filter
// key (Options.FilterKey returns it), so that every key of a row starts
// with it and every key starting with it is the row's.
const rowKeyLen = 8

// rowFilterKey is the extractor kvbench opens row+column databases with.
func rowFilterKey(k []byte) []byte {
	if len(k) < rowKeyLen {
		return k
	}
	return k[:rowKeyLen]
}

// cellKey appends the key of column colSlot of row rowSlot to dst[:0].
// Even row slots 2r are the rows the fill writes, odd ones rows it never
// writes (between two written rows); likewise even column slots are the
// written columns. The row is 8 bytes, big-endian, spread over the 64-bit
// space like ordinary keys; then the column slot (2 bytes, big-endian);
// then padding derived from both, up to -key_size.
func (ks *keySpace) cellKey(dst []byte, rowSlot, colSlot uint64) []byte {
	prefix := rowSlot*ks.stride + mix64(rowSlot)%ks.stride
	dst = binary.BigEndian.AppendUint64(dst[:0], prefix)
	dst = binary.BigEndian.AppendUint16(dst, uint16(colSlot))
	for h := mix64(rowSlot<<16 | colSlot); len(dst) < ks.keySize; h = mix64(h) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], h)
		dst = append(dst, b[:min(8, ks.keySize-len(dst))]...)
	}
	return dst
}

// randomRow returns a uniformly chosen written row's slot, and with absent
// one strictly between two written rows.
func (ks *keySpace) randomRow(rng *rand.Rand, absent bool) uint64 {
	if absent {
		return 2*uint64(rng.IntN(ks.rows-1)) + 1
	}
	return 2 * uint64(rng.IntN(ks.rows))
}
