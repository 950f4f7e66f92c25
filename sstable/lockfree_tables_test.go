package sstable

import (
	"math/rand/v2"
	"testing"
)

// TestOpenIndexModel and TestEntryTableModel check the two lock-free hash
// tables against a map through many adds and removes (removed slots pile
// up and force rebuilds); their concurrent use is covered by the cache
// tests under -race.
func TestOpenIndexModel(t *testing.T) {
	var x openIndex
	model := map[uint64]*tableEntry{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		n := rng.Uint64N(300)
		if e := model[n]; e != nil {
			x.deleteLocked(e)
			delete(model, n)
		} else {
			e := &tableEntry{fileNum: n}
			x.storeLocked(e)
			model[n] = e
		}
		if q := rng.Uint64N(300); x.load(q) != model[q] {
			t.Fatalf("load(%d) = %p, want %p", q, x.load(q), model[q])
		}
	}
	for n, e := range model {
		if x.load(n) != e {
			t.Fatalf("table %d lost", n)
		}
	}
	if tab := x.table.Load(); tab.live != len(model) || 2*tab.used > len(tab.slots) {
		t.Fatalf("live %d (want %d), used %d of %d slots", tab.live, len(model), tab.used, len(tab.slots))
	}
}

func TestEntryTableModel(t *testing.T) {
	tab := newEntryTable(minTableSlots)
	model := map[cacheKey]*cacheEntry{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20_000 {
		k := cacheKey{rng.Uint64N(4), rng.Uint64N(100) * 4096}
		if e := model[k]; e != nil {
			tab.delete(e, hashKey(k))
			delete(model, k)
		} else {
			e := &cacheEntry{key: k}
			if tab.full() {
				tab = tab.rebuilt()
			}
			tab.insert(e, hashKey(k))
			model[k] = e
		}
		q := cacheKey{rng.Uint64N(4), rng.Uint64N(100) * 4096}
		if got := tab.find(q, hashKey(q)); got != model[q] {
			t.Fatalf("find(%v) = %p, want %p", q, got, model[q])
		}
	}
	if tab.live != len(model) || 2*tab.used > len(tab.slots) {
		t.Fatalf("live %d (want %d), used %d of %d slots", tab.live, len(model), tab.used, len(tab.slots))
	}
}
