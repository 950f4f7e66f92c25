package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Compaction: the background loop running what compaction.Choose picks,
// manual Compact and RebuildFilters (asking Choose too), and one
// compaction (a trivial move or a merge, compaction_outputs.go) through to
// its installed version edit.

// errCompactionAborted stops a compaction when the DB closes; it is not a
// background error.
var errCompactionAborted = errors.New("bloomkv: compaction aborted by Close")

// tableCompaction is a compaction the picker chose among the engine's
// tables: a *manifest.Version is the picker's compaction.Tree as it is
// (Version.Level), so asking the picker copies nothing.
type tableCompaction = compaction.Compaction[*manifest.FileMetadata]

var (
	_ compaction.Tree[*manifest.FileMetadata] = (*manifest.Version)(nil)
	// The picker's trees have the manifest's levels.
	_ [manifest.NumLevels - compaction.NumLevels]struct{}
	_ [compaction.NumLevels - manifest.NumLevels]struct{}
)

func (db *DB) compactionOptions() compaction.Options {
	return compaction.Options{
		L0CompactionThreshold:    db.opts.L0CompactionThreshold,
		LBaseMaxBytes:            db.opts.LBaseMaxBytes,
		LevelMultiplier:          db.opts.LevelMultiplier,
		DynamicLevelBytes:        db.opts.DynamicLevelBytes,
		TargetFileSize:           db.opts.TargetFileSize,
		TargetFileSizeMultiplier: db.opts.TargetFileSizeMultiplier,
	}
}

// compactionWantedLocked reports whether some level is due for compaction.
// REQUIRES: db.mu held.
func (db *DB) compactionWantedLocked() bool {
	if db.opts.DisableAutomaticCompactions {
		return false
	}
	scores := compaction.Scores(db.versions.Current(), db.compactionOptions())
	for l := 0; l < manifest.NumLevels-1; l++ {
		if scores[l] >= 1 {
			return true
		}
	}
	return false
}

// noteChoiceLocked applies what compaction.Choose weighed to the
// triggers' state: a weighed idle trigger is cleared (and a declined level
// 0 not weighed again until the tree changes), weighed read-queue entries
// are dropped. REQUIRES: db.mu held; v is db.versions.Current().
func (db *DB) noteChoiceLocked(v *manifest.Version, ch compaction.Choice[*manifest.FileMetadata]) {
	if ch.IdleConsidered {
		db.mu.idle.due = false
	}
	if ch.IdleDeclined {
		db.mu.idle.declined = v
	}
	if n := ch.ReadQueueUsed; n > 0 {
		q := db.mu.readCompactions
		clear(q[:n])
		db.mu.readCompactions = q[n:]
	}
}

// compactionLoop runs automatic compactions and collects obsolete files
// until Close.
func (db *DB) compactionLoop() {
	defer db.bgWG.Done()
	failures := 0
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.stopIdleTimerLocked()
	defer db.stopReadQuietTimerLocked()
	wanted := func() bool {
		return db.compactionWantedLocked() || db.idleCompactionDueLocked() || db.readCompactionDueLocked()
	}
	for {
		for !db.closing.Load() && (db.mu.compacting || db.mu.manualWaiting > 0 ||
			(!db.mu.obsoletePending && (db.mu.bgErr != nil || !wanted()))) {
			if !db.mu.compacting && db.mu.bgErr == nil {
				db.armIdleTimerLocked()
			}
			db.mu.bgCond.Wait()
		}
		if db.closing.Load() {
			return
		}
		if db.mu.bgErr != nil || !wanted() {
			db.mu.Unlock()
			db.deleteObsoleteFiles(false)
			db.mu.Lock()
			continue
		}
		v := db.versions.Current()
		v.Ref()
		choice := compaction.Choose(v, db.versions.CompactPointers(), db.compactionOptions(), compaction.Triggers[*manifest.FileMetadata]{
			IdleDue:   db.idleCompactionDueLocked(),
			ReadsDue:  db.readCompactionDueLocked(),
			ReadQueue: db.mu.readCompactions,
		})
		db.noteChoiceLocked(v, choice)
		c := choice.Compaction
		cause := compactionCause{idle: choice.Reason == compaction.ReasonIdle, read: choice.Reason == compaction.ReasonRead}
		db.mu.compacting = true
		db.mu.Unlock()
		var err error
		if c != nil {
			switch {
			case cause.idle:
				db.counters.idleCompactions.Add(1)
			case cause.read:
				db.counters.readCompactions.Add(1)
			}
			err = db.runCompaction(c, v, cause)
		}
		v.Unref()
		db.deleteObsoleteFiles(false)
		db.mu.Lock()
		if cause.read {
			db.spendReadBudgetLocked(compaction.TotalSize(c.Inputs[0]) + compaction.TotalSize(c.Inputs[1]))
		}
		db.mu.compacting = false
		db.mu.bgCond.Broadcast()
		if err == nil || errors.Is(err, errCompactionAborted) {
			failures = 0
			continue
		}
		// A failed compaction loses nothing: its inputs stay live.
		failures++
		db.retryLocked(err, failures, compactionRetryPause)
	}
}

