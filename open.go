package bloomkv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/wal"
)

// Open opens the database in dir, creating it when missing. A nil opts
// means defaults. Only one DB may hold a directory at a time: a second Open
// of the same directory, from this process or another, fails.
//
// Recovery: Open reads CURRENT and replays the manifest it names, replays
// every write-ahead log not yet flushed into level-0 tables (dropping a torn
// tail, refusing real damage with ErrCorruption), writes a fresh manifest,
// starts a new log, and deletes files no longer needed.
func Open(dir string, opts *Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: bloomkv: empty directory name", ErrInvalidArgument)
	}
	fs := o.FS
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bloomkv: create %s: %w", dir, err)
	}
	lock, err := fs.Lock(fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return nil, fmt.Errorf("bloomkv: open %s: directory is in use: %w", dir, err)
	}
	db := &DB{dirname: dir, opts: o, fs: fs, dirLock: lock}
	db.mu.bgCond.L = &db.mu.Mutex
	db.mu.pendingOutputs = map[uint64]struct{}{}
	db.versions = &liveVersions{m: map[*version]struct{}{}, onRelease: db.noteObsolete}
	if o.BlockCacheSize > 0 {
		db.blockCache = sstable.NewBlockCache(o.BlockCacheSize)
	}
	db.tableCache = sstable.NewTableCache(fs, dir, o.MaxOpenFiles, sstable.ReaderOptions{
		Cache:         db.blockCache,
		FilterKey:     o.FilterKey,
		FilterKeyName: o.FilterKeyName,
	})
	if err := db.recover(); err != nil {
		_ = db.tableCache.Close()
		_ = lock.Close()
		return nil, err
	}
	db.deleteObsoleteFiles(true)
	db.bgWG.Add(2)
	go db.flushLoop()
	go db.compactionLoop()
	db.mu.Lock()
	db.mu.bgCond.Broadcast()
	db.mu.Unlock()
	return db, nil
}

// recover loads the manifest and logs and starts a new manifest and log.
// It runs before any other goroutine can see db.
func (db *DB) recover() error {
	state, manifestName, err := db.loadManifestState()
	if err != nil {
		return err
	}
	names, err := db.fs.List(db.dirname)
	if err != nil {
		return fmt.Errorf("bloomkv: list %s: %w", db.dirname, err)
	}
	if err := db.checkManifestFiles(state, manifestName, names); err != nil {
		return err
	}
	db.mu.nextFileNum = max(state.NextFileNum, 2)
	var logs []uint64
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		db.mu.nextFileNum = max(db.mu.nextFileNum, num+1)
		if t == base.FileTypeLog && num >= state.LogNum {
			logs = append(logs, num)
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i] < logs[j] })

	edit := &manifest.VersionEdit{}
	lastSeq := state.LastSeq
	for _, num := range logs {
		seq, err := db.replayLog(num, edit)
		if err != nil {
			return err
		}
		lastSeq = max(lastSeq, seq)
	}

	b := manifest.NewBuilder(state.Version)
	if err := b.Apply(edit); err != nil {
		return fmt.Errorf("bloomkv: recover %s: %w", db.dirname, err)
	}
	v, err := b.Finish()
	if err != nil {
		return fmt.Errorf("bloomkv: recover %s: %w", db.dirname, err)
	}

	logNum := db.allocFileNumLocked()
	logName := db.path(base.FileTypeLog, logNum)
	logFile, err := db.fs.Create(logName)
	if err != nil {
		return fmt.Errorf("bloomkv: create log %s: %w", logName, err)
	}
	db.mu.lastSeq = lastSeq
	db.visibleSeq.Store(lastSeq)
	db.mu.compactPointers = state.CompactPointers
	if db.mu.compactPointers == nil {
		db.mu.compactPointers = map[int][]byte{}
	}
	newState := &manifest.ManifestState{
		Version:         v,
		LogNum:          logNum,
		LastSeq:         lastSeq,
		CompactPointers: db.mu.compactPointers,
	}
	if err := db.writeNewManifest(newState); err != nil {
		_ = logFile.Close()
		return err
	}
	// The new log's directory entry must be durable before writes are
	// acknowledged into it; writeNewManifest synced the directory after it.
	db.mu.logFile = logFile
	db.mu.log = wal.NewWriter(logFile)
	db.mu.mem = db.newMemTableLocked(logNum)
	db.mu.current = db.versions.newVersion(v)
	db.updateReadStateLocked()
	return nil
}

