package main

import (
	"fmt"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// runTable is one verified table as a run of the repair merge sees it.
type runTable struct {
	name              string
	num               uint64
	size              int64
	smallest, largest []byte // internal keys, from the properties
}

// partitionRuns sorts tables into as few runs as it can, each run a list
// of tables in key order whose internal-key ranges do not meet, so that a
// run reads as one sorted stream with one table open at a time. A healthy
// database needs one run per level-0 table plus one per deeper level; a
// repair merges the runs rather than every table at once, which bounds the
// files open to the number of runs.
//
// Sorting by smallest key and putting each table into the first run it
// extends is the greedy colouring of an interval graph, which is optimal:
// no partition has fewer runs.
func partitionRuns(tables []runTable) [][]runTable {
	sorted := append([]runTable(nil), tables...)
	sort.Slice(sorted, func(i, j int) bool {
		return base.CompareInternal(sorted[i].smallest, sorted[j].smallest) < 0
	})
	var runs [][]runTable
next:
	for _, t := range sorted {
		for i, r := range runs {
			if base.CompareInternal(r[len(r)-1].largest, t.smallest) < 0 {
				runs[i] = append(r, t)
				continue next
			}
		}
		runs = append(runs, []runTable{t})
	}
	return runs
}

// runIter is a base.InternalIterator over one run: the concatenation of
// its tables, opened one at a time. Tables were verified before, so an
// error here is an I/O error or a file changed under the repair.
type runIter struct {
	fs     vfs.FS
	dir    string
	tables []runTable
	i      int // index of the open table
	r      *sstable.Reader
	it     base.InternalIterator
	err    error
}

var _ base.InternalIterator = (*runIter)(nil)

func newRunIter(fs vfs.FS, dir string, tables []runTable) *runIter {
	return &runIter{fs: fs, dir: dir, tables: tables, i: -1}
}

// open closes the open table and opens tables[i].
func (ri *runIter) open(i int) bool {
	ri.closeTable()
	t := ri.tables[i]
	path := ri.fs.PathJoin(ri.dir, t.name)
	f, err := ri.fs.Open(path)
	if err != nil {
		ri.err = fmt.Errorf("kvtool: open %s: %w", path, err)
		return false
	}
	r, err := sstable.Open(f, path, t.num, t.size, sstable.ReaderOptions{})
	if err != nil {
		ri.err = err
		return false
	}
	ri.i, ri.r, ri.it = i, r, r.NewIter(false)
	return true
}

func (ri *runIter) closeTable() {
	if ri.it != nil {
		if err := ri.it.Close(); err != nil && ri.err == nil {
			ri.err = err
		}
		ri.it = nil
	}
	if ri.r != nil {
		if err := ri.r.Close(); err != nil && ri.err == nil {
			ri.err = err
		}
		ri.r = nil
	}
	ri.i = -1
}

// settle reports whether the open table's iterator is on an entry, and
// records its error when it is not.
func (ri *runIter) settle(ok bool) bool {
	if !ok && ri.err == nil {
		ri.err = ri.it.Error()
	}
	return ok && ri.err == nil
}

// forward moves to the first entry of the tables from i on.
func (ri *runIter) forward(i int) bool {
	for ; i < len(ri.tables) && ri.err == nil; i++ {
		if ri.open(i) && ri.settle(ri.it.First()) {
			return true
		}
	}
	ri.closeTable()
	return false
}

// backward moves to the last entry of the tables from i down.
func (ri *runIter) backward(i int) bool {
	for ; i >= 0 && ri.err == nil; i-- {
		if ri.open(i) && ri.settle(ri.it.Last()) {
			return true
		}
	}
	ri.closeTable()
	return false
}

func (ri *runIter) First() bool { ri.err = nil; return ri.forward(0) }
func (ri *runIter) Last() bool  { ri.err = nil; return ri.backward(len(ri.tables) - 1) }

func (ri *runIter) SeekGE(ikey []byte) bool {
	ri.err = nil
	i := sort.Search(len(ri.tables), func(i int) bool {
		return base.CompareInternal(ri.tables[i].largest, ikey) >= 0
	})
	if i == len(ri.tables) {
		ri.closeTable()
		return false
	}
	if ri.open(i) && ri.settle(ri.it.SeekGE(ikey)) {
		return true
	}
	return ri.forward(i + 1)
}

func (ri *runIter) SeekLT(ikey []byte) bool {
	ri.err = nil
	i := sort.Search(len(ri.tables), func(i int) bool {
		return base.CompareInternal(ri.tables[i].smallest, ikey) >= 0
	}) - 1
	if i < 0 {
		ri.closeTable()
		return false
	}
	if ri.open(i) && ri.settle(ri.it.SeekLT(ikey)) {
		return true
	}
	return ri.backward(i - 1)
}

func (ri *runIter) Next() bool {
	if !ri.Valid() {
		return false
	}
	if ri.settle(ri.it.Next()) {
		return true
	}
	return ri.forward(ri.i + 1)
}

func (ri *runIter) Prev() bool {
	if !ri.Valid() {
		return false
	}
	if ri.settle(ri.it.Prev()) {
		return true
	}
	return ri.backward(ri.i - 1)
}

func (ri *runIter) Valid() bool   { return ri.err == nil && ri.it != nil && ri.it.Valid() }
func (ri *runIter) Key() []byte   { return ri.it.Key() }
func (ri *runIter) Value() []byte { return ri.it.Value() }
func (ri *runIter) Error() error  { return ri.err }

func (ri *runIter) Close() error {
	ri.closeTable()
	return ri.err
}
