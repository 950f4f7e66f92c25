package bloomkv

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
)

// A compaction's merge: reading its inputs through package compaction's
// merge rule, the output tables it writes (where they split, and the range
// tombstones each keeps), and the version edit that replaces the inputs
// with them. compact.go decides what runs and installs the result.

// compactionOutputs writes a compaction's output tables, splitting them
// where compaction.OutputSplitter says: at the output level's target file
// size, where one would overlap too much of the grandparent level, and at
// grandparent boundaries once half that size; never between two versions
// of one user key.
type compactionOutputs struct {
	db        *DB
	c         *tableCompaction
	o         compaction.Options
	w         *sstable.Writer
	num       uint64
	lastUkey  []byte
	metas     []*manifest.FileMetadata
	nums      []uint64
	installed bool
	// filterBits is the policy's bits per key for the output level,
	// decided when the compaction starts (0 = no filter).
	filterBits float64

	// split decides where outputs end (compaction/split.go).
	split *compaction.OutputSplitter[*manifest.FileMetadata]

	// rangeDels are the range tombstones the outputs keep; rangeLo is where
	// the current output's share of them starts (nil: the first output).
	rangeDels *rangedel.List
	rangeLo   []byte

	// With Options.TreeFilter (treefilter_update.go): the keys of the
	// current output (tfc), of the finished ones (tfAdded) and of the
	// inputs, captured as the merge read them (tfRemoved; nil for an
	// input not read through).
	tfc                *tfCapture
	tfAdded, tfRemoved map[uint64]*tfKeys
	tfHint             int // capacity for the next output's keys
}

func (out *compactionOutputs) add(ikey, value []byte) error {
	ukey := base.UserKey(ikey)
	newKey := out.lastUkey == nil || !bytes.Equal(ukey, out.lastUkey)
	if newKey {
		if out.split == nil {
			out.split = out.c.Splitter(out.o)
		}
		var size int64
		if out.w != nil {
			size = int64(out.w.EstimatedSize())
		}
		if out.split.SplitBefore(ukey, size) {
			if err := out.finishTable(); err != nil {
				return err
			}
		}
	}
	if out.w == nil {
		if err := out.newTable(); err != nil {
			return err
		}
	}
	if out.tfc != nil && (newKey || len(out.tfc.keys.hashes) == 0) {
		out.tfc.addNew(ukey) // a table never splits a user key's versions
	}
	out.lastUkey = append(out.lastUkey[:0], ukey...)
	if err := out.w.Add(ikey, value); err != nil {
		return fmt.Errorf("bloomkv: compaction: %w", err)
	}
	return nil
}

// newTable starts the next output table.
func (out *compactionOutputs) newTable() error {
	db := out.db
	num, err := db.allocFileNum(true, causeCompaction)
	if err != nil {
		return fmt.Errorf("bloomkv: compaction: %w", err)
	}
	out.num = num
	out.nums = append(out.nums, out.num)
	db.hookBeforeTable(out.num, causeCompaction)
	name := db.path(base.FileTypeTable, out.num)
	f, err := db.fs.Create(name)
	if err != nil {
		return fmt.Errorf("bloomkv: compaction: create %s: %w", name, err)
	}
	out.w = sstable.NewWriter(f, db.sstWriterOptions(out.num, out.c.OutputLevel, out.filterBits))
	if db.capturingTreeFilter() {
		// Sized like the last output: most are as large.
		out.tfc = &tfCapture{keys: tfKeys{hashes: make([]uint64, 0, out.tfHint)}}
	}
	return nil
}

// finishLastTable finishes the last output, which takes the range
// tombstones up to the end of the key space (in a table of its own when
// the compaction kept no point entry).
func (out *compactionOutputs) finishLastTable() error {
	if out.w == nil && len(out.rangeDels.Clip(out.rangeLo, nil, nil)) > 0 {
		if err := out.newTable(); err != nil {
			return err
		}
	}
	out.lastUkey = nil
	return out.finishTable()
}

func (out *compactionOutputs) finishTable() error {
	if out.w == nil {
		return nil
	}
	w := out.w
	out.w = nil
	if !out.rangeDels.Empty() {
		// This output covers the keys from rangeLo up to and including its
		// last user key, that is, below the key's successor (the last
		// output: to the end); the next output starts there.
		var hi []byte
		if out.lastUkey != nil {
			hi = keySuccessor(out.lastUkey)
		}
		spans := out.rangeDels.Clip(out.rangeLo, hi, nil)
		w.SetRangeDels(spans)
		out.rangeLo = hi
		if out.tfc != nil && len(spans) > 0 {
			out.tfc.keys.rangeDels = true
		}
	}
	meta, err := w.Finish()
	if err != nil {
		return fmt.Errorf("bloomkv: compaction: finish table %d: %w", out.num, err)
	}
	if out.tfc != nil {
		if out.tfAdded == nil {
			out.tfAdded = map[uint64]*tfKeys{}
		}
		out.tfAdded[out.num] = &out.tfc.keys
		out.tfHint = len(out.tfc.keys.hashes) + len(out.tfc.keys.hashes)/8
		out.tfc = nil
	}
	out.metas = append(out.metas, metaFromWriter(out.num, meta))
	out.db.events.tableCreated(TableCreateInfo{Reason: causeCompaction.String(), Path: out.db.path(base.FileTypeTable, out.num), FileNum: out.num, Size: meta.Size})
	return nil
}

