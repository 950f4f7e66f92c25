package bloomkv

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// Checkpoint: a consistent copy of the database in another directory,
// made of hard links (or copies) of its tables and a fresh manifest.

// Checkpoint writes a consistent copy of the database to dir, which must
// not exist or must be empty (else the error wraps fs.ErrExist). The copy
// is a database of its own, which Open (read-only or not) accepts: it holds
// every write acknowledged before Checkpoint was called, and exactly the
// writes up to some point in time between the call and its return -- never
// a write acknowledged after it returned, never half a Batch. It is durable
// when Checkpoint returns. Writes, flushes and compactions go on meanwhile.
//
// How: Checkpoint flushes the memtable (so the copy needs no log), then
// makes each table of the current version a hard link in dir -- tables
// never change, so a link costs no space until the database deletes its
// name -- or a copy where linking fails (dir on another file system), and
// writes a fresh manifest naming them. The copy keeps the database's
// identity. On a read-only database nothing is flushed: the writes that
// only its logs hold are written to a table in dir instead, range
// deletions included.
//
// Open a checkpoint with Options.ReadOnly or Options.ErrorIfNotExists.
// CURRENT is the last file Checkpoint makes durable, so a checkpoint that
// did not complete (Checkpoint failed, or the process or machine died in
// it) has none, and both refuse it, changing nothing. A plain Open would
// not: a crash right after Checkpoint created dir leaves it empty, and Open
// makes a new, empty database of an empty directory. A directory an
// incomplete Checkpoint left holds no database: remove it and checkpoint
// again (kvtool repair would make a database of whatever part of the copy
// was written).
func (db *DB) Checkpoint(dir string) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if dir == "" {
		return invalidf("Checkpoint: empty directory name")
	}
	created, err := db.checkpointDir(dir)
	if err != nil {
		return err
	}
	c := &checkpoint{db: db, dir: dir}
	if err := c.run(); err != nil {
		c.removeCreated(created)
		return fmt.Errorf("bloomkv: checkpoint %s: %w", dir, err)
	}
	return nil
}

// run flushes, pins the current version and writes the checkpoint.
func (c *checkpoint) run() error {
	db := c.db
	if !db.opts.ReadOnly {
		if err := db.Flush(); err != nil {
			return err
		}
	}

	// Pin the version and read the durable state that describes it:
	// installing a version and recording it happen together under
	// manifestMu. The checkpoint counts as background work, so Close
	// cannot release the directory (and let another holder delete tables)
	// under it.
	db.manifestMu.Lock()
	state := db.versions.State()
	db.mu.Lock()
	if db.closing.Load() {
		db.mu.Unlock()
		db.manifestMu.Unlock()
		return ErrClosed
	}
	db.bgWG.Add(1)
	v := db.versions.Current()
	v.Ref()
	mem, lastSeq := db.mu.mem, db.versions.LastSeq()
	db.mu.Unlock()
	db.manifestMu.Unlock()
	defer db.bgWG.Done()
	defer v.Unref()
	return c.write(v, state, mem, lastSeq)
}