// Compact compacts the user-key range [start, end] (nil start = from the
// first key, nil end = to the last) down through every level and returns
// when done. Both ends are inclusive, unlike an iterator's UpperBound:
// Compact([]byte("a"), []byte("c")) covers "c" itself, but not "c1"; use
// an end past the last key you mean (or nil) to cover a whole prefix.
// start > end is an error wrapping ErrInvalidArgument. Tables in the range whose filters or compression were written
// with other settings are rewritten too, so afterwards every table in the
// range has a filter and a compression per the current Options.
// Compact(nil, nil) leaves one sorted run, in the shallowest level at or
// below the deepest non-empty one whose size target holds it, so background
// compaction leaves it alone (under DynamicLevelBytes: in the deepest
// non-empty level, or level 6 for a tree with only level-0 tables).
func (db *DB) Compact(start, end []byte) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return invalidf("Compact start %q > end %q", start, end)
	}
	if err := db.Flush(); err != nil {
		return err
	}
	release, err := db.claimManualCompaction()
	if err != nil {
		return err
	}
	defer release()

	db.mu.Lock()
	cur := db.versions.Current()
	db.mu.Unlock()
	o := db.compactionOptions()
	// At least the level level 0 compacts into (level 1, or the base level
	// under DynamicLevelBytes).
	maxLevel := compaction.ShapeOf(cur, o).L0Output
	for l := 1; l < manifest.NumLevels; l++ {
		if len(cur.Overlaps(l, start, end)) > 0 {
			maxLevel = max(maxLevel, l)
		}
	}
	for level := 0; level <= maxLevel; level++ {
		db.mu.Lock()
		v := db.versions.Current()
		v.Ref()
		db.mu.Unlock()
		// (Under DynamicLevelBytes the deepest level is never over its
		// target, which is its size: the run stays there.)
		if level == maxLevel && start == nil && end == nil && level < manifest.NumLevels-1 &&
			compaction.Scores(v, o)[level] >= 1 {
			// Everything now sits in one level that is over its size
			// target: background compaction would start splitting the run
			// again at once. Push it down to a level that holds it.
			maxLevel++
		}
		m := &compaction.Manual[*manifest.FileMetadata]{Level: level, Start: start, End: end}
		if level == maxLevel {
			// The last level of the range stays where it is: rewrite
			// what current Options would write otherwise.
			m.Stale = func(f *manifest.FileMetadata) bool {
				return db.filterIsStale(v, level, f) || db.tableCompression(f) != db.opts.compressionAt(level)
			}
		}
		err := db.runManualCompactions(db.chooseManual(v, m), v)
		v.Unref()
		if err != nil {
			return err
		}
	}
	return nil
}

// chooseManual asks the picker for the compactions that carry out m on v.
func (db *DB) chooseManual(v *manifest.Version, m *compaction.Manual[*manifest.FileMetadata]) []*tableCompaction {
	return compaction.Choose(v, nil, db.compactionOptions(), compaction.Triggers[*manifest.FileMetadata]{Manual: m}).All()
}

