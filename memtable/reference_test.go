package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/bloomkv/bloomkv/kv"
)

// refEntry is one entry of the reference model: a plain sorted slice.
type refEntry struct {
	ikey, value []byte
}

// refTable is the model a Memtable is checked against.
type refTable []refEntry

func (r refTable) sorted() refTable {
	s := slices.Clone(r)
	slices.SortFunc(s, func(a, b refEntry) int { return kv.CompareInternal(a.ikey, b.ikey) })
	return s
}

// get is Memtable.Get by linear scan of a sorted table.
func (r refTable) get(ukey []byte, seq uint64) ([]byte, kv.Kind, bool) {
	for _, e := range r {
		uk, s, k, _ := kv.ParseInternalKey(e.ikey)
		if bytes.Equal(uk, ukey) && s <= seq {
			return e.value, k, true
		}
	}
	return nil, 0, false
}

// seekGE returns the index of the first entry >= ikey (len(r) if none).
func (r refTable) seekGE(ikey []byte) int {
	i, _ := slices.BinarySearchFunc(r, ikey, func(e refEntry, k []byte) int { return kv.CompareInternal(e.ikey, k) })
	return i
}

// seekLT returns the index of the last entry < ikey (-1 if none).
func (r refTable) seekLT(ikey []byte) int { return r.seekGE(ikey) - 1 }

// randomEntries builds n entries over nkeys user keys with unique sequence
// numbers in random order, so most keys get several versions.
func randomEntries(rng *rand.Rand, n, nkeys int) refTable {
	seqs := rng.Perm(n)
	out := make(refTable, n)
	for i := range out {
		ukey := fmt.Appendf(nil, "key%05d", rng.IntN(nkeys))
		if rng.IntN(10) == 0 {
			ukey = ukey[:rng.IntN(len(ukey)+1)] // prefixes, including the empty key
		}
		kind := kv.KindSet
		var value []byte
		if rng.IntN(5) == 0 {
			kind = kv.KindDelete
		} else {
			value = fmt.Appendf(nil, "v%d-%s", seqs[i]+1, bytes.Repeat([]byte{'x'}, rng.IntN(20)))
		}
		out[i] = refEntry{ikey: kv.MakeInternalKey(ukey, uint64(seqs[i]+1), kind), value: value}
	}
	return out
}

// fill adds every entry of r to a new memtable, in r's order.
func fill(r refTable) *Memtable {
	m := New()
	for _, e := range r {
		uk, seq, kind, _ := kv.ParseInternalKey(e.ikey)
		m.Add(seq, kind, uk, e.value)
	}
	return m
}

// randomSeekKey returns an internal key near the table's keys: an existing
// key, or a key with a random user key, sequence and kind (including
// KindSeek, as search keys have).
func randomSeekKey(rng *rand.Rand, r refTable, nkeys int) []byte {
	if len(r) > 0 && rng.IntN(2) == 0 {
		return r[rng.IntN(len(r))].ikey
	}
	ukey := fmt.Appendf(nil, "key%05d", rng.IntN(nkeys+2))
	if rng.IntN(8) == 0 {
		ukey = ukey[:rng.IntN(len(ukey)+1)]
	}
	kinds := []kv.Kind{kv.KindDelete, kv.KindSet, kv.KindSeek}
	return kv.MakeInternalKey(ukey, uint64(rng.IntN(len(r)+2)), kinds[rng.IntN(3)])
}
