package iterator

import (
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
)

// SliceIter is a base.InternalIterator over entries held in memory. It exists
// for tests (here and in other packages) that need a child iterator with
// known contents. Key and Value return the stored slices themselves.
type SliceIter struct {
	keys, values [][]byte
	pos          int // -1: before the first entry; len(keys): after the last
	closed       bool
}

// NewSliceIter returns an iterator over keys[i] -> values[i]. The keys must be
// valid internal keys in strictly increasing base.CompareInternal order; it
// panics otherwise, since that is a bug in the calling test.
func NewSliceIter(keys, values [][]byte) *SliceIter {
	if len(keys) != len(values) {
		panic("bloomkv/iterator: NewSliceIter: keys and values differ in length")
	}
	for i := 1; i < len(keys); i++ {
		if base.CompareInternal(keys[i-1], keys[i]) >= 0 {
			panic("bloomkv/iterator: NewSliceIter: keys not in increasing internal order")
		}
	}
	return &SliceIter{keys: keys, values: values, pos: -1}
}

// SeekGE implements base.InternalIterator.
func (s *SliceIter) SeekGE(ikey []byte) bool {
	s.pos = sort.Search(len(s.keys), func(i int) bool {
		return base.CompareInternal(s.keys[i], ikey) >= 0
	})
	return s.Valid()
}

// SeekLT implements base.InternalIterator.
func (s *SliceIter) SeekLT(ikey []byte) bool {
	s.pos = sort.Search(len(s.keys), func(i int) bool {
		return base.CompareInternal(s.keys[i], ikey) >= 0
	}) - 1
	return s.Valid()
}

// First implements base.InternalIterator.
func (s *SliceIter) First() bool {
	s.pos = 0
	return s.Valid()
}

// Last implements base.InternalIterator.
func (s *SliceIter) Last() bool {
	s.pos = len(s.keys) - 1
	return s.Valid()
}

// Next implements base.InternalIterator. An invalid iterator stays invalid.
func (s *SliceIter) Next() bool {
	if !s.Valid() {
		return false
	}
	s.pos++
	return s.Valid()
}

// Prev implements base.InternalIterator. An invalid iterator stays invalid.
func (s *SliceIter) Prev() bool {
	if !s.Valid() {
		return false
	}
	s.pos--
	return s.Valid()
}

// Valid implements base.InternalIterator.
func (s *SliceIter) Valid() bool { return !s.closed && s.pos >= 0 && s.pos < len(s.keys) }

// Key implements base.InternalIterator.
func (s *SliceIter) Key() []byte { return s.keys[s.pos] }

// Value implements base.InternalIterator.
func (s *SliceIter) Value() []byte { return s.values[s.pos] }

// Error implements base.InternalIterator; a SliceIter never fails.
func (s *SliceIter) Error() error { return nil }

// Close implements base.InternalIterator.
func (s *SliceIter) Close() error {
	s.closed = true
	return nil
}

// Closed reports whether Close has been called, so tests can check that an
// owner closed its children.
func (s *SliceIter) Closed() bool { return s.closed }
