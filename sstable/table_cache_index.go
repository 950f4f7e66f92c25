package sstable

import "sync/atomic"

// openIndex maps file numbers to the open entries of a TableCache: the
// lookup of a lock-free Find. It is an open-addressing hash table (linear
// probing) that Finds probe without a lock while the cache, holding its
// mutex, adds and removes entries; a plain uint64 key probes in a few
// nanoseconds where a sync.Map hashes an interface.
//
// The reasoning is the block cache's (entryTable): slots change only by
// atomic pointer stores; an entry's fileNum never changes; a probe ends at
// an empty slot, and at least half the slots are empty; an outgrown or
// cluttered table is replaced whole. A Find may see an entry just removed
// (then tryRef sees it is no longer live and the Find takes the lock) or
// miss one just added (the Find takes the lock): never a wrong table.
type openIndex struct {
	table atomic.Pointer[openTable]
}

type openTable struct {
	slots []atomic.Pointer[tableEntry] // len a power of two
	mask  uint64
	// Guarded by TableCache.mu:
	used int // slots not empty: entries and removed ones
	live int
}

// removedTable marks a slot whose entry was removed: probes go on past it.
var removedTable = new(tableEntry)

func newOpenTable(slots int) *openTable {
	return &openTable{slots: make([]atomic.Pointer[tableEntry], slots), mask: uint64(slots - 1)}
}

func hashFileNum(n uint64) uint64 {
	h := n * 0x9E3779B97F4A7C15
	return h ^ h>>32
}

// load returns the entry of table fileNum, or nil. Safe without the lock.
func (x *openIndex) load(fileNum uint64) *tableEntry {
	t := x.table.Load()
	if t == nil {
		return nil
	}
	for i := hashFileNum(fileNum) & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e != removedTable && e.fileNum == fileNum {
			return e
		}
	}
}

// storeLocked adds e, whose table has no entry in the index. REQUIRES:
// TableCache.mu.
func (x *openIndex) storeLocked(e *tableEntry) {
	t := x.table.Load()
	if t == nil || 2*(t.used+1) > len(t.slots) {
		t = x.rebuiltLocked(t)
	}
	for i := hashFileNum(e.fileNum) & t.mask; ; i = (i + 1) & t.mask {
		switch t.slots[i].Load() {
		case nil:
			t.used++
			fallthrough
		case removedTable:
			t.slots[i].Store(e)
			t.live++
			return
		}
	}
}

// deleteLocked removes e if it is in the index. REQUIRES: TableCache.mu.
func (x *openIndex) deleteLocked(e *tableEntry) {
	t := x.table.Load()
	if t == nil {
		return
	}
	for i := hashFileNum(e.fileNum) & t.mask; ; i = (i + 1) & t.mask {
		switch t.slots[i].Load() {
		case nil:
			return
		case e:
			t.slots[i].Store(removedTable)
			t.live--
			return
		}
	}
}

// clearLocked removes every entry. REQUIRES: TableCache.mu.
func (x *openIndex) clearLocked() { x.table.Store(nil) }

// rebuiltLocked publishes a new table holding t's entries with room for as
// many again. REQUIRES: TableCache.mu.
func (x *openIndex) rebuiltLocked(t *openTable) *openTable {
	live := 0
	if t != nil {
		live = t.live
	}
	n := 16
	for n < 4*(live+1) {
		n *= 2
	}
	nt := newOpenTable(n)
	if t != nil {
		for i := range t.slots {
			if e := t.slots[i].Load(); e != nil && e != removedTable {
				j := hashFileNum(e.fileNum) & nt.mask
				for nt.slots[j].Load() != nil {
					j = (j + 1) & nt.mask
				}
				nt.slots[j].Store(e)
				nt.used++
				nt.live++
			}
		}
	}
	x.table.Store(nt)
	return nt
}
