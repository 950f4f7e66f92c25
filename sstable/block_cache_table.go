package sstable

import "sync/atomic"

// entryTable is the lookup side of a block-cache shard: an open-addressing
// hash table (linear probing) of entries that readers probe without the
// shard's lock, while writers holding the lock insert and delete.
//
// Why this is safe without a lock on the read side:
//
//   - Slots change only by atomic pointer stores, and an entry's key and
//     block never change once it is stored, so a reader sees either a whole
//     entry or none.
//   - A reader compares keys, so it never returns another key's entry; it
//     may return an entry the writer just deleted, or miss one just
//     inserted. Both are harmless: a block stays valid for whoever acquired
//     it, an entry whose block was released by everyone meanwhile fails to
//     acquire (block_recycle.go) and counts as a miss, and a miss reads the
//     block from the file.
//   - Probing stops at an empty slot, and at least half the slots are
//     empty (deleted slots count as used), so every probe ends. A table
//     outgrown or cluttered with deleted slots is rebuilt as a new table
//     and published with one atomic store; readers still on the old one
//     finish there (it is no longer written, and keeps its empty slots).
type entryTable struct {
	slots []atomic.Pointer[cacheEntry] // len a power of two
	mask  uint64                       // len(slots) - 1
	// Guarded by the shard's mutex:
	used int // slots not empty: live entries and deleted ones
	live int // live entries
}

// deletedEntry marks a slot whose entry was deleted: probes go on past it.
// It is never a live entry, so no key compares equal to it by pointer.
var deletedEntry = new(cacheEntry)

const minTableSlots = 16

func newEntryTable(slots int) *entryTable {
	return &entryTable{slots: make([]atomic.Pointer[cacheEntry], slots), mask: uint64(slots - 1)}
}

// hashKey mixes a cache key: consecutive offsets of one file spread out.
func hashKey(k cacheKey) uint64 {
	h := (k.fileNum*0x9E3779B97F4A7C15 ^ k.offset) * 0xBF58476D1CE4E5B9
	return h ^ h>>31
}

// find returns the entry of k, or nil. Safe without the shard's lock.
func (t *entryTable) find(k cacheKey, h uint64) *cacheEntry {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e != deletedEntry && e.key == k {
			return e
		}
	}
}

// full reports whether one more insert would leave fewer than half the
// slots empty. REQUIRES: the shard's mutex.
func (t *entryTable) full() bool { return 2*(t.used+1) > len(t.slots) }

// insert adds e, whose key is not in the table, in the first deleted or
// empty slot of its probe sequence. REQUIRES: the shard's mutex, !full().
func (t *entryTable) insert(e *cacheEntry, h uint64) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		switch t.slots[i].Load() {
		case nil:
			t.used++
			fallthrough
		case deletedEntry:
			t.slots[i].Store(e)
			t.live++
			return
		}
	}
}

// delete removes e, which is in the table. REQUIRES: the shard's mutex.
func (t *entryTable) delete(e *cacheEntry, h uint64) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		if t.slots[i].Load() == e {
			t.slots[i].Store(deletedEntry)
			t.live--
			return
		}
	}
}

// rebuilt returns a new table holding t's live entries with room for as
// many again (deleted slots dropped). REQUIRES: the shard's mutex.
func (t *entryTable) rebuilt() *entryTable {
	n := minTableSlots
	for n < 4*(t.live+1) {
		n *= 2
	}
	nt := newEntryTable(n)
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil && e != deletedEntry {
			nt.insert(e, hashKey(e.key))
		}
	}
	return nt
}
