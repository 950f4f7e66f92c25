package kv

// Iterator walks internal keys in CompareInternal order. Memtable iterators
// implement it, and so do the engine's table, merging and level iterators.
//
// Positioning methods return whether the iterator is valid afterwards. Key and
// Value are only meaningful while Valid; the slices they return stay valid
// until the next positioning call or Close (callers that keep them must copy).
// After an error, the iterator is invalid and Error reports it. An iterator is
// not safe for concurrent use.
type Iterator interface {
	// SeekGE moves to the first entry whose internal key is >= ikey.
	SeekGE(ikey []byte) bool
	// SeekLT moves to the last entry whose internal key is < ikey.
	SeekLT(ikey []byte) bool
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	Valid() bool
	// Key returns the current internal key.
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}
