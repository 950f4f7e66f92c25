package iterator

import (
	"bytes"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/rangedel"
)

// position says where a Visible stands.
type position uint8

const (
	posUnpositioned position = iota // fresh: nothing to show until First/Last/SeekGE
	posForward                      // on a key; inner rests on the entry shown
	posBackward                     // on a key; inner rests before the key's versions
	posBeforeStart                  // ran off the start: Next goes to First
	posAfterEnd                     // ran off the end: Prev goes to Last
	posPrefixEnd                    // ran off the prefix of a prefix seek: Next and Prev stay put
	posFailed                       // err is set, or the iterator is closed
)

// Visible is the user's view of an internal iterator at one sequence number:
// for each user key in [lower, upper), the newest version with sequence <=
// seq, unless that version is a tombstone or a range tombstone with a
// larger sequence <= seq covers it (SetRangeDels). Key returns user keys.
type Visible struct {
	inner        base.InternalIterator
	seq          uint64
	lower, upper []byte // owned copies; nil means unbounded
	pos          position
	err          error

	key, value []byte // what Key and Value return while positioned

	// Owned buffers. keyBuf/valBuf hold the entry shown after a backward
	// move; skipKey holds the user key being stepped over; seekKey is scratch
	// for search keys. Reused across moves so steady-state moves allocate
	// nothing.
	keyBuf, valBuf, skipKey, seekKey []byte
	// seekArr and skipArr back seekKey and skipKey while keys fit, so a
	// short scan does not allocate them (a Visible is never copied).
	seekArr, skipArr [48]byte

	// Prefix iteration (SeekPrefixGE): while inPrefix, only user keys whose
	// prefixOf is prefix are shown; the iterator stops at the prefix's edges.
	prefixOf func([]byte) []byte // nil: a prefix is a whole user key
	prefix   []byte              // owned
	inPrefix bool

	// rangeDels (nil: none) hide every version they cover: a key whose
	// newest visible version is older than a visible range tombstone over
	// it is shown as deleted.
	rangeDels *rangedel.List
}

// SetRangeDels sets the range tombstones of every source of inner
// (fragmented; nil for none). Tombstones newer than the view's sequence
// are ignored. The iterator is unpositioned afterwards.
func (v *Visible) SetRangeDels(l *rangedel.List) {
	if l.Empty() {
		l = nil
	}
	v.rangeDels = l
	if v.pos != posFailed {
		v.pos, v.inPrefix, v.key, v.value = posUnpositioned, false, nil, nil
	}
}

// live reports whether the newest visible version of ukey, of kind and
// sequence seq, shows a value.
func (v *Visible) live(ukey []byte, seq uint64, kind base.Kind) bool {
	return kind == base.KindSet && (v.rangeDels == nil || !v.rangeDels.Covers(ukey, seq, v.seq))
}

// SetPrefixExtractor sets the function that gives a user key's prefix for
// SeekPrefixGE (nil: the whole key). Every key with a given prefix must
// start with one common byte string, so that they are contiguous.
func (v *Visible) SetPrefixExtractor(fn func([]byte) []byte) { v.prefixOf = fn }

// SetBounds replaces the bounds (copied; nil unbounded). The iterator is
// unpositioned afterwards.
func (v *Visible) SetBounds(lower, upper []byte) {
	if v.pos == posFailed {
		return
	}
	v.lower = append(v.lower[:0], lower...)
	if lower == nil {
		v.lower = nil
	}
	v.upper = append(v.upper[:0], upper...)
	if upper == nil {
		v.upper = nil
	}
	v.pos, v.inPrefix, v.key, v.value = posUnpositioned, false, nil, nil
}

// SeekPrefixGE moves to the first visible key >= max(key, lower) whose
// prefix is key's prefix; Next and Prev then stay inside that prefix (the
// iterator becomes invalid at its edges). Sources that hold no key of the
// prefix (by their filters) are skipped.
func (v *Visible) SeekPrefixGE(key []byte) bool {
	return v.SeekPrefixGEWith(v.prefixOfKey(key), key)
}

// SeekPrefixGEWith is SeekPrefixGE with the prefix given (it must be the
// prefix of every key the caller wants, key included).
func (v *Visible) SeekPrefixGEWith(prefix, key []byte) bool {
	return v.seekPrefixGE(prefix, key, true)
}

// SeekPrefixRangeGE is SeekGE(key) for an iterator whose bounds already
// hold exactly the keys of prefix: sources that hold no key of prefix are
// skipped, and the bounds, not a prefix check, end the iteration.
func (v *Visible) SeekPrefixRangeGE(prefix, key []byte) bool {
	return v.seekPrefixGE(prefix, key, false)
}

