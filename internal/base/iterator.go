package base

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
