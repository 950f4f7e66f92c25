package bloomkv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// Open: options, the directory, recovery, and starting the background
// work.

// Open opens the database in dir, creating it when missing. A nil opts
// means defaults. Only one DB may hold a directory at a time: a second Open
// of the same directory, from this process or another, fails with an error
// wrapping ErrLocked.
//
// Options.ErrorIfExists refuses a directory that holds a database (the
// error wraps fs.ErrExist), Options.ErrorIfNotExists one that does not
// (fs.ErrNotExist; nothing is created). Options.ReadOnly opens without
// writing anything (see its doc).
//
// Recovery: Open reads CURRENT and replays the manifest it names, checks
// the write-ahead logs not yet flushed (see WALRecoveryMode for what damage
// it accepts), records their writes in level-0 tables, starts a new log, and
// deletes files no longer needed -- only files it wrote itself.
func Open(dir string, opts *Options) (*DB, error) {
	began := time.Now()
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, invalidf("Open: empty directory name")
	}
	fs := o.FS
	if err := checkExistence(fs, dir, &o); err != nil {
		return nil, err
	}
	lock, err := lockDir(fs, dir, o.ReadOnly)
	if err != nil {
		return nil, err
	}
	db := &DB{dirname: dir, opts: o, fs: fs, dirLock: lock, events: newEvents(o.EventListener, o.Logger)}
	db.filterPolicy = newFilterPolicy(db, &db.opts)
	db.mu.bgCond.L = &db.mu.Mutex
	db.mu.pendingOutputs = map[uint64]struct{}{}
	if o.BlockCacheSize > 0 {
		db.blockCache = sstable.NewBlockCache(o.BlockCacheSize)
	}
	if err := db.recover(); err != nil {
		if db.versions != nil {
			db.manifestMu.Lock()
			_ = db.versions.Close()
			db.manifestMu.Unlock()
		}
		if db.tableCache != nil {
			_ = db.tableCache.Close()
		}
		_ = lock.Close()
		db.events.stop()
		return nil, err
	}
	if o.ReadOnly {
		db.logOpen(began)
		return db, nil // no background work: nothing may change
	}
	db.logOpen(began)
	db.deleteObsoleteFiles(true)
	db.bgWG.Add(2)
	go db.flushLoop()
	go db.compactionLoop()
	db.mu.Lock()
	db.mu.bgCond.Broadcast()
	db.mu.Unlock()
	return db, nil
}

