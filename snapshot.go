package bloomkv

import (
	"container/list"
	"sync/atomic"
)

// Snapshot is a fixed point in time: its Get and iterators see exactly the
// writes acknowledged before NewSnapshot returned. While it is open,
// compaction keeps the versions it can see. Close it when done.
type Snapshot struct {
	db     *DB
	seq    uint64
	elem   *list.Element
	closed atomic.Bool
}

// NewSnapshot pins the current point in time. After Close of the DB it
// returns a snapshot whose Get reports ErrClosed.
func (db *DB) NewSnapshot() *Snapshot {
	s := &Snapshot{db: db}
	if db.closed.Load() {
		s.closed.Store(true)
		return s
	}
	db.mu.Lock()
	s.seq = db.visibleSeq.Load()
	s.elem = db.mu.snapshots.PushBack(s)
	db.mu.Unlock()
	return s
}

// Get returns a copy of key's value as of the snapshot, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.closed.Load() || s.db.closed.Load() {
		return nil, ErrClosed
	}
	return s.db.get(key, s.seq)
}

// NewIterator returns an iterator over the snapshot's point in time.
func (s *Snapshot) NewIterator(o *IterOptions) *Iterator {
	if s.closed.Load() || s.db.closed.Load() {
		return &Iterator{err: ErrClosed}
	}
	return s.db.newIterator(o, s.seq)
}

// Close releases the snapshot; a second Close returns ErrClosed.
func (s *Snapshot) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	s.db.mu.Lock()
	s.db.mu.snapshots.Remove(s.elem)
	s.db.mu.Unlock()
	return nil
}

// snapshotSeqs returns the sequence numbers of open snapshots, ascending.
func (db *DB) snapshotSeqs() []uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	seqs := make([]uint64, 0, db.mu.snapshots.Len())
	for e := db.mu.snapshots.Front(); e != nil; e = e.Next() {
		seqs = append(seqs, e.Value.(*Snapshot).seq)
	}
	return seqs
}
