package base

// InternalIterator walks internal keys in CompareInternal order. It is the
// interface shared by memtable, sstable, merging and compaction iterators.
//
// Positioning methods return whether the iterator is valid afterwards. Key and
// Value are only meaningful while Valid; the slices they return stay valid
// until the next positioning call or Close (callers that keep them must copy).
// After an error, the iterator is invalid and Error reports it. An iterator is
// not safe for concurrent use.
type InternalIterator interface {
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

// PrefixSeeker is implemented by iterators that can skip sources holding no
// key of a prefix (by their filters).
type PrefixSeeker interface {
	// SeekPrefixGE is SeekGE(ikey) for a caller that will look only at
	// entries whose user keys have the filter key prefix (and ikey's user
	// key has it). Sources that hold no such entry at or after ikey may be
	// skipped: the iterator then lands past them, on a later entry, or is
	// invalid. Entries outside the prefix are no longer complete: moving in
	// the other direction afterwards re-seeks.
	SeekPrefixGE(prefix, ikey []byte) bool
}
