package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// tableSettings are the settings repair writes its tables with, read from
// the newest intact table of the database (the one with the largest
// sequence): its compression, block size, restart interval and filter.
type tableSettings struct {
	From            string `json:"from"` // a table name, or "defaults"
	Compression     string `json:"compression"`
	BlockSize       int    `json:"block_size"`
	RestartInterval int    `json:"restart_interval"`
	BloomBitsPerKey int    `json:"bloom_bits_per_key"` // 0: no filters
	// FilterBitsPerKey is the exact setting of a fractional one (the
	// table's properties), which BloomBitsPerKey then rounds.
	FilterBitsPerKey float64 `json:"filter_bits_per_key,omitempty"`
	FilterVariant    string  `json:"filter_variant,omitempty"`
	// FilterKeyName is the extractor the old tables' filters were built
	// over. Without the extractor itself kvtool cannot rebuild such
	// filters: the new tables' filters index whole user keys.
	FilterKeyName string `json:"old_filter_key_name,omitempty"`

	opts sstable.WriterOptions
}

// chooseSettings reads the table settings from the newest table whose
// contents are kept, or uses the engine's defaults when there is none.
func (rp *repairer) chooseSettings() *tableSettings {
	var from *repairTable
	for _, t := range rp.tables {
		if t.res.Status != repairMerged && t.res.Status != repairSuperseded {
			continue
		}
		if from == nil || t.props.LargestSeq > from.props.LargestSeq ||
			t.props.LargestSeq == from.props.LargestSeq && t.f.num > from.f.num {
			from = t
		}
	}
	s := &tableSettings{From: "defaults", opts: sstable.WriterOptions{
		BlockSize: 4 << 10, Compression: sstable.SnappyCompression,
		BloomBitsPerKey: 10, FilterVariant: filter.VariantStandard,
	}}
	if from != nil {
		p := from.props
		s.From = from.f.name
		s.opts = sstable.WriterOptions{
			BlockSize:       int(min(p.BlockSize, 1<<30)),
			RestartInterval: int(min(p.RestartInterval, 1<<16)),
			Compression:     p.Compression,
			BloomBitsPerKey: int(max(0, min(p.BloomBitsPerKey, 1000))),
			FilterVariant:   filter.Variant(p.FilterVariant),
		}
		if b := p.FilterBitsPerKey; b > 0 && b <= filter.MaxBlockBitsPerKey {
			s.opts.FilterBitsPerKey = b
		}
		if !s.opts.Compression.Valid() {
			s.opts.Compression = sstable.SnappyCompression
		}
		if v := s.opts.FilterVariant; v != filter.VariantStandard && v != filter.VariantBlocked && v != filter.VariantFuse {
			s.opts.FilterVariant = filter.VariantStandard
		}
		if p.FilterKeyName != "" && s.opts.BloomBitsPerKey > 0 {
			s.FilterKeyName = p.FilterKeyName
			rp.out.warnf(from.f.name, "its filter is built over the key extractor %q, which kvtool does not have: the new tables' filters index whole user keys "+
				"(reads stay correct; a compaction under Options.FilterKey rebuilds them)", p.FilterKeyName)
		}
	}
	o := s.opts.Compression
	s.Compression = o.String()
	s.BlockSize, s.RestartInterval, s.BloomBitsPerKey = s.opts.BlockSize, s.opts.RestartInterval, s.opts.BloomBitsPerKey
	s.FilterBitsPerKey = s.opts.FilterBitsPerKey
	if s.BlockSize == 0 {
		s.BlockSize = sstable.DefaultBlockSize
	}
	if s.RestartInterval == 0 {
		s.RestartInterval = sstable.DefaultRestartInterval
	}
	if s.BloomBitsPerKey > 0 {
		s.FilterVariant = variantName(s.opts.FilterVariant)
	}
	return s
}

func variantName(v filter.Variant) string { return v.String() }

