package manifest

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// State is what replaying a manifest yields: the live version and
// the counters the database resumes from.
type State struct {
	Version     *Version
	LogNum      uint64 // logs with number < LogNum are obsolete
	NextFileNum uint64
	LastSeq     uint64
	// FlushedSeq and SyncedSeq: see VersionEdit. Zero in manifests written
	// before they existed, which recovery then cannot check as closely.
	FlushedSeq, SyncedSeq uint64
	// HasFlushedSeq says FlushedSeq was recorded (a new database records 0).
	HasFlushedSeq bool
	// DBID is the database identity (nil in manifests that predate it).
	DBID []byte
	// ForeignFiles: see VersionEdit. Never modified in place.
	ForeignFiles []string
	// CompactPointers maps a level to its round-robin compaction position.
	// A State never modifies a map it has handed out: apply copies it.
	CompactPointers map[int][]byte
}

// checkMonotonic rejects an edit that would move a counter of s backwards:
// the log number and the flushed and synced sequences only ever grow (the
// next file number and last sequence are raised, never lowered, by apply).
func (s *State) checkMonotonic(e *VersionEdit) error {
	switch {
	case e.HasLogNum && e.LogNum < s.LogNum:
		return fmt.Errorf("log number goes back from %d to %d", s.LogNum, e.LogNum)
	case e.HasFlushedSeq && s.HasFlushedSeq && e.FlushedSeq < s.FlushedSeq:
		return fmt.Errorf("flushed sequence goes back from %d to %d", s.FlushedSeq, e.FlushedSeq)
	case e.HasSyncedSeq && e.SyncedSeq < s.SyncedSeq:
		return fmt.Errorf("synced sequence goes back from %d to %d", s.SyncedSeq, e.SyncedSeq)
	}
	return nil
}

// apply records the effect of e (already applied to the version, giving
// v) on the counters of s. It is the one place that says what each field
// of an edit means for the state, for replay and for new edits alike.
func (s *State) apply(e *VersionEdit, v *Version) {
	s.Version = v
	if e.HasLogNum {
		s.LogNum = e.LogNum
	}
	if e.HasNextFileNum {
		s.NextFileNum = max(s.NextFileNum, e.NextFileNum)
	}
	if e.HasLastSeq {
		s.LastSeq = max(s.LastSeq, e.LastSeq)
	}
	if e.HasFlushedSeq {
		s.FlushedSeq, s.HasFlushedSeq = e.FlushedSeq, true
	}
	if e.HasSyncedSeq {
		s.SyncedSeq = e.SyncedSeq
	}
	if e.DBID != nil {
		s.DBID = e.DBID
	}
	if e.ForeignFiles != nil {
		s.ForeignFiles = e.ForeignFiles
	}
	if len(e.CompactPointers) > 0 {
		s.CompactPointers = maps.Clone(s.CompactPointers)
		if s.CompactPointers == nil {
			s.CompactPointers = make(map[int][]byte)
		}
		for _, cp := range e.CompactPointers {
			s.CompactPointers[cp.Level] = cp.Key
		}
	}
	for _, nf := range e.NewFiles {
		s.NextFileNum = max(s.NextFileNum, nf.Meta.FileNum+1)
		s.LastSeq = max(s.LastSeq, nf.Meta.LargestSeq)
	}
	for _, d := range e.DeletedFiles {
		s.NextFileNum = max(s.NextFileNum, d.FileNum+1)
	}
	// The log LogNum names is live, so its number is taken too.
	s.NextFileNum = max(s.NextFileNum, s.LogNum+1)
	s.SyncedSeq = max(s.SyncedSeq, s.FlushedSeq)
}

// clone returns a copy of s that shares the (immutable) version, identity
// and compact-pointer map.
func (s *State) clone() *State {
	c := *s
	return &c
}

// ReadManifest replays the MANIFEST at path. Damage is an error wrapping
// base.ErrCorruption naming the file and offset; a torn tail at the very end
// is dropped as the WAL reader does. The first edit must be a snapshot (it
// sets LogNum, NextFileNum and LastSeq). NextFileNum is raised past every
// file number the manifest mentions, and LastSeq to at least every table's
// LargestSeq, so that no number is handed out twice.
func ReadManifest(fs vfs.FS, path string) (*State, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/manifest: open %s: %w", path, err)
	}
	defer f.Close()
	return replay(f, path)
}

// replay applies the edits read from r; name is used in errors.
func replay(r io.Reader, name string) (*State, error) {
	wr := record.NewReader(r, name)
	s := &State{Version: &Version{}}
	b := NewBuilder(nil)
	var e VersionEdit
	edits := 0
	for {
		rec, err := wr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		off := wr.RecordOffset()
		if derr := e.decode(rec); derr != nil {
			return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: %s", name, off, derr)
		}
		if edits == 0 && !(e.HasLogNum && e.HasNextFileNum && e.HasLastSeq) {
			return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: first edit is not a snapshot (it lacks the log number, next file number or last sequence)", name, off)
		}
		if err := s.checkMonotonic(&e); err != nil {
			return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: %s", name, off, err)
		}
		if err := b.apply(&e); err != nil {
			return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: %s", name, off, err)
		}
		edits++
		s.apply(&e, nil)
	}
	if edits == 0 {
		return nil, &noEditsError{base.CorruptionErrorf("bloomkv/manifest: %s at offset 0: no version edits", name)}
	}
	v, err := b.finish()
	if err != nil {
		return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: after replaying %d edits: %s", name, wr.RecordOffset(), edits, err)
	}
	s.Version = v
	if s.CompactPointers == nil {
		s.CompactPointers = make(map[int][]byte)
	}
	return s, nil
}

// SnapshotEdit returns the edit that recreates s (for starting a new
// manifest): its counters and identity, its compact pointers by level, and
// every live file as a new file, level by level.
func SnapshotEdit(s *State) *VersionEdit {
	e := &VersionEdit{
		HasLogNum: true, LogNum: s.LogNum,
		HasNextFileNum: true, NextFileNum: s.NextFileNum,
		HasLastSeq: true, LastSeq: s.LastSeq,
		HasFlushedSeq: s.HasFlushedSeq, FlushedSeq: s.FlushedSeq,
		HasSyncedSeq: s.SyncedSeq > 0, SyncedSeq: s.SyncedSeq,
		DBID: s.DBID, ForeignFiles: s.ForeignFiles,
	}
	levels := make([]int, 0, len(s.CompactPointers))
	for l := range s.CompactPointers {
		levels = append(levels, l)
	}
	sort.Ints(levels)
	for _, l := range levels {
		e.CompactPointers = append(e.CompactPointers, CompactPointer{Level: l, Key: s.CompactPointers[l]})
	}
	if s.Version != nil {
		for l, files := range s.Version.Levels {
			for _, f := range files {
				e.NewFiles = append(e.NewFiles, NewFileEntry{Level: l, Meta: f})
			}
		}
	}
	return e
}

// noEditsError: the manifest holds no intact edit (it is empty, or its
// first record was torn).
type noEditsError struct{ error }

func (e *noEditsError) Unwrap() error { return e.error }

// HoldsNoEdits reports whether err is ReadManifest's error for a manifest
// that holds no intact edit at all: an empty file, or one whose first
// record is a torn tail -- what a crash while creating it leaves.
func HoldsNoEdits(err error) bool {
	var ne *noEditsError
	return errors.As(err, &ne)
}
