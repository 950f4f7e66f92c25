package bloomkv

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
)

// Point reads: Get, the memtables and levels it consults, filter and table
// probes, and the per-shard counters they keep.

// readNow asks get and newIterator to read at the latest sequence.
const readNow = ^uint64(0)

// Get returns a copy of the value of key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return db.get(key, readNow)
}

// get reads key as of sequence seq, or, when seq is readNow, as of now. For "now"
// the read state is loaded first and the sequence second: the pinned
// version already holds every version that compactions kept up to then,
// which is all a read at any later sequence needs, and the pinned memtables
// hold a prefix of the writes up to the sequence (a write in a newer
// memtable is newer than all of them). The other order would let a
// compaction drop the version a read at an older unregistered sequence
// needs. A snapshot's sequence is registered, so compactions keep its
// versions.
func (db *DB) get(key []byte, seq uint64) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	s, slot := db.loadReadState()
	defer s.unref(slot)
	sh := db.reads.at(slot)
	sh.gets.Add(1)
	if seq == readNow {
		seq = db.versions.VisibleSeq()
	}
	return db.getFrom(sh, slot, s, key, seq)
}

// getFrom looks key up in read state s as of sequence seq, counting in sh
// and taking table references in slot (the slot of s's reference).
//
// Sources are read newest first: the memtable, the immutable memtables,
// level-0 tables newest first, then one table per deeper level. Each may
// hold range tombstones as well as point entries. A source's newest point
// version of key visible at seq is the answer unless a range tombstone
// visible at seq, from this source or a newer one, covers key with a
// larger sequence. Every version in an older source is older than any
// entry of a newer one, range tombstones included (a table's bounds cover
// its tombstones, so compaction moves them down with the data they may
// cover): once a tombstone covers key, nothing older can be the answer.
// A table's filter speaks only for its point entries, so its tombstones
// are consulted even when the filter says "absent".
func (db *DB) getFrom(sh *readShard, slot int, s *readState, key []byte, seq uint64) ([]byte, error) {
	var tomb uint64 // newest covering tombstone seen so far, 0 for none
	if v, kind, ok, done := memGet(s.mem.Memtable, key, seq, &tomb); ok || done {
		sh.memtableHits.Add(1)
		if done {
			return nil, ErrNotFound // a range tombstone
		}
		return valueOrNotFound(copyValue(v), kind)
	}
	for _, m := range s.imm {
		if v, kind, ok, done := memGet(m.Memtable, key, seq, &tomb); ok || done {
			sh.memtableHits.Add(1)
			if done {
				return nil, ErrNotFound
			}
			return valueOrNotFound(copyValue(v), kind)
		}
	}
	// With Options.TreeFilter one filter names the levels to read
	// (treefilter.go).
	if t := treeFilterOf(s.v); t != nil {
		return db.getFromTreeFilter(sh, slot, s, t, key, seq, &tomb)
	}
	// Level 0 newest first: tables may overlap, so probe each that covers key.
	for _, f := range s.v.Levels[0] {
		if !f.Overlaps(key, key) {
			continue
		}
		if v, kind, ok, err := db.getFromTable(sh, slot, f, 0, key, seq, &tomb); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return valueOrNotFound(v, kind)
		}
	}
	// passed is the first table of levels >= 1 that did not answer, to be
	// charged a read when a deeper one is consulted (compaction_triggers.go).
	var passed *manifest.FileMetadata
	passedLevel, charged := 0, false
	for level := 1; level < manifest.NumLevels; level++ {
		f := findFile(s.v.Levels[level], key)
		if f == nil {
			continue
		}
		if passed != nil && !charged {
			db.chargeRead(passedLevel, passed, getCharge)
			charged = true
		}
		if passed == nil {
			passed, passedLevel = f, level
		}
		if v, kind, ok, err := db.getFromTable(sh, slot, f, level, key, seq, &tomb); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return valueOrNotFound(v, kind)
		}
	}
	return nil, ErrNotFound
}

// memGet looks key up in one memtable for getFrom: ok with the newest
// point version, or done when a range tombstone (*tomb, updated here)
// hides key from here down.
func memGet(m *memtable.Memtable, key []byte, seq uint64, tomb *uint64) (v []byte, kind base.Kind, ok, done bool) {
	// An empty memtable (the usual one after a flush) answers without its
	// read lock, whose acquisition writes a line every reader shares.
	// Entries are counted before the write that added them is visible, so
	// a memtable empty now holds nothing a read at seq can see.
	if m.Empty() {
		return nil, 0, false, false
	}
	if rd := m.RangeDels(); rd != nil {
		*tomb = max(*tomb, rd.MaxSeq(key, seq))
	}
	v, kind, vseq, ok := m.GetSeq(key, seq)
	if *tomb == 0 || ok && vseq > *tomb {
		return v, kind, ok, false
	}
	return nil, 0, false, true
}

