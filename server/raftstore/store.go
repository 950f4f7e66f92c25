package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv"
	"github.com/hashicorp/raft"
)

// ErrKeyNotFound is what Get and GetUint64 return for a stable key never
// set. Its message is exactly "not found", which raft treats as "absent".
var ErrKeyNotFound = errors.New("not found")

const (
	logPrefix    = 'L'
	stablePrefix = 'S'
	logKeyLen    = 9
)

// Options configure a Store. The zero value is the durable default.
type Options struct {
	// NoSync applies writes without fsyncing the write-ahead log. Only for
	// tests: raft's safety needs acknowledged entries to survive a crash.
	NoSync bool
	// DB are the options of the bloomkv database Open opens (nil: defaults).
	DB *bloomkv.Options
}

// Store is a raft.LogStore and raft.StableStore in a bloomkv database.
// It is safe for concurrent use: raft reads entries from its replication
// goroutines while it appends.
type Store struct {
	db     *bloomkv.DB // constant after construction
	ownsDB bool        // Close closes db; constant after construction
	wo     *bloomkv.WriteOptions

	// mu serializes the log's writers, so that first and last change in
	// the order the writes reach the database.
	mu sync.Mutex
	// first and last are the indexes of the first and last entries, and
	// some says there are any. Index 0 is a valid entry (raft-boltdb and
	// raft's InmemStore store it, and raft's bench suite writes it), so 0
	// cannot also mean "none". Written under mu, read without it.
	first, last atomic.Uint64
	some        atomic.Bool
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Open opens (creating it when missing) a bloomkv database in dir and
// returns a Store on it; Close closes the database.
func Open(dir string, o *Options) (*Store, error) {
	if o == nil {
		o = &Options{}
	}
	db, err := bloomkv.Open(dir, o.DB)
	if err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	s, err := New(db, o)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.ownsDB = true
	return s, nil
}

// New returns a Store on db, which it then owns the key space of; Close
// leaves db open.
func New(db *bloomkv.DB, o *Options) (*Store, error) {
	if o == nil {
		o = &Options{}
	}
	s := &Store{db: db, wo: &bloomkv.WriteOptions{Sync: !o.NoSync}}
	first, last, some, err := s.bounds()
	if err != nil {
		return nil, err
	}
	s.setBounds(first, last, some)
	return s, nil
}

// Close closes the database if Open opened it.
func (s *Store) Close() error {
	if s.ownsDB {
		return s.db.Close()
	}
	return nil
}

// DB returns the database the store keeps its data in.
func (s *Store) DB() *bloomkv.DB { return s.db }

func logKey(dst []byte, index uint64) []byte {
	dst = append(dst[:0], logPrefix)
	return binary.BigEndian.AppendUint64(dst, index)
}

// bounds finds the first and last log indexes in the database; some is
// false when it holds no entry.
func (s *Store) bounds() (first, last uint64, some bool, err error) {
	it := s.db.NewIterator(&bloomkv.IterOptions{LowerBound: []byte{logPrefix}, UpperBound: []byte{logPrefix + 1}})
	if it.First() {
		some = true
		first, err = indexOf(it.Key())
		if err == nil && it.Last() {
			last, err = indexOf(it.Key())
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("raftstore: finding the first and last log entries: %w", err)
	}
	return first, last, some, nil
}

// setBounds publishes the log's bounds (requires s.mu, or no other user).
// An empty log reads as first = last = 0, as raft expects.
func (s *Store) setBounds(first, last uint64, some bool) {
	if !some {
		first, last = 0, 0
	}
	s.first.Store(first)
	s.last.Store(last)
	s.some.Store(some)
}

func indexOf(key []byte) (uint64, error) {
	if len(key) != logKeyLen {
		return 0, fmt.Errorf("%w: raftstore: log key %x is not %d bytes", bloomkv.ErrCorruption, key, logKeyLen)
	}
	return binary.BigEndian.Uint64(key[1:]), nil
}

// FirstIndex returns the index of the first entry, 0 when there is none.
func (s *Store) FirstIndex() (uint64, error) { return s.first.Load(), nil }

// LastIndex returns the index of the last entry, 0 when there is none.
func (s *Store) LastIndex() (uint64, error) { return s.last.Load(), nil }

// GetLog reads the entry at index into l, or returns raft.ErrLogNotFound.
func (s *Store) GetLog(index uint64, l *raft.Log) error {
	if !s.some.Load() || index < s.first.Load() || index > s.last.Load() {
		return raft.ErrLogNotFound
	}
	var kb [logKeyLen]byte
	v, err := s.db.Get(logKey(kb[:0], index))
	if errors.Is(err, bloomkv.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("raftstore: reading log entry %d: %w", index, err)
	}
	if err := decodeLog(v, l); err != nil {
		return fmt.Errorf("raftstore: log entry %d: %w", index, err)
	}
	l.Index = index
	return nil
}

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one synced, atomic batch.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	b := bloomkv.NewBatch()
	var kb [logKeyLen]byte
	var vb []byte
	lo, hi := logs[0].Index, logs[0].Index
	for _, l := range logs {
		vb = encodeLog(vb[:0], l)
		b.Put(logKey(kb[:0], l.Index), vb)
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Apply(b, s.wo); err != nil {
		return fmt.Errorf("raftstore: storing log entries %d-%d: %w", lo, hi, err)
	}
	if !s.some.Load() {
		s.setBounds(lo, hi, true)
		return nil
	}
	s.setBounds(min(lo, s.first.Load()), max(hi, s.last.Load()), true)
	return nil
}

// DeleteRange deletes the entries with indexes in [min, max].
func (s *Store) DeleteRange(lo, hi uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := s.first.Load(), s.last.Load()
	lo, hi = max(lo, first), min(hi, last)
	if !s.some.Load() || lo > hi {
		return nil
	}
	err := s.deleteEntries(lo, hi)
	// Whatever happened, the database says where the log now starts and
	// ends. Seeking past the deleted range skips its tombstones, which a
	// scan from the first key would walk through until compaction drops
	// them.
	var berr error
	newFirst, newLast, some := first, last, true
	if lo <= first {
		if hi == ^uint64(0) {
			newFirst, some = 0, false // nothing can follow the largest index
		} else {
			newFirst, some, berr = s.seek(hi+1, false)
		}
	}
	if hi >= last && berr == nil && some {
		newLast, some, berr = s.seek(lo, true)
	}
	if berr == nil {
		s.setBounds(newFirst, newLast, some && newFirst <= newLast)
	}
	if err != nil {
		return fmt.Errorf("raftstore: deleting log entries %d-%d: %w", lo, hi, err)
	}
	if berr != nil {
		return fmt.Errorf("raftstore: after deleting log entries %d-%d: %w", lo, hi, berr)
	}
	return nil
}

// deleteEntries deletes the log keys of [lo, hi] (requires s.mu) with one
// synced range deletion: atomic, so a crash leaves the log as it was or
// without the whole range, never with a hole.
func (s *Store) deleteEntries(lo, hi uint64) error {
	upper := append(logKey(nil, hi), 0) // just above hi's key: the range is [lo, hi]
	b := bloomkv.NewBatch()
	b.DeleteRange(logKey(nil, lo), upper)
	return s.db.Apply(b, s.wo)
}

// seek returns the index of the first entry at or after index, or with
// before, the last entry before index; found is false when there is none.
func (s *Store) seek(index uint64, before bool) (at uint64, found bool, err error) {
	o := &bloomkv.IterOptions{LowerBound: logKey(nil, index), UpperBound: []byte{logPrefix + 1}}
	if before {
		o = &bloomkv.IterOptions{LowerBound: []byte{logPrefix}, UpperBound: logKey(nil, index)}
	}
	it := s.db.NewIterator(o)
	if (before && it.Last()) || (!before && it.First()) {
		found = true
		at, err = indexOf(it.Key())
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return at, found, err
}

func stableKey(key []byte) []byte {
	return append([]byte{stablePrefix}, key...)
}

// Set stores val under key, synced.
func (s *Store) Set(key, val []byte) error {
	b := bloomkv.NewBatch()
	b.Put(stableKey(key), val)
	if err := s.db.Apply(b, s.wo); err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	return nil
}

// Get returns the value of key, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(stableKey(key))
	if errors.Is(err, bloomkv.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: get %q: %w", key, err)
	}
	return v, nil
}

// SetUint64 stores val under key as 8 big-endian bytes, synced.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value SetUint64 stored under key, or ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: raftstore: stable key %q holds %d bytes, not a uint64's 8", bloomkv.ErrCorruption, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
