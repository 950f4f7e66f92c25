package main

import (
	"bytes"
	"container/heap"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// maxOrderFindings bounds how many read-order violations are listed; one
// bug usually produces thousands.
const maxOrderFindings = 10

// orderStats is what the read-order scan counts across the whole tree.
type orderStats struct {
	Entries  uint64 `json:"entries"`
	UserKeys uint64 `json:"user_keys"`
}

// checkReadOrder merges every live table and checks the invariant the read
// path relies on: a Get visits level 0 newest first, then levels 1..6, and
// stops at the first table holding a version of the key visible to it, so
// for each user key the versions must appear in that visiting order from
// newest to oldest. An older version in a table visited earlier would make
// Get return stale data (or resurrect a deleted key). The same (key,
// sequence) in two tables means a sequence number was used twice.
//
// Tables in skip (already reported as missing or corrupt) are left out.
// Only len(L0)+6 tables are open at a time: a level >= 1 is read file by
// file, its files being sorted and disjoint.
func checkReadOrder(fs vfs.FS, dir string, v *manifest.Version, skip map[uint64]bool, out *findings) orderStats {
	var h sourceHeap
	rank := 0
	for level, files := range v.Levels {
		if level == 0 {
			for _, f := range files {
				if !skip[f.FileNum] {
					h = append(h, &orderSource{fs: fs, dir: dir, rank: rank, level: 0, files: []*manifest.FileMetadata{f}})
				}
				rank++
			}
			continue
		}
		var keep []*manifest.FileMetadata
		for _, f := range files {
			if !skip[f.FileNum] {
				keep = append(keep, f)
			}
		}
		if len(keep) > 0 {
			h = append(h, &orderSource{fs: fs, dir: dir, rank: rank, level: level, files: keep})
		}
		rank++
	}
	defer func() {
		for _, s := range h {
			s.close()
		}
	}()
	live := h[:0]
	for _, s := range h {
		if s.first() {
			live = append(live, s)
		} else if s.err != nil {
			out.errorf(s.name(), "read-order scan: %v", s.err)
			s.close()
		}
	}
	h = live
	heap.Init(&h)

	var st orderStats
	var prevKey []byte // internal key of the previous entry
	var prevSrc *orderSource
	var prevFile string
	reported, suppressed := 0, 0
	for len(h) > 0 {
		s := h[0]
		k := s.it.Key()
		st.Entries++
		if prevKey == nil || !bytes.Equal(base.UserKey(k), base.UserKey(prevKey)) {
			st.UserKeys++
		} else if sameSeq := base.Trailer(k)>>8 == base.Trailer(prevKey)>>8; sameSeq || s.rank < prevSrc.rank {
			if reported < maxOrderFindings {
				reported++
				if sameSeq {
					out.errorf(s.name(), "sequence number used twice: this table holds %s, %s holds %s",
						fmtKey(k), prevFile, fmtKey(prevKey))
				} else {
					out.errorf(s.name(), "read order violated: this level-%d table holds %s, older than %s in %s (level %d), yet reads visit this table first and return the older version",
						s.level, fmtKey(k), fmtKey(prevKey), prevFile, prevSrc.level)
				}
			} else {
				suppressed++
			}
		}
		prevKey = append(prevKey[:0], k...)
		prevSrc, prevFile = s, s.name()
		if s.next() {
			heap.Fix(&h, 0)
			continue
		}
		if s.err != nil {
			out.errorf(s.name(), "read-order scan: %v", s.err)
		}
		s.close()
		heap.Pop(&h)
	}
	if suppressed > 0 {
		out.errorf("", "read order: %d further violations not listed", suppressed)
	}
	return st
}

// orderSource walks the tables of one level-0 file or one whole level
// >= 1 in key order, opening one table at a time.
type orderSource struct {
	fs    vfs.FS
	dir   string
	rank  int // position in the read path's visiting order
	level int
	files []*manifest.FileMetadata
	i     int // index in files of the open table

	r   *sstable.Reader
	it  base.InternalIterator
	err error

	curName  string // cached name of files[namedIdx]
	namedIdx int
}

// name returns the base name of the table the source is on (or was on
// last), formatted once per table: it is read for every entry.
func (s *orderSource) name() string {
	if i := min(s.i, len(s.files)-1); i != s.namedIdx || s.curName == "" {
		s.namedIdx, s.curName = i, base.MakeFilename(base.FileTypeTable, s.files[i].FileNum)
	}
	return s.curName
}

// open opens files[s.i] and positions at its first entry.
func (s *orderSource) open() bool {
	s.closeTable()
	m := s.files[s.i]
	path := s.fs.PathJoin(s.dir, base.MakeFilename(base.FileTypeTable, m.FileNum))
	f, err := s.fs.Open(path)
	if err != nil {
		s.err = fmt.Errorf("open %s: %w", path, err)
		return false
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		s.err = fmt.Errorf("stat %s: %w", path, err)
		return false
	}
	if s.r, err = sstable.Open(f, path, m.FileNum, info.Size(), sstable.ReaderOptions{}); err != nil {
		s.err = err
		return false
	}
	s.it = s.r.NewIter(false)
	if s.it.First() {
		return true
	}
	s.err = s.it.Error()
	return false
}

// first positions at the first entry of the first non-empty table.
func (s *orderSource) first() bool {
	for s.i = 0; s.i < len(s.files); s.i++ {
		if s.open() {
			return true
		}
		if s.err != nil {
			return false
		}
	}
	return false
}

// next moves to the following entry, across tables of the level.
func (s *orderSource) next() bool {
	if s.it.Next() {
		return true
	}
	if s.err = s.it.Error(); s.err != nil {
		return false
	}
	for s.i++; s.i < len(s.files); s.i++ {
		if s.open() {
			return true
		}
		if s.err != nil {
			return false
		}
	}
	return false
}

func (s *orderSource) closeTable() {
	if s.it != nil {
		_ = s.it.Close()
		s.it = nil
	}
	if s.r != nil {
		_ = s.r.Close()
		s.r = nil
	}
}

func (s *orderSource) close() { s.closeTable() }

// sourceHeap orders sources by their current internal key; equal keys (a
// sequence used twice) by visiting order.
type sourceHeap []*orderSource

func (h sourceHeap) Len() int { return len(h) }
func (h sourceHeap) Less(i, j int) bool {
	if c := base.CompareInternal(h[i].it.Key(), h[j].it.Key()); c != 0 {
		return c < 0
	}
	return h[i].rank < h[j].rank
}
func (h sourceHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sourceHeap) Push(x any)   { *h = append(*h, x.(*orderSource)) }
func (h *sourceHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
