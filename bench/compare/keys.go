package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// keySpace maps slots to keys and values, the same for every engine.
//
// Slot 2i holds the i-th key the fills write (i in [0, num)); odd slots are
// never written, so slot 2i+1 is an absent key strictly between the i-th and
// (i+1)-th present keys. A slot's key begins with a big-endian 64-bit number
// that grows with the slot and is spread over the whole 64-bit range, so the
// keys look random to a filter's hash yet keep slot order; the rest of the
// key is padding derived from the slot. Keys and values depend only on the
// key space's parameters, never on -seed.
type keySpace struct {
	num       int
	keySize   int
	valueSize int
	// width is each slot's share of the 64-bit prefix range.
	width uint64
	// randomBytes is how much of each value is random; the rest repeats
	// it, so values compress to about -compression_ratio (as db_bench's do).
	randomBytes int
	// pool is fixed pseudo-random bytes that values are cut from.
	pool []byte

	// cols > 0 lays the keys out as rows of cols columns (-cols_per_row):
	// see rowKeySpace.
	cols     int
	rows     int
	rowWidth uint64
}

// Row layout (-cols_per_row C > 0): the present key i is column i%C of row
// i/C. A key is its row's 8-byte prefix followed by the big-endian column
// number and padding; present columns are even (2c), so the absent slot
// 2i+1 is the odd column 2c+1 of the same row, an absent column of a
// present row that sorts between present keys i and i+1. Present rows have
// even row slots (2r), absent rows odd ones (2r+1), so an absent row's
// prefix lies strictly between two present rows'. The row prefix is what
// the engines' filters hold (bloomkv's FilterKey, Pebble's Comparer.Split)
// and what SeekPrefixGE seeks.
const rowPrefixLen = 8

func newKeySpace(num, keySize, valueSize int, compressionRatio float64) *keySpace {
	ks := &keySpace{
		num:         num,
		keySize:     keySize,
		valueSize:   valueSize,
		width:       math.MaxUint64 / uint64(2*num),
		randomBytes: min(valueSize, max(1, int(math.Ceil(float64(valueSize)*compressionRatio)))),
	}
	rng := rand.New(rand.NewPCG(0x636f6d70, 0x76616c7565)) // fixed: values never depend on -seed
	ks.pool = make([]byte, 1<<20+ks.randomBytes)
	for i := 0; i < len(ks.pool); i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(ks.pool[i:], w[:])
	}
	return ks
}

// scramble is a bijection on uint64 (the splitmix64 output function) that
// spreads neighbouring inputs far apart.
func scramble(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// withRows lays the key space out as rows of cols columns (cols must
// divide num; keySize >= 16).
func (ks *keySpace) withRows(cols int) *keySpace {
	ks.cols, ks.rows = cols, ks.num/cols
	ks.rowWidth = math.MaxUint64 / uint64(2*ks.rows)
	return ks
}

// rowPrefix appends the prefix of row slot rs to dst[:0].
func (ks *keySpace) rowPrefix(dst []byte, rs uint64) []byte {
	return binary.BigEndian.AppendUint64(dst[:0], rs*ks.rowWidth+scramble(rs^0x726f77)%ks.rowWidth)
}

// randomPresentRow and randomAbsentRow return row slots: an absent row
// lies between two present ones.
func (ks *keySpace) randomPresentRow(rng *rand.Rand) uint64 { return 2 * uint64(rng.IntN(ks.rows)) }
func (ks *keySpace) randomAbsentRow(rng *rand.Rand) uint64 {
	return 2*uint64(rng.IntN(ks.rows-1)) + 1
}

// key appends slot's key to dst[:0].
func (ks *keySpace) key(dst []byte, slot uint64) []byte {
	if ks.cols > 0 {
		i := slot / 2
		dst = ks.rowPrefix(dst, 2*(i/uint64(ks.cols)))
		dst = binary.BigEndian.AppendUint64(dst, 2*(i%uint64(ks.cols))+slot%2)
		for h := scramble(slot ^ 0xa5a5a5a5a5a5a5a5); len(dst) < ks.keySize; h = scramble(h) {
			dst = binary.LittleEndian.AppendUint64(dst, h)
		}
		return dst[:ks.keySize]
	}
	dst = binary.BigEndian.AppendUint64(dst[:0], slot*ks.width+scramble(slot)%ks.width)
	for h := scramble(slot ^ 0xa5a5a5a5a5a5a5a5); len(dst) < ks.keySize; h = scramble(h) {
		dst = binary.LittleEndian.AppendUint64(dst, h)
	}
	return dst[:ks.keySize]
}

// value appends slot's value to dst[:0].
func (ks *keySpace) value(dst []byte, slot uint64) []byte {
	dst = dst[:0]
	if ks.valueSize == 0 {
		return dst
	}
	off := scramble(slot+0x76) % uint64(len(ks.pool)-ks.randomBytes+1)
	random := ks.pool[off : off+uint64(ks.randomBytes)]
	for len(dst) < ks.valueSize {
		dst = append(dst, random[:min(len(random), ks.valueSize-len(dst))]...)
	}
	return dst
}

// present returns the slot of the i-th key the fills write.
func present(i int) uint64 { return 2 * uint64(i) }

// randomPresent returns a uniformly chosen present slot.
func (ks *keySpace) randomPresent(rng *rand.Rand) uint64 { return present(rng.IntN(ks.num)) }

// randomAbsent returns a uniformly chosen absent slot inside the key range:
// 1, 3, ..., 2*num-3 (slot 2*num-1 lies above the largest key, where no
// engine would even look at a table).
func (ks *keySpace) randomAbsent(rng *rand.Rand) uint64 {
	return 2*uint64(rng.IntN(ks.num-1)) + 1
}