// writeRepaired merges every kept table and log record into new tables
// and creates the new (empty) log. Nothing it writes is live until the
// commit.
func (rp *repairer) writeRepaired() error {
	rep := rp.rep
	next := uint64(2)
	for _, name := range rp.listedNames() {
		_, num, _ := base.ParseFilename(name)
		next = max(next, num+1)
	}
	if rp.state != nil {
		next = max(next, rp.state.NextFileNum)
	}

	// Merging everything into fresh tables would have to apply range
	// tombstones to the entries they cover; until it does, refuse rather
	// than bring deleted keys back.
	for _, l := range rp.logs {
		if l.mem != nil && l.mem.RangeDels() != nil {
			return fmt.Errorf("kvtool: repair: log %s holds range deletions (DeleteRange), which repair does not handle yet", l.f.name)
		}
	}
	for _, t := range rp.tables {
		if t.res.Status == repairMerged && t.props != nil && t.props.NumRangeDels > 0 {
			return fmt.Errorf("kvtool: repair: table %s holds range deletions (DeleteRange), which repair does not handle yet", t.f.name)
		}
	}

	settings := rp.chooseSettings()
	rep.Settings = settings

	// Children newest first (a tie between equal internal keys goes to
	// the earlier child): the logs, newest first, then the runs.
	var iters []base.InternalIterator
	for i := len(rp.logs) - 1; i >= 0; i-- {
		l := rp.logs[i]
		if l.mem != nil {
			iters = append(iters, l.mem.NewIter())
			rp.noteSeqs(l.res.FirstSeq, l.res.LastSeq)
			rep.EntriesIn += l.res.Ops
		}
	}
	var inputs []runTable
	for _, t := range rp.tables {
		if t.res.Status != repairMerged || t.props.NumEntries == 0 {
			continue
		}
		inputs = append(inputs, runTable{name: t.f.name, num: t.f.num, size: t.f.size,
			smallest: t.props.SmallestKey, largest: t.props.LargestKey})
		rp.noteSeqs(t.props.SmallestSeq, t.props.LargestSeq)
		rep.EntriesIn += t.props.NumEntries
	}
	for _, run := range partitionRuns(inputs) {
		iters = append(iters, newRunIter(rp.fs, rp.dir, run))
	}
	merged := iterator.NewMerging(iters...)
	err := rp.writeTables(merged, settings.opts, &next)
	if cerr := merged.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}

	logNum := next
	next++
	name := base.MakeFilename(base.FileTypeLog, logNum)
	f, err := rp.create(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kvtool: sync %s: %w", rp.fs.PathJoin(rp.dir, name), err)
	}
	rep.NewLog = name
	rp.nextNum = next
	return rp.syncDir(rp.dir)
}

// noteSeqs widens the report's sequence range of merged data.
func (rp *repairer) noteSeqs(smallest, largest uint64) {
	if rp.rep.SmallestSeq == 0 || smallest < rp.rep.SmallestSeq {
		rp.rep.SmallestSeq = smallest
	}
	rp.rep.LargestSeq = max(rp.rep.LargestSeq, largest)
}

// writeTables writes the newest version of every user key in in (tombstones
// and shadowed versions dropped: there are no snapshots, and nothing lies
// below) to tables numbered from *next, cut between user keys at about
// repairTargetTableSize. Each table is synced, then read back and checked.
func (rp *repairer) writeTables(in base.InternalIterator, opts sstable.WriterOptions, next *uint64) error {
	ci := compaction.NewIter(in, nil, func([]byte) bool { return true })
	var (
		w        *sstable.Writer
		name     string
		num      uint64
		lastUser []byte
	)
	finish := func() error {
		meta, err := w.Finish()
		w = nil
		if err != nil {
			return fmt.Errorf("kvtool: write %s: %w", rp.fs.PathJoin(rp.dir, name), err)
		}
		if err := rp.checkNewTable(name, num, meta); err != nil {
			return err
		}
		rp.newMetas = append(rp.newMetas, &manifest.FileMetadata{
			FileNum: num, Size: meta.Size, Smallest: meta.Smallest, Largest: meta.Largest,
			SmallestSeq: meta.SmallestSeq, LargestSeq: meta.LargestSeq,
		})
		rp.rep.NewTables = append(rp.rep.NewTables, newTableResult{
			File: name, Size: meta.Size, Entries: meta.NumEntries,
			Smallest: fmtKey(meta.Smallest), Largest: fmtKey(meta.Largest),
			SmallestSeq: meta.SmallestSeq, LargestSeq: meta.LargestSeq,
		})
		rp.rep.KeysOut += meta.NumEntries
		return nil
	}
	for ok := ci.First(); ok; ok = ci.Next() {
		k := ci.Key()
		ukey := base.UserKey(k)
		if w != nil && w.EstimatedSize() >= repairTargetTableSize && !bytes.Equal(ukey, lastUser) {
			if err := finish(); err != nil {
				return err
			}
		}
		if w == nil {
			num = *next
			*next++
			name = base.MakeFilename(base.FileTypeTable, num)
			f, err := rp.create(name)
			if err != nil {
				return err
			}
			o := opts
			o.FileNum, o.DBID = num, rp.dbid
			w = sstable.NewWriter(f, o)
		}
		if err := w.Add(k, ci.Value()); err != nil {
			_ = w.Abort()
			return fmt.Errorf("kvtool: write %s: %w", rp.fs.PathJoin(rp.dir, name), err)
		}
		lastUser = append(lastUser[:0], ukey...)
	}
	if err := ci.Error(); err != nil {
		if w != nil {
			_ = w.Abort()
		}
		return fmt.Errorf("kvtool: merging: %w", err)
	}
	if w != nil {
		return finish()
	}
	return nil
}