func (v *Visible) seekPrefixGE(prefix, key []byte, stopAtEdge bool) bool {
	if v.pos == posFailed {
		return false
	}
	v.prefix = append(v.prefix[:0], prefix...)
	v.inPrefix = stopAtEdge
	if v.lower != nil && bytes.Compare(key, v.lower) < 0 {
		key = v.lower
	}
	if v.upper != nil && bytes.Compare(key, v.upper) >= 0 {
		v.pos = posAfterEnd
		if stopAtEdge {
			v.pos = posPrefixEnd
		}
		return false
	}
	v.seekKey = base.AppendInternalKey(v.seekKey[:0], key, v.seq, base.KindSeek)
	if ps, ok := v.inner.(base.PrefixSeeker); ok {
		ps.SeekPrefixGE(v.prefix, v.seekKey)
	} else {
		v.inner.SeekGE(v.seekKey)
	}
	return v.findNext()
}

// SeekLT moves to the last visible key < min(key, upper), at or above lower.
func (v *Visible) SeekLT(key []byte) bool {
	if v.pos == posFailed {
		return false
	}
	v.inPrefix = false
	if v.upper != nil && bytes.Compare(key, v.upper) > 0 {
		key = v.upper
	}
	if v.lower != nil && bytes.Compare(key, v.lower) <= 0 {
		v.pos = posBeforeStart
		return false
	}
	// The search key with MaxSeq sorts before every version of key.
	v.seekKey = base.AppendInternalKey(v.seekKey[:0], key, base.MaxSeq, base.KindSeek)
	v.inner.SeekLT(v.seekKey)
	return v.findPrev()
}

func (v *Visible) prefixOfKey(k []byte) []byte {
	if v.prefixOf == nil {
		return k
	}
	return v.prefixOf(k)
}

// outsidePrefix reports whether a prefix iteration must stop at ukey.
func (v *Visible) outsidePrefix(ukey []byte) bool {
	return v.inPrefix && !bytes.Equal(v.prefixOfKey(ukey), v.prefix)
}

// NewVisible returns a Visible over inner (internal keys in CompareInternal
// order) showing the state as of sequence number seq, limited to user keys in
// [lower, upper); a nil bound is unbounded. The bounds are copied. The Visible
// owns inner and closes it on Close.
func NewVisible(inner base.InternalIterator, seq uint64, lower, upper []byte) *Visible {
	if seq > base.MaxSeq {
		seq = base.MaxSeq
	}
	v := &Visible{inner: inner, seq: seq}
	v.seekKey, v.skipKey = v.seekArr[:0], v.skipArr[:0]
	if lower != nil {
		v.lower = append([]byte{}, lower...)
	}
	if upper != nil {
		v.upper = append([]byte{}, upper...)
	}
	return v
}

// First moves to the first visible key >= lower.
func (v *Visible) First() bool {
	if v.pos == posFailed {
		return false
	}
	v.inPrefix = false
	if v.lower != nil {
		return v.seekGE(v.lower)
	}
	v.inner.First()
	return v.findNext()
}

// Last moves to the last visible key < upper.
func (v *Visible) Last() bool {
	if v.pos == posFailed {
		return false
	}
	v.inPrefix = false
	if v.upper != nil {
		// The search key with MaxSeq sorts before every version of upper,
		// so SeekLT lands on the last entry of a smaller user key.
		v.seekKey = base.AppendInternalKey(v.seekKey[:0], v.upper, base.MaxSeq, base.KindSeek)
		v.inner.SeekLT(v.seekKey)
	} else {
		v.inner.Last()
	}
	return v.findPrev()
}

// SeekGE moves to the first visible key >= max(key, lower).
func (v *Visible) SeekGE(key []byte) bool {
	if v.pos == posFailed {
		return false
	}
	v.inPrefix = false
	if v.lower != nil && bytes.Compare(key, v.lower) < 0 {
		key = v.lower
	}
	return v.seekGE(key)
}

func (v *Visible) seekGE(key []byte) bool {
	if v.upper != nil && bytes.Compare(key, v.upper) >= 0 {
		v.pos = posAfterEnd
		return false
	}
	// Seeking with our own sequence number skips versions too new to see.
	v.seekKey = base.AppendInternalKey(v.seekKey[:0], key, v.seq, base.KindSeek)
	v.inner.SeekGE(v.seekKey)
	return v.findNext()
}

// Next moves to the next visible key. After running off the start it moves
// to the first key; after running off the end it stays there.
func (v *Visible) Next() bool {
	switch v.pos {
	case posForward:
		// Step over the rest of the current key's versions.
		v.skipKey = append(v.skipKey[:0], v.key...)
		for v.inner.Next() && bytes.Equal(base.UserKey(v.inner.Key()), v.skipKey) {
		}
		return v.findNext()
	case posBackward:
		// inner rests before the current key's versions (or ran off the
		// start); step over everything up to and including the current key.
		// v.key is keyBuf, which nothing below overwrites.
		ok := v.inner.Valid()
		if ok {
			ok = v.inner.Next()
		} else if v.inner.Error() == nil {
			ok = v.inner.First()
		}
		for ok && bytes.Compare(base.UserKey(v.inner.Key()), v.key) <= 0 {
			ok = v.inner.Next()
		}
		return v.findNext()
	case posBeforeStart:
		return v.First()
	}
	return false
}

