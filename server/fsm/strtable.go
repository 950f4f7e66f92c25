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
	klen uint32
	e    []byte // key, then value; nil: the slot is empty
}

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
		if s.hash == h && int(s.klen) == len(key) && string(s.e[:s.klen]) == string(key) {
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
		if s.hash == h && int(s.klen) == len(key) && string(s.e[:s.klen]) == key {
			return i
		}
	}
}

// get returns key's value; the bytes are never modified.
func (t *strTable) get(key []byte) ([]byte, bool) {
	i := t.find(key)
	if i < 0 {
		return nil, false
	}
	s := &t.slots[i]
	return s.e[s.klen:len(s.e):len(s.e)], true
}

// insert adds key, which must be absent, with a copy of key and v.
func (t *strTable) insert(key, v []byte) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	e := make([]byte, len(key)+len(v))
	copy(e, key)
	copy(e[len(key):], v)
	t.place(strSlot{hash: uint32(maphash.Bytes(t.seed, key)), klen: uint32(len(key)), e: e})
	t.n++
}

// insertString is insert for a key held as a string.
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
	klen, vlen = int(t.slots[i].klen), len(t.slots[i].e)-int(t.slots[i].klen)
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