// cleanup removes outputs of a failed compaction and forgets pending ones.
func (out *compactionOutputs) cleanup() {
	db := out.db
	if out.w != nil {
		_ = out.w.Abort()
	}
	db.manifestMu.Lock()
	uncertain := db.versions.Uncertain()
	db.manifestMu.Unlock()
	// With the manifest uncertain, a failed edit may still have named these
	// outputs; leave them to file collection once a fresh manifest settles it.
	if !out.installed && !uncertain {
		finished := map[uint64]bool{}
		for _, m := range out.metas {
			finished[m.FileNum] = true
		}
		for _, n := range out.nums {
			path := db.path(base.FileTypeTable, n)
			err := db.fs.Remove(path)
			if finished[n] { // TableCreated reported it
				db.events.tableDeleted(TableDeleteInfo{Path: path, FileNum: n, Err: err})
			}
		}
	}
	db.mu.Lock()
	for _, n := range out.nums {
		delete(db.mu.pendingOutputs, n)
	}
	db.mu.Unlock()
}

// keySuccessor returns the smallest key after k: k followed by a zero byte.
func keySuccessor(k []byte) []byte {
	return append(bytes.Clone(k), 0)
}

// executeCompaction merges c's inputs, dropping what no snapshot can see,
// into new tables. It returns the outputs (the caller cleans them up) and
// the bytes read.
func (db *DB) executeCompaction(c *tableCompaction, v *manifest.Version) (*compactionOutputs, uint64, error) {
	out := &compactionOutputs{db: db, c: c, o: db.compactionOptions(), filterBits: db.compactionFilterBits(c, v)}
	var iters []base.InternalIterator
	var rds []*rangedel.List
	var bytesIn uint64
	var taps map[uint64]*tfTap // the inputs' keys for the tree filter (treefilter_update.go)
	if db.capturingTreeFilter() {
		taps = map[uint64]*tfTap{}
	}
	for _, files := range c.Inputs {
		for _, f := range files {
			r, release, err := findTable(db.tableCache, f)
			if err != nil {
				for _, it := range iters {
					_ = it.Close()
				}
				return out, 0, fmt.Errorf("bloomkv: compaction: %w", err)
			}
			var it base.InternalIterator = &releasingIter{InternalIterator: r.NewCompactionIter(), release: release}
			if taps != nil {
				tap := &tfTap{InternalIterator: it}
				tap.c.keys.hashes = make([]uint64, 0, r.Properties().NumEntries)
				taps[f.FileNum], it = tap, tap
			}
			iters = append(iters, it)
			rds = append(rds, r.RangeDels())
			bytesIn += f.Size
		}
	}
	merged := iterator.NewMerging(iters...)
	defer merged.Close()
	bottommost := func(ukey []byte) bool {
		for l := c.OutputLevel + 1; l < manifest.NumLevels; l++ {
			if len(v.Overlaps(l, ukey, ukey)) > 0 {
				return false
			}
		}
		return true
	}
	snaps := db.snapshotSeqs()
	var in compaction.Input = merged
	if all := rangedel.Merge(rds...); !all.Empty() {
		in = compaction.NewRangeDelFilter(merged, all, snaps)
		out.rangeDels = compaction.KeptRangeDels(all, snaps, v, c.OutputLevel)
	}
	ci := compaction.NewIter(in, snaps, bottommost)
	n := 0
	for ok := ci.First(); ok; ok = ci.Next() {
		if n++; n%1024 == 0 && db.closing.Load() {
			return out, 0, errCompactionAborted
		}
		if err := out.add(ci.Key(), ci.Value()); err != nil {
			return out, 0, err
		}
	}
	if err := ci.Error(); err != nil {
		return out, 0, fmt.Errorf("bloomkv: compaction: %w", err)
	}
	if taps != nil {
		out.tfRemoved = make(map[uint64]*tfKeys, len(taps))
		for n, tap := range taps {
			out.tfRemoved[n] = tap.keys() // nil: read it back
		}
	}
	return out, bytesIn, out.finishLastTable()
}

// compactionEdit replaces c's inputs with the output tables metas and
// advances the round-robin pointer of c's level. It returns the edit and
// the bytes written.
func compactionEdit(c *tableCompaction, metas []*manifest.FileMetadata) (*manifest.VersionEdit, uint64) {
	edit := &manifest.VersionEdit{}
	for i, files := range c.Inputs {
		level := c.Level
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			edit.DeletedFiles = append(edit.DeletedFiles, manifest.DeletedFileEntry{Level: level, FileNum: f.FileNum})
		}
	}
	var bytesOut uint64
	for _, m := range metas {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: c.OutputLevel, Meta: m})
		bytesOut += m.Size
	}
	if c.Level > 0 && c.Level != c.OutputLevel {
		_, hi := compaction.KeyRange(c.Inputs[0])
		edit.CompactPointers = []manifest.CompactPointer{{Level: c.Level, Key: append([]byte(nil), hi...)}}
	}
	return edit, bytesOut
}

// releasingIter releases a table-cache reference when closed.
type releasingIter struct {
	base.InternalIterator
	release func()
}

func (it *releasingIter) Close() error {
	err := it.InternalIterator.Close()
	if it.release != nil {
		it.release()
		it.release = nil
	}
	return err
}
