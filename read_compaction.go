package bloomkv

import (
	"sort"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Read-triggered compaction: the tree is shaped by writes (a level is
// compacted when it outgrows its size target), so once writes stop, a
// table may stay in a shallow level for good above a deeper level that
// covers the same keys. Every seek into that key range then reads a block
// from both, and every Get there consults both. When reads have paid for
// such a table often enough, the compaction loop merges it into the level
// below, and reads there touch one table fewer from then on.
//
// What counts as paying, in units of one seek:
//   - a DB iterator's SeekGE whose target lay inside the key range of a
//     table in two or more levels (1 and deeper) read a block in each: the
//     shallowest of those tables is charged one seek;
//   - a Get that consulted such a table without finding its answer there
//     and went on to a deeper level's table charges the first one
//     1/getChargeDivisor of a seek: it paid a table lookup and a filter
//     probe (a block read only on a false positive), about 0.1 us against
//     the 2-3 us of a block read and decode.
//
// Level 0 is left to its own triggers (the table count, idle compaction),
// and the last level has nothing below it.
//
// How much is enough: a table of S bytes is queued after max(S/16 KiB,
// 100) seeks' worth of charges, the allowance LevelDB gives its tables.
// Merging it costs its size plus its overlap below in I/O and CPU, spent
// on a background core; the reads it saves are on the readers' path. A
// queued table whose overlap in the level below exceeds readMaxRewrite
// times its size (a small level above a large one, each table spanning
// much of the key space) is not merged: that would rewrite much of the
// level below to save one probe. Charges live in memory (manifest.
// FileMetadata.ChargeRead), so a reopened database starts counting again.
//
// Options.DisableReadCompactions (and DisableAutomaticCompactions) turn it
// off. The compaction loop runs these only when no level is over its
// target and no idle compaction is due.

// readChargeBytes and minReadCharges set the seeks after which a table is
// queued: its size / readChargeBytes, at least minReadCharges.
// getChargeDivisor is the number of Gets that count as one seek, and
// readMaxRewrite the largest overlap below, per byte of the table, that a
// read-triggered compaction rewrites.
const (
	readChargeBytes  = 16 << 10
	minReadCharges   = 100
	getChargeDivisor = 32
	readMaxRewrite   = 10
)

// Charges are counted in units of one Get, so that a seek adds
// getChargeDivisor and the limit is in the same unit.
const (
	seekCharge = getChargeDivisor
	getCharge  = 1
)

// readCompactionLimit returns the charges after which f is queued.
func readCompactionLimit(f *manifest.FileMetadata) int64 {
	return max(int64(f.Size/readChargeBytes), minReadCharges) * seekCharge
}

// readCompactionsEnabled reports whether reads may queue compactions.
func (db *DB) readCompactionsEnabled() bool {
	return !db.opts.DisableAutomaticCompactions && !db.opts.DisableReadCompactions
}

// readCandidate is a table queued by its read charges, with the level it
// was read in.
type readCandidate struct {
	level int
	file  *manifest.FileMetadata
}

// chargeSeek charges the shallowest of the tables whose key range held the
// target of the SeekGE that just positioned levels, when a deeper one held
// it too, and forgets the seek either way.
func (db *DB) chargeSeek(levels []*levelIter) {
	var first *manifest.FileMetadata
	firstLevel, charged := 0, false
	for _, l := range levels {
		f := l.seekFile
		if f == nil {
			continue
		}
		l.seekFile = nil
		switch {
		case first == nil:
			first, firstLevel = f, l.level
		case !charged:
			db.chargeRead(firstLevel, first, seekCharge)
			charged = true
		}
	}
}

// chargeRead charges table f of level n units and queues it when those
// reached its limit.
func (db *DB) chargeRead(level int, f *manifest.FileMetadata, n int64) {
	if level == 0 || level >= manifest.NumLevels-1 || !db.readCompactionsEnabled() {
		return
	}
	if !f.ChargeRead(n, readCompactionLimit(f)) {
		return
	}
	db.mu.Lock()
	db.mu.readCompactions = append(db.mu.readCompactions, readCandidate{level: level, file: f})
	db.mu.bgCond.Broadcast()
	db.mu.Unlock()
}

// readCompactionDueLocked drops queued tables that are no longer where
// they were read (compacted, or moved by another compaction) and reports
// whether one is left. REQUIRES: db.mu held.
func (db *DB) readCompactionDueLocked() bool {
	if !db.readCompactionsEnabled() {
		db.mu.readCompactions = nil
		return false
	}
	q := db.mu.readCompactions[:0]
	for _, c := range db.mu.readCompactions {
		if inLevel(db.mu.current.Version, c.level, c.file) {
			q = append(q, c)
		}
	}
	clear(db.mu.readCompactions[len(q):])
	db.mu.readCompactions = q
	return len(q) > 0
}

// pickReadCompactionLocked returns the compaction of the oldest queued
// table that is still where it was read into the level below, taking it
// off the queue; nil when none is (or none is worth its rewrite).
// REQUIRES: db.mu held; v is db.mu.current.
func (db *DB) pickReadCompactionLocked(v *version) *compaction.Compaction {
	for len(db.mu.readCompactions) > 0 {
		c := db.mu.readCompactions[0]
		db.mu.readCompactions[0] = readCandidate{}
		db.mu.readCompactions = db.mu.readCompactions[1:]
		if !inLevel(v.Version, c.level, c.file) {
			continue
		}
		// Tables of levels >= 1 do not overlap: the range of c.file picks
		// exactly c.file.
		pc := compaction.PickRange(v.Version, c.level, c.file.SmallestUserKey(), c.file.LargestUserKey())
		if pc == nil || compaction.TotalSize(pc.Inputs[1]) > readMaxRewrite*compaction.TotalSize(pc.Inputs[0]) {
			continue
		}
		return pc
	}
	return nil
}

// inLevel reports whether f is a table of level (>= 1) in v.
func inLevel(v *manifest.Version, level int, f *manifest.FileMetadata) bool {
	files := v.Levels[level]
	i := sort.Search(len(files), func(i int) bool {
		return base.CompareInternal(files[i].Largest, f.Largest) >= 0
	})
	return i < len(files) && files[i] == f
}