// checkpointDir creates dir if needed, refusing one that holds anything.
// It reports whether it created dir.
func (db *DB) checkpointDir(dir string) (created bool, err error) {
	names, err := db.fs.List(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := db.fs.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("bloomkv: checkpoint: create %s: %w", dir, err)
		}
		// Make the new directory's name durable.
		if err := vfs.SyncDir(db.fs, filepath.Dir(filepath.Clean(dir))); err != nil {
			return true, fmt.Errorf("bloomkv: checkpoint: sync the parent of %s: %w", dir, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("bloomkv: checkpoint: %w", err)
	case len(names) > 0:
		return false, fmt.Errorf("bloomkv: checkpoint: %s is not empty: %w", dir, fs.ErrExist)
	}
	return false, nil
}

// checkpoint is one Checkpoint call's work.
type checkpoint struct {
	db      *DB
	dir     string
	written []string // paths created in dir, for cleanup on failure
}

// write fills c.dir with the tables of v, a table of mem's writes on a
// read-only database, and a manifest for them.
func (c *checkpoint) write(v *manifest.Version, state *manifest.State, mem *memTable, lastSeq uint64) error {
	db := c.db
	fsys := db.fs
	for _, files := range v.Levels {
		for _, f := range files {
			name := base.MakeFilename(base.FileTypeTable, f.FileNum)
			dst := fsys.PathJoin(c.dir, name)
			if _, err := vfs.LinkOrCopy(fsys, db.path(base.FileTypeTable, f.FileNum), dst); err != nil {
				return err
			}
			c.written = append(c.written, dst)
		}
	}

	// Everything in the tables is all the copy holds: no log, so the
	// sequence counters all stop at what the tables hold.
	next := state.NextFileNum
	seq := state.FlushedSeq
	cp := &manifest.State{
		Version: v,
		// LogNum 0 names no log, as for Open and kvtool check: every write
		// the copy holds is in its tables.
		LogNum:          0,
		NextFileNum:     next,
		HasFlushedSeq:   true,
		DBID:            state.DBID,
		CompactPointers: maps.Clone(state.CompactPointers),
	}
	if db.opts.ReadOnly && !mem.Empty() {
		// Recovery replayed the logs into mem; nothing may be written to
		// the database, so mem becomes a table of the copy. Its writes are
		// newer than every table's: it is the newest level-0 table.
		meta, err := c.writeMemTable(mem, next)
		if err != nil {
			return err
		}
		if meta != nil {
			b := manifest.NewBuilder(v)
			if err := b.Apply(&manifest.VersionEdit{NewFiles: []manifest.NewFileEntry{{Level: 0, Meta: meta}}}); err != nil {
				return err
			}
			if cp.Version, err = b.Finish(); err != nil {
				return err
			}
		}
		next++
		seq = lastSeq
	}
	cp.LastSeq, cp.FlushedSeq, cp.SyncedSeq = seq, seq, seq

	// The links' and copies' names are durable before CURRENT names them.
	if err := vfs.SyncDir(fsys, c.dir); err != nil {
		return err
	}
	vs := manifest.NewVersionSet(fsys, c.dir, cp, manifest.Options{MaxManifestSize: db.opts.MaxManifestFileSize})
	c.written = append(c.written,
		fsys.PathJoin(c.dir, base.MakeFilename(base.FileTypeManifest, next)),
		fsys.PathJoin(c.dir, base.MakeFilename(base.FileTypeCurrent, 0)))
	err := vs.WriteSnapshot(func() (uint64, uint64) { return next, next + 1 })
	if cerr := vs.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeMemTable writes mem's entries and range deletions to table num in
// the checkpoint, as a flush writes a memtable: the range deletions must go
// with the point entries, or the keys they delete in older tables come
// back. It returns nil metadata, and leaves no file, when mem holds neither
// (an empty table has no key range, and no manifest may name one).
func (c *checkpoint) writeMemTable(mem *memTable, num uint64) (*manifest.FileMetadata, error) {
	db := c.db
	name := db.fs.PathJoin(c.dir, base.MakeFilename(base.FileTypeTable, num))
	f, err := db.fs.Create(name)
	if err != nil {
		return nil, err
	}
	c.written = append(c.written, name)
	w := sstable.NewWriter(f, db.sstWriterOptions(num, 0, db.policyFilterBits(0, 0))) // level 0 of the checkpoint
	rd := mem.RangeDels()
	w.SetRangeDels(rd.Spans())
	n := rd.Len()
	it := mem.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		if err := w.Add(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			_ = w.Abort()
			return nil, err
		}
		n++
	}
	if err := it.Close(); err != nil {
		_ = w.Abort()
		return nil, err
	}
	meta, err := w.Finish() // syncs the file
	if err != nil {
		return nil, err
	}
	if n == 0 {
		c.written = c.written[:len(c.written)-1]
		if err := db.fs.Remove(name); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return metaFromWriter(num, meta), nil
}

// removeCreated removes what a failed checkpoint created: only its own
// files, and dir itself if it created it.
func (c *checkpoint) removeCreated(createdDir bool) {
	fsys := c.db.fs
	for _, p := range c.written {
		_ = fsys.Remove(p)
	}
	if createdDir {
		_ = fsys.Remove(c.dir) // fails, harmlessly, if anything else is there
	}
}