// recover loads the manifest, checks the logs, makes the version set the
// state resumes from, and replays the logs: into level-0 tables and a new
// log for a writable open, into a memtable in memory for a read-only one
// (finishReadOnlyRecovery), which shares everything up to that last step.
// It runs before any other goroutine can see db, but takes the locks that
// the methods it shares with running databases expect.
//
// Nothing is written until every log has been checked, so a database that
// Open refuses is left exactly as it was found.
func (db *DB) recover() error {
	names, err := db.fs.List(db.dirname)
	if err != nil {
		return fmt.Errorf("bloomkv: list %s: %w", db.dirname, err)
	}
	state, manifestName, err := db.loadManifestState(names)
	if err != nil {
		return err
	}
	if err := db.checkManifestFiles(state, manifestName, names); err != nil {
		return err
	}

	// Every number the engine ever handed out is below the durable
	// state.NextFileNum (it reserves numbers in the manifest before use), so
	// a file at or above it was not written by the engine: it is foreign,
	// and stays untouched. A manifest without a database identity predates
	// reservations: its logs past NextFileNum may be live, and are replayed.
	reserving := state.DBID != nil
	foreign := map[string]struct{}{}
	present := map[string]struct{}{}
	for _, n := range names {
		present[n] = struct{}{}
	}
	for _, n := range state.ForeignFiles {
		if _, ok := present[n]; ok {
			foreign[n] = struct{}{}
		}
	}
	var logs []uint64
	maxNum := uint64(0)
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok || t == base.FileTypeCurrent || t == base.FileTypeLock {
			continue
		}
		maxNum = max(maxNum, num)
		beyond := manifestName != "" && num >= state.NextFileNum
		_, listed := foreign[name]
		if t == base.FileTypeLog && num >= state.LogNum && !listed && (!beyond || !reserving) {
			logs = append(logs, num)
		} else if beyond {
			foreign[name] = struct{}{}
		}
	}
	slices.Sort(logs)

	plan, err := db.checkLogs(state, logs)
	if err != nil {
		return err
	}

	// The state recovery resumes from. A read-only open takes the manifest's
	// as it is. A writable one records its own first: the state as found,
	// with the identity, the foreign files and fresh numbers reserved past
	// everything present, so that what recovery writes next is
	// recognizably the engine's own.
	resume := state
	if !db.opts.ReadOnly {
		opening := *state
		opening.ForeignFiles = nil
		for name := range foreign {
			opening.ForeignFiles = append(opening.ForeignFiles, name)
		}
		slices.Sort(opening.ForeignFiles)
		if opening.DBID == nil {
			opening.DBID = manifest.NewDBID()
		}
		resume = &opening
	}
	// A read-only open of an old manifest has no identity: tables' identity
	// is then not checked.
	db.dbID = resume.DBID
	db.tableCache = db.newTableCache()
	db.versions = manifest.NewVersionSet(db.fs, db.dirname, resume, manifest.Options{
		MaxManifestSize: db.opts.MaxManifestFileSize,
		Mu:              &db.mu.Mutex,
		OnRelease:       db.noteObsolete,
		FileNumReserve:  fileNumReserve,
	})
	db.mu.Lock()
	db.versions.NoteFileNum(1) // numbers start at 2
	if manifestName == "" {
		// A new database: numbers past any leftover of an interrupted
		// creation (loadManifestState vouched for them).
		db.versions.NoteFileNum(maxNum)
	}
	db.versions.NoteSeq(plan.LastSeq) // the logs' writes
	db.mu.Unlock()
	db.initTreeFilter(db.versions.Current()) // treefilter.go
	if db.opts.ReadOnly {
		return db.finishReadOnlyRecovery(plan)
	}

	// From here on the directory changes: first the opening snapshot.
	db.manifestMu.Lock()
	db.hookBeforeEdit(causeRecovery)
	err = db.versions.WriteSnapshot(nil)
	db.manifestMu.Unlock()
	if err != nil {
		return fmt.Errorf("bloomkv: recover %s: %w", db.dirname, err)
	}

	edit := &manifest.VersionEdit{}
	if err := db.replayLogs(plan, edit); err != nil {
		return err
	}
	logNum, err := db.allocFileNum(false, causeRecovery)
	if err != nil {
		return err
	}
	logName := db.path(base.FileTypeLog, logNum)
	logFile, err := db.fs.Create(logName)
	if err != nil {
		return fmt.Errorf("bloomkv: create log %s: %w", logName, err)
	}
	logWriter := wal.NewWriter(logFile, db.walWriterOptions()) // a mapped log reserves its space now
	db.events.walCreated(WALCreateInfo{Path: logName, FileNum: logNum})
	// The new log's directory entry is made durable by logAndApply before
	// the manifest names it, and before any write is acknowledged into it.
	db.mu.Lock()
	last := db.versions.LastSeq()
	edit.HasLogNum, edit.LogNum = true, logNum
	edit.HasFlushedSeq, edit.FlushedSeq = true, last
	db.versions.MarkSynced(last) // everything recovered is in tables now
	db.mu.mem = db.newMemTableLocked(logNum)
	db.updateReadStateLocked()
	db.mu.Unlock()
	db.manifestMu.Lock()
	err = db.logAndApply(edit, causeRecovery)
	db.manifestMu.Unlock()
	if err != nil {
		_ = logWriter.Close()
		return err
	}
	db.mu.Lock()
	db.mu.log = logWriter
	db.versions.PublishSeq(last)
	db.mu.Unlock()
	db.moveDroppedLogs(plan)
	return nil
}

// newTableCache makes the table cache; db.dbID must be set.
func (db *DB) newTableCache() *sstable.TableCache {
	return sstable.NewTableCache(db.fs, db.dirname, db.opts.MaxOpenFiles, sstable.ReaderOptions{
		Cache:         db.blockCache,
		FilterKey:     db.opts.FilterKey,
		FilterKeyName: db.opts.FilterKeyName,
		DBID:          db.dbID,
		CacheFilters:  db.opts.CacheFilterBlocks,
		Mmap:          !db.opts.DisableMmap,
	})
}

