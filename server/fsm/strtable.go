package fsm

import "hash/maphash"

// strTable is the string cache's hash table: open addressing with linear
// probing, each entry a 32-byte slot (two to a cache line) holding the low
// 32 bits of the key's hash, the key's length and one allocation with the
// key followed by the value. A lookup so touches the slot and the entry,
// where a Go map of string to []byte touched its control word, its slot,
// the key's bytes and the value's, each a cache miss once the cache
// outgrows the CPU's caches (issue 29: with 100,000 keys the map lookup
// was a third of the CPU time of pipelined GETs). One pointer per entry
// also leaves the garbage collector half the pointers to follow.
//
// Deletion shifts the entries after the deleted one back (Knuth's
// algorithm R), so that there are no tombstones and a probe ends at the
// first empty slot. Not safe for concurrent use: stringCache's mutex
// guards it.
type strTable struct {
	seed  maphash.Seed
	slots []strSlot // a power of two long; nil until the first insert
	n     int       // entries
	hand  int       // where evictOne looks next
}

type strSlot struct {
	hash uint32 // the low 32 bits of the key's hash; slots index by them
	klen uint32 // the key's length, with absentBit for an absent key
	e    []byte // key, then value; nil: the slot is empty
}

// absentBit in strSlot.klen marks a key the database does not hold (a
// negative entry: GETs of absent keys skip the database too). Keys are
// far shorter than 2^31 bytes.
const absentBit = 1 << 31

func (s *strSlot) keyLen() int { return int(s.klen &^ absentBit) }

const strTableMin = 1024

func newStrTable() strTable { return strTable{seed: maphash.MakeSeed()} }

func (t *strTable) len() int { return t.n }

// find returns the slot index of key, or -1.
func (t *strTable) find(key []byte) int {
	if t.n == 0 {
		return -1
	}
	h := uint32(maphash.Bytes(t.seed, key))
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return -1
		}
		if s.hash == h && s.keyLen() == len(key) && string(s.e[:len(key)]) == string(key) {
			return i
		}
	}
}

// findString is find for a key held as a string (maphash hashes a
// string and the same bytes alike).
func (t *strTable) findString(key string) int {
	if t.n == 0 {
		return -1
	}
	h := uint32(maphash.String(t.seed, key))
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return -1
		}
		if s.hash == h && s.keyLen() == len(key) && string(s.e[:len(key)]) == key {
			return i
		}
	}
}

// get returns key's value (the bytes are never modified), or absent
// true for a negative entry; ok false when key has no entry.
func (t *strTable) get(key []byte) (v []byte, absent, ok bool) {
	i := t.find(key)
	if i < 0 {
		return nil, false, false
	}
	s := &t.slots[i]
	if s.klen&absentBit != 0 {
		return nil, true, true
	}
	return s.e[len(key):len(s.e):len(s.e)], false, true
}

// insert adds key, which must be absent from the table, with a copy of
// key and v; with absent, a negative entry (v is ignored).
func (t *strTable) insert(key, v []byte, absent bool) {
	klen := uint32(len(key))
	if absent {
		v, klen = nil, klen|absentBit
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	e := make([]byte, len(key)+len(v))
	copy(e, key)
	copy(e[len(key):], v)
	t.place(strSlot{hash: uint32(maphash.Bytes(t.seed, key)), klen: klen, e: e})
	t.n++
}

// insertString is insert of a string value for a key held as a string.
func (t *strTable) insertString(key string, v []byte) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	e := make([]byte, len(key)+len(v))
	copy(e, key)
	copy(e[len(key):], v)
	t.place(strSlot{hash: uint32(maphash.String(t.seed, key)), klen: uint32(len(key)), e: e})
	t.n++
}

func (t *strTable) place(s strSlot) {
	mask := len(t.slots) - 1
	i := int(s.hash) & mask
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func (t *strTable) grow() {
	old := t.slots
	t.slots = make([]strSlot, max(strTableMin, 2*len(old)))
	for _, s := range old {
		if s.e != nil {
			t.place(s) // the low 32 bits hold every index bit: no rehash
		}
	}
}

// remove deletes the entry at slot i and returns the sizes it had.
func (t *strTable) remove(i int) (klen, vlen int) {
	mask := len(t.slots) - 1
	klen = t.slots[i].keyLen()
	vlen = len(t.slots[i].e) - klen
	for j := i; ; {
		j = (j + 1) & mask
		if t.slots[j].e == nil {
			break
		}
		// The entry at j may move back to the hole at i unless its home
		// lies cyclically in (i, j]: it would then be before its home.
		home := int(t.slots[j].hash) & mask
		if (i <= j && (home <= i || home > j)) || (i > j && home <= i && home > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = strSlot{}
	t.n--
	return klen, vlen
}

// evictOne removes some entry (the next one after the last evicted, a
// clock hand over the slots) and returns its sizes; the table must not
// be empty.
func (t *strTable) evictOne() (klen, vlen int) {
	mask := len(t.slots) - 1
	for t.slots[t.hand&mask].e == nil {
		t.hand++
	}
	i := t.hand & mask
	t.hand++
	return t.remove(i)
}