// loadManifestState replays the manifest CURRENT names and returns its
// state and name ("" for a new database).
func (db *DB) loadManifestState() (*manifest.ManifestState, string, error) {
	name, err := manifest.ReadCurrent(db.fs, db.dirname)
	if errors.Is(err, os.ErrNotExist) {
		// A new database, unless its files say otherwise. CURRENT is
		// only ever replaced atomically once it exists, so a manifest
		// without it is left by a first Open that failed or crashed
		// before installing CURRENT: it names no table and no write was
		// acknowledged, so it may be ignored (and is deleted below) as
		// long as no table or log data is present.
		names, lerr := db.fs.List(db.dirname)
		if lerr != nil {
			return nil, "", fmt.Errorf("bloomkv: list %s: %w", db.dirname, lerr)
		}
		var manifestName, logWithData string
		for _, n := range names {
			t, _, ok := base.ParseFilename(n)
			switch {
			case !ok:
			case t == base.FileTypeTable:
				return nil, "", base.CorruptionErrorf("bloomkv: %s holds %s but no CURRENT file", db.dirname, n)
			case t == base.FileTypeManifest:
				manifestName = n
			case t == base.FileTypeLog:
				if fi, serr := db.fs.Stat(db.fs.PathJoin(db.dirname, n)); serr != nil || fi.Size() > 0 {
					logWithData = n
				}
			}
		}
		if manifestName != "" && logWithData != "" {
			return nil, "", base.CorruptionErrorf("bloomkv: %s holds %s and %s but no CURRENT file", db.dirname, manifestName, logWithData)
		}
		return &manifest.ManifestState{Version: &manifest.Version{}, NextFileNum: 2}, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	state, err := manifest.ReadManifest(db.fs, db.fs.PathJoin(db.dirname, name))
	if errors.Is(err, os.ErrNotExist) {
		// CURRENT has no checksum; naming a manifest that is not there is
		// how damage to it usually shows.
		return nil, "", base.CorruptionErrorf("bloomkv: %s: CURRENT names %s, which does not exist", db.dirname, name)
	}
	return state, name, err
}

// checkManifestFiles refuses to open a database whose manifest relies on
// files that are gone: a table of the version, or the log holding the
// oldest writes not yet in a table (state.LogNum). Neither is ever deleted
// while a durable manifest needs it, so a missing one means acknowledged
// data is lost -- most often because damage to the manifest's last block
// was taken for a torn tail and dropped the edits that made those deletions
// safe. Opening anyway would silently serve a database missing data.
func (db *DB) checkManifestFiles(state *manifest.ManifestState, manifestName string, names []string) error {
	if manifestName == "" {
		return nil // a new database
	}
	present := make(map[string]struct{}, len(names))
	for _, n := range names {
		present[n] = struct{}{}
	}
	for level, files := range state.Version.Levels {
		for _, f := range files {
			if _, ok := present[base.MakeFilename(base.FileTypeTable, f.FileNum)]; !ok {
				return base.CorruptionErrorf("bloomkv: %s: %s names level-%d table %s, which is missing",
					db.dirname, manifestName, level, base.MakeFilename(base.FileTypeTable, f.FileNum))
			}
		}
	}
	if state.LogNum > 0 {
		if _, ok := present[base.MakeFilename(base.FileTypeLog, state.LogNum)]; !ok {
			return base.CorruptionErrorf("bloomkv: %s: %s says log %s holds writes not yet in tables, but it is missing (the manifest lost edits, or the log was deleted)",
				db.dirname, manifestName, base.MakeFilename(base.FileTypeLog, state.LogNum))
		}
	}
	return nil
}

// replayLog applies log num to memtables, flushing them to level-0 tables
// recorded in edit as they fill. It returns the largest sequence seen.
func (db *DB) replayLog(num uint64, edit *manifest.VersionEdit) (uint64, error) {
	name := db.path(base.FileTypeLog, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return 0, fmt.Errorf("bloomkv: open log %s: %w", name, err)
	}
	defer f.Close()
	r := wal.NewReader(f, name)
	mem := memtable.New()
	var maxSeq uint64
	flush := func() error {
		if mem.Empty() {
			return nil
		}
		it := mem.NewIter()
		meta, err := db.writeTable(db.allocFileNumLocked(), it)
		_ = it.Close()
		if err != nil {
			return err
		}
		if meta != nil {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: meta})
			db.counters.flushBytes.Add(meta.Size)
		}
		mem = memtable.New()
		return nil
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		err = decodeBatch(rec, func(seq uint64, op batchOp) {
			mem.Add(seq, op.kind, op.key, op.value)
			maxSeq = max(maxSeq, seq)
		})
		if err != nil {
			return 0, fmt.Errorf("bloomkv: log %s: record at offset %d: %w", name, r.RecordOffset(), err)
		}
		if mem.ApproximateSize() >= int64(db.opts.MemtableSize) {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	return maxSeq, flush()
}