// loadManifestState replays the manifest CURRENT names and returns its
// state and name ("" for a new database).
func (db *DB) loadManifestState(names []string) (*manifest.State, string, error) {
	name, err := manifest.ReadCurrent(db.fs, db.dirname)
	if errors.Is(err, os.ErrNotExist) {
		if db.opts.ErrorIfNotExists || db.opts.ReadOnly {
			return nil, "", errNoDatabase(db.dirname, &db.opts)
		}
		if err := db.checkNewDirectory(names); err != nil {
			return nil, "", err
		}
		return &manifest.State{Version: &manifest.Version{}, NextFileNum: 2, HasFlushedSeq: true}, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if db.opts.ErrorIfExists {
		return nil, "", errDatabaseExists(db.dirname)
	}
	state, err := manifest.ReadManifest(db.fs, db.fs.PathJoin(db.dirname, name))
	if errors.Is(err, os.ErrNotExist) {
		// CURRENT has no checksum; naming a manifest that is not there is
		// how damage to it usually shows.
		return nil, "", base.CorruptionErrorf("bloomkv: %s: CURRENT names %s, which does not exist", db.dirname, name)
	}
	return state, name, err
}

// checkNewDirectory decides whether a directory without CURRENT may become a
// new database. CURRENT is only ever replaced atomically once it exists, so
// its absence means either a new directory or one the engine does not own
// (or whose CURRENT was lost). Open then refuses anything that holds data:
// a table, a non-empty log, a manifest that names tables. What it accepts is
// what a first Open that died before writing CURRENT leaves behind -- empty
// logs, manifests of an empty database (or with no intact edit yet) and the
// temporary file naming one of them -- none of which holds a write.
func (db *DB) checkNewDirectory(names []string) error {
	refuse := func(name, why string) error {
		return base.CorruptionErrorf("bloomkv: %s has no CURRENT file but holds %s (%s): this is not a new database; "+
			"if it is a bloomkv database whose CURRENT was lost, run `kvtool repair %s`", db.dirname, name, why, db.dirname)
	}
	for _, n := range names {
		t, num, ok := base.ParseFilename(n)
		if !ok {
			continue // not a database file name: never touched
		}
		path := db.fs.PathJoin(db.dirname, n)
		switch t {
		case base.FileTypeTable:
			return refuse(n, "a table")
		case base.FileTypeLog:
			fi, err := db.fs.Stat(path)
			if err != nil {
				return fmt.Errorf("bloomkv: stat %s: %w", path, err)
			}
			if fi.Size() > 0 {
				return refuse(n, fmt.Sprintf("a log of %d bytes", fi.Size()))
			}
		case base.FileTypeManifest:
			s, err := manifest.ReadManifest(db.fs, path)
			if manifest.HoldsNoEdits(err) {
				continue // a creation that died before its first edit
			}
			if err != nil {
				return refuse(n, "a manifest that does not replay")
			}
			for _, files := range s.Version.Levels {
				if len(files) > 0 {
					return refuse(n, "a manifest that names tables")
				}
			}
		case base.FileTypeTemp:
			// SetCurrent's temporary file: it must name its own manifest.
			// A crash while writing it may have cut it short.
			content, err := readSmallFile(db.fs, path, 64)
			if err != nil || !strings.HasPrefix(base.MakeFilename(base.FileTypeManifest, num)+"\n", string(content)) {
				return refuse(n, "a temporary file the engine did not write")
			}
		}
	}
	return nil
}

// readSmallFile returns up to limit bytes of the named file.
func readSmallFile(fs vfs.FS, name string, limit int64) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// checkManifestFiles refuses to open a database whose manifest relies on
// files that are gone: a table of the version, or the log holding the
// oldest writes not yet in a table (state.LogNum). Neither is ever deleted
// while a durable manifest needs it, so a missing one means acknowledged
// data is lost -- most often because damage to the manifest's last block
// was taken for a torn tail and dropped the edits that made those deletions
// safe. Opening anyway would silently serve a database missing data.
func (db *DB) checkManifestFiles(state *manifest.State, manifestName string, names []string) error {
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
