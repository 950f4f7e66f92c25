package bloomkv

import (
	"errors"
	"fmt"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// levelIter walks the tables of one sorted, non-overlapping level as one
// base.InternalIterator, opening a table only when the walk reaches it and
// keeping at most one open.
type levelIter struct {
	tc    *sstable.TableCache
	files []*manifest.FileMetadata
	index int // file of iter; -1 or len(files) when outside
	iter  base.InternalIterator
	close func()
	err   error
}

func newLevelIter(tc *sstable.TableCache, files []*manifest.FileMetadata) *levelIter {
	return &levelIter{tc: tc, files: files, index: -1}
}

// open positions the iterator on file i (closing the previous one). It
// returns false on an error or when i is out of range.
func (l *levelIter) open(i int) bool {
	l.closeCurrent()
	l.index = i
	if i < 0 || i >= len(l.files) {
		return false
	}
	f := l.files[i]
	r, release, err := findTable(l.tc, f)
	if errors.Is(err, sstable.ErrTableCacheClosed) {
		err = fmt.Errorf("%w: %w", ErrClosed, err) // the DB closed under this iterator
	}
	if err != nil {
		l.err = err
		return false
	}
	l.iter, l.close = r.NewIter(true), release
	return true
}

func (l *levelIter) closeCurrent() {
	if l.iter != nil {
		if err := l.iter.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.close()
		l.iter, l.close = nil, nil
	}
}

// settle checks the current file's iterator for an error.
func (l *levelIter) settle(ok bool) bool {
	if !ok && l.iter != nil && l.iter.Error() != nil && l.err == nil {
		l.err = l.iter.Error()
	}
	return ok && l.err == nil
}

// skipForward moves to the first entry of the following files when the
// current one is exhausted.
func (l *levelIter) skipForward(ok bool) bool {
	for !ok && l.err == nil {
		if l.iter != nil && l.iter.Error() != nil {
			l.err = l.iter.Error()
			return false
		}
		if !l.open(l.index + 1) {
			return false
		}
		ok = l.iter.First()
	}
	return l.settle(ok)
}

func (l *levelIter) skipBackward(ok bool) bool {
	for !ok && l.err == nil {
		if l.iter != nil && l.iter.Error() != nil {
			l.err = l.iter.Error()
			return false
		}
		if !l.open(l.index - 1) {
			return false
		}
		ok = l.iter.Last()
	}
	return l.settle(ok)
}

func (l *levelIter) SeekGE(ikey []byte) bool {
	// The first file whose largest key is >= ikey.
	i := sort.Search(len(l.files), func(i int) bool {
		return base.CompareInternal(l.files[i].Largest, ikey) >= 0
	})
	if !l.open(i) {
		return false
	}
	return l.skipForward(l.iter.SeekGE(ikey))
}

func (l *levelIter) SeekLT(ikey []byte) bool {
	// The last file whose smallest key is < ikey.
	i := sort.Search(len(l.files), func(i int) bool {
		return base.CompareInternal(l.files[i].Smallest, ikey) >= 0
	}) - 1
	if !l.open(i) {
		return false
	}
	return l.skipBackward(l.iter.SeekLT(ikey))
}

func (l *levelIter) First() bool {
	if !l.open(0) {
		return false
	}
	return l.skipForward(l.iter.First())
}

func (l *levelIter) Last() bool {
	if !l.open(len(l.files) - 1) {
		return false
	}
	return l.skipBackward(l.iter.Last())
}

func (l *levelIter) Next() bool {
	if l.iter == nil {
		return false
	}
	return l.skipForward(l.iter.Next())
}

func (l *levelIter) Prev() bool {
	if l.iter == nil {
		return false
	}
	return l.skipBackward(l.iter.Prev())
}

func (l *levelIter) Valid() bool   { return l.err == nil && l.iter != nil && l.iter.Valid() }
func (l *levelIter) Key() []byte   { return l.iter.Key() }
func (l *levelIter) Value() []byte { return l.iter.Value() }
func (l *levelIter) Error() error  { return l.err }

func (l *levelIter) Close() error {
	l.closeCurrent()
	return l.err
}
