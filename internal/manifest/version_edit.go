package manifest

import (
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// maxDBIDLen bounds a database identity (NewDBID makes 32 hex digits).
const maxDBIDLen = 64

// NewFileEntry adds a table to a level.
type NewFileEntry struct {
	Level int
	Meta  *FileMetadata
}

// DeletedFileEntry removes a table from a level.
type DeletedFileEntry struct {
	Level   int
	FileNum uint64
}

// CompactPointer records where round-robin compaction of a level stopped.
// Key is opaque to this package (the compaction code chooses it).
type CompactPointer struct {
	Level int
	Key   []byte
}

// VersionEdit is one change to the set of live files, as stored in the
// MANIFEST. Applying it deletes DeletedFiles, then adds NewFiles, so a file
// may move between levels in one edit.
type VersionEdit struct {
	HasLogNum bool
	LogNum    uint64 // logs with number < LogNum are obsolete

	HasNextFileNum bool
	NextFileNum    uint64

	HasLastSeq bool
	LastSeq    uint64 // the largest sequence number assigned so far

	// FlushedSeq: every write with a sequence up to FlushedSeq is in tables;
	// the live logs (LogNum and later) continue from FlushedSeq+1 without a
	// gap. Recovery checks that they do.
	HasFlushedSeq bool
	FlushedSeq    uint64

	// SyncedSeq: every write with a sequence up to SyncedSeq was synced to a
	// log or is in tables, so recovery must find all of them; logs that end
	// earlier were truncated or deleted.
	HasSyncedSeq bool
	SyncedSeq    uint64

	// DBID is the database's identity, chosen at creation and written into
	// every table; only snapshot edits carry it.
	DBID []byte

	// ForeignFiles names files in the directory that the engine did not
	// write (found at open with numbers it never handed out): never deleted,
	// their numbers never used. Only snapshot edits carry them.
	ForeignFiles []string

	CompactPointers []CompactPointer
	DeletedFiles    []DeletedFileEntry
	NewFiles        []NewFileEntry
}

// Field tags of the encoding (see doc.go). Wire constants: never change or
// reuse one; a new field gets a new tag.
const (
	tagLogNum         = 1
	tagNextFileNum    = 2
	tagLastSeq        = 3
	tagCompactPointer = 4
	tagDeletedFile    = 5
	tagNewFile        = 6
	tagFlushedSeq     = 7
	tagSyncedSeq      = 8
	tagDBID           = 9
	tagForeignFile    = 10
)

// Encode returns the edit's encoding (see doc.go). An edit that Validate
// rejects encodes to bytes that Decode rejects.
func (e *VersionEdit) Encode() []byte {
	var b []byte
	if e.HasLogNum {
		b = binary.AppendUvarint(b, tagLogNum)
		b = binary.AppendUvarint(b, e.LogNum)
	}
	if e.HasNextFileNum {
		b = binary.AppendUvarint(b, tagNextFileNum)
		b = binary.AppendUvarint(b, e.NextFileNum)
	}
	if e.HasLastSeq {
		b = binary.AppendUvarint(b, tagLastSeq)
		b = binary.AppendUvarint(b, e.LastSeq)
	}
	if e.HasFlushedSeq {
		b = binary.AppendUvarint(b, tagFlushedSeq)
		b = binary.AppendUvarint(b, e.FlushedSeq)
	}
	if e.HasSyncedSeq {
		b = binary.AppendUvarint(b, tagSyncedSeq)
		b = binary.AppendUvarint(b, e.SyncedSeq)
	}
	if e.DBID != nil {
		b = binary.AppendUvarint(b, tagDBID)
		b = appendBytes(b, e.DBID)
	}
	for _, name := range e.ForeignFiles {
		b = binary.AppendUvarint(b, tagForeignFile)
		b = appendBytes(b, []byte(name))
	}
	for _, cp := range e.CompactPointers {
		b = binary.AppendUvarint(b, tagCompactPointer)
		b = binary.AppendUvarint(b, uint64(cp.Level))
		b = appendBytes(b, cp.Key)
	}
	for _, d := range e.DeletedFiles {
		b = binary.AppendUvarint(b, tagDeletedFile)
		b = binary.AppendUvarint(b, uint64(d.Level))
		b = binary.AppendUvarint(b, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		m := nf.Meta
		if m == nil {
			m = &FileMetadata{} // empty keys: Decode rejects it
		}
		b = binary.AppendUvarint(b, tagNewFile)
		b = binary.AppendUvarint(b, uint64(nf.Level))
		b = binary.AppendUvarint(b, m.FileNum)
		b = binary.AppendUvarint(b, m.Size)
		b = appendBytes(b, m.Smallest)
		b = appendBytes(b, m.Largest)
		b = binary.AppendUvarint(b, m.SmallestSeq)
		b = binary.AppendUvarint(b, m.LargestSeq)
	}
	return b
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// Validate checks that the edit is one Decode would accept: levels in
// range, new files with metadata that passes the per-file checks. Writers
// call it before logging an edit, so a bug is an error now rather than
// corruption at the next open.
func (e *VersionEdit) Validate() error {
	if err := e.validate(); err != nil {
		return fmt.Errorf("bloomkv/manifest: invalid version edit: %w", err)
	}
	return nil
}

func (e *VersionEdit) validate() error {
	if e.HasFlushedSeq && e.FlushedSeq > base.MaxSeq || e.HasSyncedSeq && e.SyncedSeq > base.MaxSeq {
		return fmt.Errorf("sequence out of range (flushed %d, synced %d)", e.FlushedSeq, e.SyncedSeq)
	}
	if len(e.DBID) > maxDBIDLen {
		return fmt.Errorf("database identity of %d bytes (at most %d)", len(e.DBID), maxDBIDLen)
	}
	for _, name := range e.ForeignFiles {
		if err := checkForeignName(name); err != nil {
			return err
		}
	}
	for _, cp := range e.CompactPointers {
		if err := checkLevel(cp.Level); err != nil {
			return fmt.Errorf("compact pointer: %w", err)
		}
	}
	for _, d := range e.DeletedFiles {
		if err := checkLevel(d.Level); err != nil {
			return fmt.Errorf("deleted file %06d: %w", d.FileNum, err)
		}
	}
	for _, nf := range e.NewFiles {
		if nf.Meta == nil {
			return fmt.Errorf("new file at level %d has no metadata", nf.Level)
		}
		if err := checkLevel(nf.Level); err != nil {
			return fmt.Errorf("new file %06d: %w", nf.Meta.FileNum, err)
		}
		if err := nf.Meta.validate(); err != nil {
			return err
		}
	}
	return nil
}

func checkLevel(level int) error {
	if level < 0 || level >= NumLevels {
		return fmt.Errorf("level %d out of range [0, %d)", level, NumLevels)
	}
	return nil
}

// checkForeignName checks a foreign file name: a base name the engine's
// file-name parser recognizes (other names are never touched anyway).
func checkForeignName(name string) error {
	if _, _, ok := base.ParseFilename(name); !ok || len(name) > 255 {
		return fmt.Errorf("foreign file %q is not a database file name", name)
	}
	return nil
}