// Prev moves to the previous visible key. After running off the end it moves
// to the last key; after running off the start it stays there.
func (v *Visible) Prev() bool {
	switch v.pos {
	case posForward:
		// inner rests on the current key's newest visible version; newer
		// invisible versions may sit before it. Step back past all of them.
		v.skipKey = append(v.skipKey[:0], v.key...)
		for v.inner.Prev() && bytes.Equal(base.UserKey(v.inner.Key()), v.skipKey) {
		}
		return v.findPrev()
	case posBackward:
		return v.findPrev()
	case posAfterEnd:
		return v.Last()
	}
	return false
}

// findNext moves forwards from inner's position to the first user key whose
// newest visible version is a value, and shows it.
func (v *Visible) findNext() bool {
	for v.inner.Valid() {
		ikey := v.inner.Key()
		ukey, seq, kind, ok := base.ParseInternalKey(ikey)
		if !ok {
			return v.fail(malformedKey(ikey))
		}
		if v.upper != nil && bytes.Compare(ukey, v.upper) >= 0 {
			break
		}
		if v.outsidePrefix(ukey) {
			v.pos = posPrefixEnd
			return false
		}
		if seq > v.seq {
			v.inner.Next() // too new for this view
			continue
		}
		if v.live(ukey, seq, kind) {
			v.key, v.value, v.pos = ukey, v.inner.Value(), posForward
			return true
		}
		// The newest visible version is a tombstone: hide the whole key.
		v.skipKey = append(v.skipKey[:0], ukey...)
		for v.inner.Next() && bytes.Equal(base.UserKey(v.inner.Key()), v.skipKey) {
		}
	}
	if err := v.inner.Error(); err != nil {
		return v.fail(err)
	}
	v.pos = posAfterEnd
	if v.inPrefix {
		v.pos = posPrefixEnd
	}
	return false
}

// findPrev moves backwards from inner's position to the previous user key
// whose newest visible version is a value, and shows it. Walking backwards a
// key's versions come oldest first, so the newest visible one is the last one
// met before the user key changes: each visible version is copied as the
// candidate until then.
func (v *Visible) findPrev() bool {
	have := false // keyBuf/valBuf/kind/kseq hold the current user key's candidate
	var kind base.Kind
	var kseq uint64
	for v.inner.Valid() {
		ikey := v.inner.Key()
		ukey, seq, k, ok := base.ParseInternalKey(ikey)
		if !ok {
			return v.fail(malformedKey(ikey))
		}
		if v.lower != nil && bytes.Compare(ukey, v.lower) < 0 {
			break
		}
		if v.outsidePrefix(ukey) {
			break
		}
		if have && !bytes.Equal(ukey, v.keyBuf) {
			// Moved on to an older user key: the candidate is final.
			if v.live(v.keyBuf, kseq, kind) {
				return v.showBackward()
			}
			have = false // a tombstone hides its key
		}
		if seq <= v.seq {
			if !have {
				v.keyBuf = append(v.keyBuf[:0], ukey...)
			}
			v.valBuf = append(v.valBuf[:0], v.inner.Value()...)
			kind, kseq, have = k, seq, true
		}
		v.inner.Prev()
	}
	if err := v.inner.Error(); err != nil {
		return v.fail(err)
	}
	if have && v.live(v.keyBuf, kseq, kind) {
		return v.showBackward()
	}
	v.pos = posBeforeStart
	if v.inPrefix {
		v.pos = posPrefixEnd
	}
	return false
}

func (v *Visible) showBackward() bool {
	v.key, v.value, v.pos = v.keyBuf, v.valBuf, posBackward
	return true
}

func (v *Visible) fail(err error) bool {
	v.err, v.pos = err, posFailed
	return false
}

func malformedKey(ikey []byte) error {
	return base.CorruptionErrorf("bloomkv/iterator: malformed internal key %s (%d bytes)",
		base.FormatInternalKey(ikey), len(ikey))
}

// Valid reports whether the iterator is on a key.
func (v *Visible) Valid() bool { return v.pos == posForward || v.pos == posBackward }

// Key returns the current user key, valid until the next move.
func (v *Visible) Key() []byte { return v.key }

// Value returns the current value, valid until the next move.
func (v *Visible) Value() []byte { return v.value }

// Error returns the error that stopped the iterator, if any.
func (v *Visible) Error() error { return v.err }

// Close closes the inner iterator. Afterwards every move returns false.
func (v *Visible) Close() error {
	if v.inner == nil {
		return nil
	}
	err := v.inner.Close()
	v.inner, v.pos, v.key, v.value = nil, posFailed, nil, nil
	return err
}
