package bloomkv

import (
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// IterOptions bound an iterator to [LowerBound, UpperBound); nil means
// unbounded on that side.
type IterOptions struct{ LowerBound, UpperBound []byte }

// Iterator is a consistent point-in-time view of the database, in
// bytewise key order, moving both ways. Key and Value stay valid until the
// next move. An Iterator is not safe for concurrent use; Close it to release
// the tables it pins.
type Iterator struct {
	db     *DB
	vis    *iterator.Visible
	state  *readState
	err    error
	closed bool
}

// NewIterator returns an iterator over the database as of now.
func (db *DB) NewIterator(o *IterOptions) *Iterator {
	if db.closed.Load() {
		return &Iterator{err: ErrClosed}
	}
	return db.newIterator(o, readNow)
}

// newIterator reads as of seq, or as of now when seq is readNow (loaded after the
// read state, as get explains).
func (db *DB) newIterator(o *IterOptions, seq uint64) *Iterator {
	var lower, upper []byte
	if o != nil {
		// Copy: the engine keeps no reference to a caller's slice.
		lower, upper = cloneOrNil(o.LowerBound), cloneOrNil(o.UpperBound)
	}
	s := db.loadReadState()
	if seq == readNow {
		seq = db.visibleSeq.Load()
	}
	iters := []base.InternalIterator{s.mem.NewIter()}
	for _, m := range s.imm {
		iters = append(iters, m.NewIter())
	}
	// Level-0 tables may overlap: each is its own one-table "level".
	for _, f := range s.v.Levels[0] {
		iters = append(iters, newLevelIter(db.tableCache, []*manifest.FileMetadata{f}))
	}
	for level := 1; level < len(s.v.Levels); level++ {
		if len(s.v.Levels[level]) > 0 {
			iters = append(iters, newLevelIter(db.tableCache, s.v.Levels[level]))
		}
	}
	return &Iterator{db: db, vis: iterator.NewVisible(iterator.NewMerging(iters...), seq, lower, upper), state: s}
}

func cloneOrNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// usable reports whether the iterator may move: not closed, no error, and
// its DB still open (after DB.Close every move fails with ErrClosed, even
// where the answer is still in memory).
func (it *Iterator) usable() bool {
	if it.err == nil && it.db != nil && it.db.closed.Load() {
		it.err = ErrClosed
	}
	return it.err == nil && !it.closed
}

// First moves to the first key; it reports whether the iterator is valid.
func (it *Iterator) First() bool { return it.usable() && it.vis.First() }

// Last moves to the last key.
func (it *Iterator) Last() bool { return it.usable() && it.vis.Last() }

// SeekGE moves to the first key >= max(key, LowerBound) below UpperBound.
func (it *Iterator) SeekGE(key []byte) bool { return it.usable() && it.vis.SeekGE(key) }

// Next moves to the next key.
func (it *Iterator) Next() bool { return it.usable() && it.vis.Next() }

// Prev moves to the previous key.
func (it *Iterator) Prev() bool { return it.usable() && it.vis.Prev() }

// Valid reports whether the iterator is on a key.
func (it *Iterator) Valid() bool { return it.usable() && it.vis.Valid() }

// Key returns the current key, valid until the next move.
func (it *Iterator) Key() []byte {
	if !it.Valid() {
		return nil
	}
	return it.vis.Key()
}

// Value returns the current value, valid until the next move.
func (it *Iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	return it.vis.Value()
}

// Error returns the error that stopped the iterator, if any.
func (it *Iterator) Error() error {
	if it.err != nil {
		return it.err
	}
	if it.vis == nil {
		return nil
	}
	return it.vis.Error()
}

// Close releases the iterator. It returns the iterator's error, if any;
// closing twice returns ErrClosed.
func (it *Iterator) Close() error {
	if it.closed {
		return ErrClosed
	}
	it.closed = true
	if it.vis == nil {
		return it.err
	}
	err := it.vis.Error()
	if cerr := it.vis.Close(); err == nil {
		err = cerr
	}
	it.state.unref()
	return err
}
