package filter

// slotTable packs fingerprints of f bits (1..32) back to back in a bit
// array: slot s occupies bits [s*f, (s+1)*f), bit i being bit i%64 of
// words[i/64]. A slot holding 0 is empty. Packing, rather than rounding each
// fingerprint up to 8, 16 or 32 bits, is what lets a cuckoo filter beat a
// bloom filter on space at low false-positive rates.
type slotTable struct {
	words []uint64
	f     uint64 // bits per slot
	mask  uint64 // (1 << f) - 1
}

func newSlotTable(slots, f uint64) slotTable {
	return slotTable{words: make([]uint64, slotWords(slots, f)), f: f, mask: 1<<f - 1}
}

// slotWords returns the words holding slots fingerprints of f bits.
func slotWords(slots, f uint64) uint64 { return (slots*f + 63) / 64 }

func (t *slotTable) get(s uint64) uint32 {
	off := s * t.f
	w, sh := off/64, off%64
	v := t.words[w] >> sh
	if sh+t.f > 64 { // the slot straddles two words
		v |= t.words[w+1] << (64 - sh)
	}
	return uint32(v & t.mask)
}

func (t *slotTable) set(s uint64, fp uint32) {
	off := s * t.f
	w, sh := off/64, off%64
	t.words[w] = t.words[w]&^(t.mask<<sh) | uint64(fp)<<sh
	if sh+t.f > 64 {
		hi := 64 - sh // bits already stored in word w
		t.words[w+1] = t.words[w+1]&^(t.mask>>hi) | uint64(fp)>>hi
	}
}

// swap stores fp in slot s and returns what it held.
func (t *slotTable) swap(s uint64, fp uint32) uint32 {
	old := t.get(s)
	t.set(s, fp)
	return old
}