// valueOrNotFound turns a found entry into Get's result. v must already be
// the caller's own copy.
func valueOrNotFound(v []byte, kind base.Kind) ([]byte, error) {
	if kind == base.KindDelete {
		return nil, ErrNotFound
	}
	return v, nil
}

// copyValue returns a copy the caller owns (non-nil, also when empty).
func copyValue(v []byte) []byte { return append(make([]byte, 0, len(v)), v...) }

// getFromTable looks key up in table f for getFrom, raising *tomb to the
// newest of its range tombstones that covers key at seq. found with kind
// KindDelete means "not found, stop here": a point tombstone, or a range
// tombstone newer than anything the table or an older one holds.
func (db *DB) getFromTable(sh *readShard, slot int, f *manifest.FileMetadata, level int, key []byte, seq uint64, tomb *uint64) ([]byte, base.Kind, bool, error) {
	sh.probes[level].Add(1)
	r, release, err := findTableAt(db.tableCache, slot, f, &sh.levels[level])
	if errors.Is(err, sstable.ErrTableCacheClosed) {
		return nil, 0, false, ErrClosed // Close ran while this Get was under way
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("bloomkv: get: %w", err)
	}
	defer release()
	if rd := r.RangeDels(); rd != nil {
		*tomb = max(*tomb, rd.MaxSeq(key, seq))
	}
	if db.filterPolicy.PinsFilter(level) && !db.opts.IgnoreFilters {
		if err := r.PinFilter(&sh.levels[level]); err != nil {
			return nil, 0, false, fmt.Errorf("bloomkv: get: %w", err)
		}
	}
	// The value aliases a block that held keeps from being recycled (its
	// buffer reused for another block): copy it out, then release.
	v, kind, vseq, ok, held, err := r.GetSeqHeld(key, seq, db.filterUse(sh, level), &sh.levels[level])
	if err != nil {
		return nil, 0, false, fmt.Errorf("bloomkv: get: %w", err)
	}
	if db.skipsEvictedFilters() {
		sh.outcomes[level].record(ok)
	}
	if *tomb != 0 && (!ok || vseq < *tomb) {
		held.Release()
		return nil, base.KindDelete, true, nil
	}
	if ok && kind == base.KindSet {
		v = copyValue(v)
		held.Release()
		return v, kind, true, nil
	}
	held.Release()
	return nil, kind, ok, nil
}

// findFile returns the file of a sorted, non-overlapping level whose range
// covers key, or nil.
func findFile(files []*manifest.FileMetadata, key []byte) *manifest.FileMetadata {
	if i := manifest.FileFor(files, key); i < len(files) && files[i].Overlaps(key, key) {
		return files[i]
	}
	return nil
}

// numReadShards is how many copies of the point-lookup counters there are:
// one for each slot of internal/pslot.
const numReadShards = pslot.MaxN

// readShards spreads the point-lookup counters over several cache lines.
// Every Get increments a handful of counters; were they shared, each
// increment would pull the same cache line from core to core, and readers
// on two cores would run slower than one. Each Get counts in the shard of
// the P it runs on (the slot of its read-state reference, pslot.Index), so
// a shard's lines stay in one core's cache; Metrics sums the shards.
type readShards [numReadShards]readShard

type readShard struct {
	gets, memtableHits atomic.Uint64
	probes             [manifest.NumLevels]atomic.Uint64
	// levels count the work in each level's tables, where it happens (the
	// SSTable reader and block cache).
	levels [manifest.NumLevels]sstable.ReadStats
	// outcomes says, per level, how often recent Gets found their key in
	// the tables they probed (filterUse).
	outcomes [manifest.NumLevels]probeOutcomes
	// Iterators: positioning calls, prefix seeks, the tables prefix seeks
	// considered and the work in each level's tables.
	iterSeeks, iterPrefixSeeks atomic.Uint64
	iterProbes                 [manifest.NumLevels]atomic.Uint64
	iterLevels                 [manifest.NumLevels]sstable.ReadStats
	_                          [64]byte // keep the next shard's counters off this one's cache lines
}

// at returns the shard of pslot slot i.
func (r *readShards) at(i int) *readShard {
	return &r[i&(numReadShards-1)]
}