// checkNewTable reads a table repair wrote back and checks it whole.
func (rp *repairer) checkNewTable(name string, num uint64, meta sstable.WriterMeta) error {
	path := rp.fs.PathJoin(rp.dir, name)
	f, err := rp.fs.Open(path)
	if err != nil {
		return fmt.Errorf("kvtool: open %s: %w", path, err)
	}
	r, err := sstable.Open(f, path, num, int64(meta.Size), sstable.ReaderOptions{})
	if err != nil {
		return fmt.Errorf("kvtool: reading back %s: %w", path, err)
	}
	defer r.Close()
	if err := r.Check(); err != nil {
		return fmt.Errorf("kvtool: reading back %s: %w", path, err)
	}
	return r.CheckIdentity(sstable.Identity{FileNum: num, DBID: rp.dbid, Smallest: meta.Smallest, Largest: meta.Largest,
		SmallestSeq: meta.SmallestSeq, LargestSeq: meta.LargestSeq})
}

// create creates a file repair writes, refusing to replace one (the
// numbers are past every file present, so none should exist).
func (rp *repairer) create(name string) (vfs.File, error) {
	path := rp.fs.PathJoin(rp.dir, name)
	if _, err := rp.fs.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("kvtool: %s already exists (or cannot be checked: %v): repair never replaces a file", path, err)
	}
	f, err := rp.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("kvtool: create %s: %w", path, err)
	}
	rp.created = append(rp.created, path)
	return f, nil
}

// commit makes the repaired database durable: it keeps a copy of CURRENT
// in lost/ (the new manifest replaces it), then writes a manifest naming
// the new tables as one sorted run in the last level, and points CURRENT
// at it.
func (rp *repairer) commit() error {
	rep := rp.rep
	lost := rp.fs.PathJoin(rp.dir, lostDirName)
	if err := rp.fs.MkdirAll(lost, 0o755); err != nil {
		rp.removeCreated()
		return fmt.Errorf("kvtool: create %s: %w", lost, err)
	}
	if err := rp.copyCurrentToLost(); err != nil {
		rp.removeCreated()
		rep.Moved = rep.Moved[:0]
		return err
	}

	edit := &manifest.VersionEdit{}
	for _, m := range rp.newMetas {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: manifest.NumLevels - 1, Meta: m})
	}
	b := manifest.NewBuilder(nil)
	if err := b.Apply(edit); err != nil {
		rp.removeCreated()
		return fmt.Errorf("kvtool: building the new version: %w", err)
	}
	v, err := b.Finish()
	if err != nil {
		rp.removeCreated()
		return fmt.Errorf("kvtool: building the new version: %w", err)
	}
	for name := range rp.foreign {
		rep.ForeignFiles = append(rep.ForeignFiles, name)
	}
	sort.Strings(rep.ForeignFiles)
	manifestNum := rp.nextNum
	rep.LastSeq = rp.maxSeq
	_, logNum, _ := base.ParseFilename(rep.NewLog)
	state := &manifest.State{
		Version:       v,
		LogNum:        logNum,
		NextFileNum:   manifestNum + 1,
		LastSeq:       rep.LastSeq,
		FlushedSeq:    rep.LastSeq,
		HasFlushedSeq: true,
		SyncedSeq:     rep.LastSeq,
		DBID:          rp.dbid,
		ForeignFiles:  append([]string(nil), rep.ForeignFiles...),
	}
	vs := manifest.NewVersionSet(rp.fs, rp.dir, state, manifest.Options{MaxManifestSize: 4 << 20})
	newName := base.MakeFilename(base.FileTypeManifest, manifestNum)
	err = vs.WriteSnapshot(func() (uint64, uint64) { return manifestNum, manifestNum + 1 })
	if cerr := vs.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// A failed write may still have pointed CURRENT at the new
		// manifest: then nothing repair wrote may be removed.
		if cur, cerr := manifest.ReadCurrent(rp.fs, rp.dir); cerr == nil && cur == newName {
			return fmt.Errorf("committing %s failed, but CURRENT names it: the repair may have taken effect; "+
				"nothing was moved to lost/; run kvtool repair again: %w", newName, err)
		}
		if _, serr := rp.fs.Stat(rp.fs.PathJoin(rp.dir, newName)); serr == nil {
			rp.created = append(rp.created, rp.fs.PathJoin(rp.dir, newName))
		}
		rp.removeCreated()
		rep.Moved = rep.Moved[:0] // the copy of CURRENT is gone again
		return fmt.Errorf("committing %s: %w", newName, err)
	}
	rp.created = nil
	rep.NewManifest = newName
	rep.Committed = true
	return nil
}

