package bloomkv

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
)

// A compaction's output tables: where they split, and the range
// tombstones each keeps.

// compactionOutputs writes a compaction's output tables, splitting them at
// the output level's target file size and where one would overlap too much of the grandparent
// level, but never between two versions of one user key.
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

	gpIndex   int
	gpOverlap int64
	seenKey   bool

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
	if out.w != nil && newKey &&
		(int64(out.w.EstimatedSize()) >= out.c.TargetFileSize(out.o) || out.stopBefore(ukey)) {
		if err := out.finishTable(); err != nil {
			return err
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

// stopBefore reports whether the current output has overlapped enough of
// the grandparent level that ukey should start a new one.
func (out *compactionOutputs) stopBefore(ukey []byte) bool {
	gp := out.c.Grandparents
	for out.gpIndex < len(gp) && bytes.Compare(ukey, base.UserKey(gp[out.gpIndex].Largest)) > 0 {
		if out.seenKey {
			out.gpOverlap += int64(gp[out.gpIndex].Size)
		}
		out.gpIndex++
	}
	out.seenKey = true
	if out.gpOverlap > out.c.MaxGrandparentOverlapBytes(out.o) {
		out.gpOverlap = 0
		return true
	}
	return false
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
