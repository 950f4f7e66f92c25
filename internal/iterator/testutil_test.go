package iterator

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
)

// scribbleIter wraps an iterator and hands out Key/Value copies that it
// overwrites with garbage on the next move, so a consumer that keeps a slice
// past a move it made reads garbage instead of quietly seeing right data.
type scribbleIter struct {
	base.InternalIterator
	key, value []byte
}

func scribble(it base.InternalIterator) *scribbleIter { return &scribbleIter{InternalIterator: it} }

func (s *scribbleIter) moved(ok bool) bool {
	for i := range s.key {
		s.key[i] = 0xEE
	}
	for i := range s.value {
		s.value[i] = 0xEE
	}
	s.key, s.value = nil, nil
	if ok {
		s.key = slices.Clone(s.InternalIterator.Key())
		s.value = slices.Clone(s.InternalIterator.Value())
	}
	return ok
}

func (s *scribbleIter) SeekGE(k []byte) bool { return s.moved(s.InternalIterator.SeekGE(k)) }
func (s *scribbleIter) SeekLT(k []byte) bool { return s.moved(s.InternalIterator.SeekLT(k)) }
func (s *scribbleIter) First() bool          { return s.moved(s.InternalIterator.First()) }
func (s *scribbleIter) Last() bool           { return s.moved(s.InternalIterator.Last()) }
func (s *scribbleIter) Next() bool           { return s.moved(s.InternalIterator.Next()) }
func (s *scribbleIter) Prev() bool           { return s.moved(s.InternalIterator.Prev()) }
func (s *scribbleIter) Key() []byte          { return s.key }
func (s *scribbleIter) Value() []byte        { return s.value }

// failIter wraps an iterator and fails its failAt-th positioning call (0
// based) and every call after it, the way a child that hits a bad block
// would. Close returns closeErr.
type failIter struct {
	base.InternalIterator
	calls, failAt int
	err, closeErr error
	closed        bool
}

var errInjected = errors.New("injected failure")

func (f *failIter) step(move func() bool) bool {
	f.calls++
	if f.calls > f.failAt {
		f.err = fmt.Errorf("child read: %w", errInjected)
		return false
	}
	return move()
}

func (f *failIter) SeekGE(k []byte) bool {
	return f.step(func() bool { return f.InternalIterator.SeekGE(k) })
}
func (f *failIter) SeekLT(k []byte) bool {
	return f.step(func() bool { return f.InternalIterator.SeekLT(k) })
}
func (f *failIter) First() bool { return f.step(f.InternalIterator.First) }
func (f *failIter) Last() bool  { return f.step(f.InternalIterator.Last) }
func (f *failIter) Next() bool  { return f.step(f.InternalIterator.Next) }
func (f *failIter) Prev() bool  { return f.step(f.InternalIterator.Prev) }
func (f *failIter) Valid() bool { return f.err == nil && f.InternalIterator.Valid() }
func (f *failIter) Error() error {
	return f.err
}
func (f *failIter) Close() error {
	f.closed = true
	return f.closeErr
}

// entry is one internal key/value pair of a generated history.
type entry struct {
	ukey  string
	seq   uint64
	kind  base.Kind
	value string
}

func (e entry) ikey() []byte { return base.MakeInternalKey([]byte(e.ukey), e.seq, e.kind) }

// randomUserKeys returns n distinct keys over a small alphabet that includes
// 0x00 and 0xFF and makes some keys prefixes of others, where ordering bugs
// hide.
func randomUserKeys(rng *rand.Rand, n int) []string {
	alphabet := []byte{0x00, 'a', 'b', 0xFF}
	seen := map[string]bool{}
	var keys []string
	for len(keys) < n {
		k := make([]byte, 1+rng.Intn(3))
		for i := range k {
			k[i] = alphabet[rng.Intn(len(alphabet))]
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, string(k))
		}
	}
	sort.Strings(keys)
	return keys
}

// randomHistory writes ops puts and deletes over keys with increasing,
// unique sequence numbers (with gaps) and returns them in no order.
func randomHistory(rng *rand.Rand, keys []string, ops int) []entry {
	var h []entry
	seq := uint64(0)
	for range ops {
		seq += 1 + uint64(rng.Intn(3))
		e := entry{ukey: keys[rng.Intn(len(keys))], seq: seq, kind: base.KindSet}
		if rng.Intn(10) < 3 {
			e.kind = base.KindDelete
		} else if rng.Intn(8) > 0 { // sometimes an empty value
			e.value = fmt.Sprintf("v%d-%x", seq, rng.Intn(1<<16))
		}
		h = append(h, e)
	}
	return h
}

func sortEntries(es []entry) {
	sort.Slice(es, func(i, j int) bool { return base.CompareInternal(es[i].ikey(), es[j].ikey()) < 0 })
}

// sliceIterOf builds a SliceIter over es (sorted here).
func sliceIterOf(es []entry) *SliceIter {
	es = slices.Clone(es)
	sortEntries(es)
	keys := make([][]byte, len(es))
	vals := make([][]byte, len(es))
	for i, e := range es {
		keys[i], vals[i] = e.ikey(), []byte(e.value)
	}
	return NewSliceIter(keys, vals)
}

// splitAcross deals es out to n children at random.
func splitAcross(rng *rand.Rand, es []entry, n int) [][]entry {
	parts := make([][]entry, n)
	for _, e := range es {
		i := rng.Intn(n)
		parts[i] = append(parts[i], e)
	}
	return parts
}

// mergedScribbled returns a merging iterator over parts, each child a
// scribbling SliceIter.
func mergedScribbled(parts [][]entry) base.InternalIterator {
	children := make([]base.InternalIterator, len(parts))
	for i, p := range parts {
		children[i] = scribble(sliceIterOf(p))
	}
	return NewMerging(children...)
}