// copyCurrentToLost keeps the old CURRENT's bytes in lost/, since pointing
// CURRENT at the new manifest replaces the file.
func (rp *repairer) copyCurrentToLost() error {
	src := rp.fs.PathJoin(rp.dir, base.MakeFilename(base.FileTypeCurrent, 0))
	in, err := rp.fs.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kvtool: open %s: %w", src, err)
	}
	defer in.Close()
	to, err := rp.lostName("CURRENT")
	if err != nil {
		return err
	}
	dst := rp.fs.PathJoin(rp.dir, lostDirName, to)
	out, err := rp.fs.Create(dst)
	if err != nil {
		return fmt.Errorf("kvtool: create %s: %w", dst, err)
	}
	rp.created = append(rp.created, dst)
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rp.syncDir(rp.fs.PathJoin(rp.dir, lostDirName))
	}
	if err == nil {
		err = rp.syncDir(rp.dir)
	}
	if err != nil {
		return fmt.Errorf("kvtool: copy %s to %s: %w", src, dst, err)
	}
	rp.rep.Moved = append(rp.rep.Moved, movedFile{From: "CURRENT", To: lostDirName + "/" + to, Copied: true})
	return nil
}

// moveSuperseded moves into lost/, after the commit, every file the new
// manifest does not need and the engine wrote: the tables merged,
// superseded or damaged, every log read, the old manifests and temporary
// files. Foreign files stay where they are.
func (rp *repairer) moveSuperseded() error {
	var names []string
	for _, t := range rp.tables {
		if t.res.Status != repairForeign {
			names = append(names, t.f.name)
		}
	}
	for _, l := range rp.logs {
		if l.res.Status != logForeign {
			names = append(names, l.f.name)
		}
	}
	for _, group := range [][]dirFile{rp.listing.manifests, rp.listing.temps} {
		for _, f := range group {
			if _, foreign := rp.foreign[f.name]; !foreign {
				names = append(names, f.name)
			}
		}
	}
	failed := 0
	for _, name := range names {
		to, err := rp.lostName(name)
		if err == nil {
			err = rp.fs.Rename(rp.fs.PathJoin(rp.dir, name), rp.fs.PathJoin(rp.dir, lostDirName, to))
		}
		if err != nil {
			failed++
			rp.out.errorf(name, "could not move it to lost/: %v", err)
			continue
		}
		rp.rep.Moved = append(rp.rep.Moved, movedFile{From: name, To: lostDirName + "/" + to})
	}
	err := rp.syncDir(rp.fs.PathJoin(rp.dir, lostDirName))
	if serr := rp.syncDir(rp.dir); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("the repair is committed, but syncing the moves to lost/ failed: %w", err)
	}
	if failed > 0 {
		return fmt.Errorf("the repair is committed, but %d files could not be moved to lost/ (see findings); "+
			"move them by hand before opening the database, whose next Open would delete them", failed)
	}
	return nil
}

// lostName returns a name under lost/ that no file has yet: name itself,
// else name.1, name.2, ...
func (rp *repairer) lostName(name string) (string, error) {
	for i := 0; ; i++ {
		cand := name
		if i > 0 {
			cand = fmt.Sprintf("%s.%d", name, i)
		}
		_, err := rp.fs.Stat(rp.fs.PathJoin(rp.dir, lostDirName, cand))
		if errors.Is(err, os.ErrNotExist) {
			return cand, nil
		}
		if err != nil {
			return "", fmt.Errorf("kvtool: stat %s: %w", rp.fs.PathJoin(rp.dir, lostDirName, cand), err)
		}
	}
}

func (rp *repairer) syncDir(path string) error {
	d, err := rp.fs.OpenDir(path)
	if err != nil {
		return fmt.Errorf("kvtool: open directory %s: %w", path, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kvtool: sync directory %s: %w", path, err)
	}
	return nil
}
