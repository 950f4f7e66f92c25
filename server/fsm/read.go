package fsm

import (
	"errors"

	"github.com/bloomkv/bloomkv"
)

// The read methods read this replica's state as applied so far. Callers
// that promise linearizable reads first make sure the state is recent
// enough (see the server's read modes).

// Get returns key's kind and, for a string, its value, which the caller
// must not modify (it may be the cached copy).
func (f *FSM) Get(key []byte) (Kind, []byte, error) {
	if len(key) == 0 || len(key) > MaxKeySize {
		return KindNone, nil, nil
	}
	// The epoch is read before the handle is taken, as in filterValue.
	v, hit, epoch := f.strings.get(key)
	switch hit {
	case cacheString:
		return KindString, v, nil
	case cacheAbsent:
		return KindNone, nil, nil
	}
	h, err := f.acquire()
	if err != nil {
		return KindNone, nil, err
	}
	defer h.release()
	raw, err := h.db.Get(userKey(key))
	if errors.Is(err, bloomkv.ErrNotFound) {
		// Remembered as absent: a key GET finds missing is often asked
		// for again (issue 29: redis-benchmark's GETs after as many SETs
		// of random keys miss a third of the time, and each miss searched
		// the memtables and the tables' filters).
		f.strings.fill(key, nil, true, epoch)
		return KindNone, nil, nil
	}
	if err != nil {
		return KindNone, nil, err
	}
	if len(raw) == 0 {
		return KindNone, nil, errorf("empty value under %q", key)
	}
	if Kind(raw[0]) == KindString {
		f.strings.fill(key, raw[1:], false, epoch)
		return KindString, raw[1:], nil
	}
	return Kind(raw[0]), nil, nil
}

// filterValue returns key's decoded value if it is a filter of kind want:
// nil, nil when key is absent; ErrWrongType for another kind.
func (f *FSM) filterValue(key []byte, want Kind) (*value, error) {
	if len(key) == 0 || len(key) > MaxKeySize {
		return nil, nil
	}
	// The epoch is read before the handle is taken: a restore that swaps
	// the database in between also moves the epoch, and fill then refuses.
	v, epoch := f.cache.get(string(key))
	if v != nil {
		if v.kind != want {
			return nil, ErrWrongType
		}
		return v, nil
	}
	h, err := f.acquire()
	if err != nil {
		return nil, err
	}
	defer h.release()
	raw, err := h.db.Get(userKey(key))
	if errors.Is(err, bloomkv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(raw) > 0 && Kind(raw[0]) != want {
		return nil, ErrWrongType
	}
	v, err = decodeValue(key, raw)
	if err != nil {
		return nil, err
	}
	f.cache.fill(string(key), v, epoch)
	return v, nil
}

// BFExists answers BF.EXISTS / BF.MEXISTS: whether each item may be in the
// bloom filter key (all false when key is absent).
func (f *FSM) BFExists(key []byte, items [][]byte) ([]bool, error) {
	v, err := f.filterValue(key, KindBloom)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(items))
	if v != nil {
		for i, it := range items {
			out[i] = v.bf.sf.MayContain(it)
		}
	}
	return out, nil
}

// BloomInfo is what BF.INFO reports.
type BloomInfo struct {
	Capacity  int    // keys the filter holds before it adds a layer (or, NONSCALING, refuses)
	Size      int    // bytes of its bit arrays
	Filters   int    // layers
	Items     int    // items accepted (adds that returned 1), exact
	Expansion uint64 // growth factor; 0 for NONSCALING
}

// BFInfo returns key's bloom filter info, ErrNotFound if absent.
func (f *FSM) BFInfo(key []byte) (BloomInfo, error) {
	v, err := f.filterValue(key, KindBloom)
	if err != nil {
		return BloomInfo{}, err
	}
	if v == nil {
		return BloomInfo{}, ErrNotFound
	}
	sf := v.bf.sf
	return BloomInfo{Capacity: sf.Capacity(), Size: sf.SizeBytes(), Filters: sf.Layers(), Items: sf.Added(), Expansion: v.bf.expansion}, nil
}

// BFCard answers BF.CARD: the items the filter accepted (adds that
// answered 1), as RedisBloom counts them; 0 when key is absent.
func (f *FSM) BFCard(key []byte) (int, error) {
	v, err := f.filterValue(key, KindBloom)
	if err != nil || v == nil {
		return 0, err
	}
	return v.bf.sf.Added(), nil
}

// CFExists answers CF.EXISTS / CF.MEXISTS (all false when key is absent).
func (f *FSM) CFExists(key []byte, items [][]byte) ([]bool, error) {
	v, err := f.filterValue(key, KindCuckoo)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(items))
	if v != nil {
		for i, it := range items {
			out[i] = v.cf.MayContain(it)
		}
	}
	return out, nil
}

// CuckooInfo is what CF.INFO reports.
type CuckooInfo struct {
	Size, Buckets, Capacity, Items, FingerprintBits, Filters int
	Deleted, Expansion                                       uint64
}

// CFInfo returns key's cuckoo filter info, ErrNotFound if absent.
func (f *FSM) CFInfo(key []byte) (CuckooInfo, error) {
	v, err := f.filterValue(key, KindCuckoo)
	if err != nil {
		return CuckooInfo{}, err
	}
	if v == nil {
		return CuckooInfo{}, ErrNotFound
	}
	info := CuckooInfo{Size: v.cf.SizeBytes(), Items: v.cf.Count(), Deleted: v.cf.Deleted(), Expansion: v.cf.expansion}
	for _, cf := range v.cf.filters() {
		info.Buckets += int(cf.Buckets())
		info.Capacity += cf.Capacity()
		info.FingerprintBits = cf.FingerprintBits()
		info.Filters++
	}
	return info, nil
}

// Scan calls fn for user keys after the key after (all keys when after is
// nil), in key order, with each key's kind, until fn returns false or the
// keys run out. It reads one consistent view.
func (f *FSM) Scan(after []byte, fn func(key []byte, kind Kind) bool) error {
	h, err := f.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	lower := []byte{userPrefix}
	if after != nil {
		lower = append(userKey(after), 0) // the first key above after
	}
	it := h.db.NewIterator(&bloomkv.IterOptions{LowerBound: lower, UpperBound: []byte{userPrefix + 1}})
	for ok := it.First(); ok; ok = it.Next() {
		v := it.Value()
		if len(v) == 0 {
			continue
		}
		if !fn(it.Key()[1:], Kind(v[0])) {
			break
		}
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// Node returns the client address node id registered (OpSetNode), "" if
// none.
func (f *FSM) Node(id string) (string, error) {
	h, err := f.acquire()
	if err != nil {
		return "", err
	}
	defer h.release()
	v, err := h.db.Get(append(append([]byte{}, nodeKeyPrefix...), id...))
	if errors.Is(err, bloomkv.ErrNotFound) {
		return "", nil
	}
	return string(v), err
}