// claimManualCompaction waits for the compaction slot and takes it for a
// manual compaction (Compact, RebuildFilters); release gives it back and
// collects the files it made obsolete. Close waits for background work
// through bgWG; a manual compaction counts as such, so Close cannot
// release the directory under it. The Add happens under db.mu with
// closing unset, so it precedes Close's Wait (Close sets closing, then
// takes db.mu).
func (db *DB) claimManualCompaction() (release func(), err error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.mu.manualWaiting++
	for db.mu.compacting && !db.closing.Load() {
		db.mu.bgCond.Wait()
	}
	db.mu.manualWaiting--
	if db.closing.Load() {
		return nil, ErrClosed
	}
	if err := db.mu.bgErr; err != nil {
		return nil, err
	}
	db.mu.compacting = true
	db.bgWG.Add(1)
	return func() {
		db.mu.Lock()
		db.mu.compacting = false
		db.mu.bgCond.Broadcast()
		db.mu.Unlock()
		db.deleteObsoleteFiles(false)
		db.bgWG.Done()
	}, nil
}

// runManualCompactions runs cs in order on v for Compact or RebuildFilters,
// stopping at the first error; a compaction Close aborted is ErrClosed.
func (db *DB) runManualCompactions(cs []*tableCompaction, v *manifest.Version) error {
	for _, c := range cs {
		if db.closing.Load() {
			return ErrClosed
		}
		err := db.runCompaction(c, v, compactionCause{manual: true})
		if errors.Is(err, errCompactionAborted) {
			return ErrClosed
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tableCompression returns the compression table f was written with (its
// properties say), or -1 when it cannot be read.
func (db *DB) tableCompression(f *manifest.FileMetadata) Compression {
	r, release, err := findTable(db.tableCache, f)
	if err != nil {
		return -1
	}
	defer release()
	return r.Properties().Compression
}

// runCompaction carries out c, picked from version v (referenced by the
// caller): a trivial move when c allows one, else a merge of its inputs into
// new tables of c.OutputLevel; then it installs the result.
func (db *DB) runCompaction(c *tableCompaction, v *manifest.Version, cause compactionCause) (err error) {
	manual := cause.manual
	if invariantChecks {
		if err := checkCompactionLevels(c, v); err != nil {
			panic(fmt.Sprintf("bloomkv: invariant violated by a compaction: %v", err))
		}
	}
	trivial := !manual && c.IsTrivialMove(db.compactionOptions()) && !db.filterIsStale(v, c.OutputLevel, c.Inputs[0][0]) &&
		db.tableCompression(c.Inputs[0][0]) == db.opts.compressionAt(c.OutputLevel)
	info := compactionInfo(c, manual, trivial)
	info.Idle, info.ReadTriggered = cause.idle, cause.read
	info.JobID = db.events.nextJobID()
	db.events.compactionBegin(info)
	start := time.Now()
	defer func() {
		info.Duration, info.Err = time.Since(start), err
		db.events.compactionEnd(info)
	}()
	if trivial {
		if err := db.installCompaction(c, trivialMoveEdit(c), 0, 0, nil, nil); err != nil {
			return err
		}
		info.Outputs = []TableInfo{tableInfo(c.Inputs[0][0], c.OutputLevel)}
		return nil
	}
	out, bytesIn, err := db.executeCompaction(c, v)
	defer out.cleanup()
	if err != nil {
		return err
	}
	if db.closing.Load() {
		return errCompactionAborted
	}
	edit, bytesOut := compactionEdit(c, out.metas)
	if err := db.installCompaction(c, edit, bytesIn, bytesOut, out.tfAdded, out.tfRemoved); err != nil {
		return err
	}
	out.installed = true
	info.BytesIn, info.BytesOut = bytesIn, bytesOut
	for _, m := range out.metas {
		info.Outputs = append(info.Outputs, tableInfo(m, c.OutputLevel))
	}
	return nil
}

// compactionCause says why a compaction runs: DB.Compact (manual), writes
// having paused (idle), reads having paid for a table (read), or none of
// those (a level over its target).
type compactionCause struct{ manual, idle, read bool }

// compactionInfo describes c for CompactionBegin.
func compactionInfo(c *tableCompaction, manual, trivial bool) CompactionInfo {
	info := CompactionInfo{Manual: manual, TrivialMove: trivial, FromLevel: c.Level, ToLevel: c.OutputLevel}
	for i, files := range c.Inputs {
		level := c.Level
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			info.Inputs = append(info.Inputs, tableInfo(f, level))
		}
	}
	return info
}

// trivialMoveEdit moves c's single input table down a level unchanged.
func trivialMoveEdit(c *tableCompaction) *manifest.VersionEdit {
	f := c.Inputs[0][0]
	return &manifest.VersionEdit{
		DeletedFiles:    []manifest.DeletedFileEntry{{Level: c.Level, FileNum: f.FileNum}},
		NewFiles:        []manifest.NewFileEntry{{Level: c.OutputLevel, Meta: f}},
		CompactPointers: []manifest.CompactPointer{{Level: c.Level, Key: append([]byte(nil), base.UserKey(f.Largest)...)}},
	}
}

// installCompaction records edit and counts the compaction. tfAdded and
// tfRemoved are the keys of its outputs and inputs for the tree filter
// (treefilter_update.go), staged with the install.
func (db *DB) installCompaction(c *tableCompaction, edit *manifest.VersionEdit, bytesIn, bytesOut uint64, tfAdded, tfRemoved map[uint64]*tfKeys) error {
	db.manifestMu.Lock()
	err := db.logAndApply(edit, causeCompaction)
	if err == nil && (tfAdded != nil || tfRemoved != nil) {
		db.stageTreeFilterKeys(tfAdded, tfRemoved)
	}
	db.manifestMu.Unlock()
	if err != nil {
		return err
	}
	db.counters.compactions.Add(1)
	db.counters.levelCompactions[c.OutputLevel].Add(1)
	db.counters.levelCompIn[c.OutputLevel].Add(bytesIn)
	db.counters.levelCompOut[c.OutputLevel].Add(bytesOut)
	return nil
}

// RebuildFilters rewrites, each in its own level, every table of levels 1
// and deeper whose filter is not what the current Options would write
// (variant, bits per key or the per-level policy's choice, FilterKey; the
// range filter's budget, Options.RangeFilterBitsPerKey):
// the levels keep exactly the keys they hold, so filter settings can be
// compared on the very same tree (kvbench -rebuild_filters; issue 28):
// each table is rewritten alone, so the tables keep their bounds too.
// Unlike Compact it merges nothing across levels and flushes nothing.
// Level-0 tables keep their filters (a settled tree has none). Close
// waits for it, as for Compact.
func (db *DB) RebuildFilters() error {
	if db.closed.Load() {
		return ErrClosed
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	release, err := db.claimManualCompaction()
	if err != nil {
		return err
	}
	defer release()

	// Shallow levels first: the per-level policy then sees each deeper
	// level as it stands when its turn comes (each level rewritten spends
	// its share of the budget on the current shape).
	for level := 1; level < manifest.NumLevels; level++ {
		db.mu.Lock()
		v := db.versions.Current()
		v.Ref()
		db.mu.Unlock()
		// One compaction per table (Alone), not per run of stale tables
		// (as Compact's): a table rewritten alone keeps its bounds, so
		// the key ranges an absent Get falls in, and the tables it
		// probes, stay as they were. (A table larger than its level's
		// target size now is split, at a point between two of its keys.)
		err := db.runManualCompactions(db.chooseManual(v, &compaction.Manual[*manifest.FileMetadata]{
			Level: level, Alone: true,
			Stale: func(f *manifest.FileMetadata) bool { return db.filterIsStale(v, level, f) },
		}), v)
		v.Unref()
		if err != nil {
			return err
		}
	}
	return nil
}
