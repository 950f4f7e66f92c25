package bloomkv

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Get returns a copy of the value of key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return db.get(key, db.visibleSeq.Load())
}

// get reads key as of sequence seq. The sequence is taken before the read
// state: every write <= seq is in the state loaded after it (a memtable is
// only dropped from the read state once its table is in the version).
func (db *DB) get(key []byte, seq uint64) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	db.counters.gets.Add(1)
	s := db.loadReadState()
	defer s.unref()

	if v, kind, ok := s.mem.Get(key, seq); ok {
		db.counters.memtableHits.Add(1)
		return valueOrNotFound(copyValue(v), kind)
	}
	for _, m := range s.imm {
		if v, kind, ok := m.Get(key, seq); ok {
			db.counters.memtableHits.Add(1)
			return valueOrNotFound(copyValue(v), kind)
		}
	}
	// Level 0 newest first: tables may overlap, so probe each that covers key.
	for _, f := range s.v.Levels[0] {
		if !fileCovers(f, key) {
			continue
		}
		if v, kind, ok, err := db.getFromTable(f, key, seq); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return valueOrNotFound(v, kind)
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		f := findFile(s.v.Levels[level], key)
		if f == nil {
			continue
		}
		if v, kind, ok, err := db.getFromTable(f, key, seq); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return valueOrNotFound(v, kind)
		}
	}
	return nil, ErrNotFound
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

func (db *DB) getFromTable(f *manifest.FileMetadata, key []byte, seq uint64) ([]byte, base.Kind, bool, error) {
	db.counters.tablesProbed.Add(1)
	r, release, err := db.tableCache.Find(f.FileNum, int64(f.Size))
	if err != nil {
		return nil, 0, false, fmt.Errorf("bloomkv: get: %w", err)
	}
	defer release()
	v, kind, ok, err := r.Get(key, seq, !db.opts.IgnoreFilters, &db.readStats)
	if err != nil {
		return nil, 0, false, fmt.Errorf("bloomkv: get: %w", err)
	}
	if ok && kind == base.KindSet {
		// The value aliases a cached block; copy before release.
		return copyValue(v), kind, true, nil
	}
	return nil, kind, ok, nil
}

// fileCovers reports whether key lies in f's user-key range.
func fileCovers(f *manifest.FileMetadata, key []byte) bool {
	return bytes.Compare(key, base.UserKey(f.Smallest)) >= 0 && bytes.Compare(key, base.UserKey(f.Largest)) <= 0
}

// findFile returns the file of a sorted, non-overlapping level whose range
// covers key, or nil.
func findFile(files []*manifest.FileMetadata, key []byte) *manifest.FileMetadata {
	lo, hi := 0, len(files)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if bytes.Compare(base.UserKey(files[mid].Largest), key) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(files) && bytes.Compare(key, base.UserKey(files[lo].Smallest)) >= 0 {
		return files[lo]
	}
	return nil
}
