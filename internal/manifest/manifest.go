package manifest

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// ManifestState is what replaying a manifest yields: the live version and
// the counters the database resumes from.
type ManifestState struct {
	Version     *Version
	LogNum      uint64 // logs with number < LogNum are obsolete
	NextFileNum uint64
	LastSeq     uint64
	// CompactPointers maps a level to its round-robin compaction position.
	CompactPointers map[int][]byte
}

// ReadManifest replays the MANIFEST at path. Damage is an error wrapping
// base.ErrCorruption naming the file and offset; a torn tail at the very end
// is dropped as the WAL reader does. The first edit must be a snapshot (it
// sets LogNum, NextFileNum and LastSeq). NextFileNum is raised past every
// file number the manifest mentions, and LastSeq to at least every table's
// LargestSeq, so that no number is handed out twice.
func ReadManifest(fs vfs.FS, path string) (*ManifestState, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bloomkv/manifest: open %s: %w", path, err)
	}
	defer f.Close()
	return replay(f, path)
}

// replay applies the edits read from r; name is used in errors.
func replay(r io.Reader, name string) (*ManifestState, error) {
	wr := wal.NewReader(r, name)
	s := &ManifestState{CompactPointers: make(map[int][]byte)}
	b := NewBuilder(nil)
	var maxFileNum uint64
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
		if err := b.apply(&e); err != nil {
			return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: %s", name, off, err)
		}
		edits++
		if e.HasLogNum {
			s.LogNum = e.LogNum
		}
		if e.HasNextFileNum {
			s.NextFileNum = e.NextFileNum
		}
		if e.HasLastSeq {
			s.LastSeq = e.LastSeq
		}
		for _, cp := range e.CompactPointers {
			s.CompactPointers[cp.Level] = cp.Key
		}
		for _, nf := range e.NewFiles {
			maxFileNum = max(maxFileNum, nf.Meta.FileNum)
			s.LastSeq = max(s.LastSeq, nf.Meta.LargestSeq)
		}
		for _, d := range e.DeletedFiles {
			maxFileNum = max(maxFileNum, d.FileNum)
		}
	}
	if edits == 0 {
		return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset 0: no version edits", name)
	}
	v, err := b.finish()
	if err != nil {
		return nil, base.CorruptionErrorf("bloomkv/manifest: %s at offset %d: after replaying %d edits: %s", name, wr.RecordOffset(), edits, err)
	}
	s.Version = v
	// The log LogNum names is live, so its number is taken too.
	s.NextFileNum = max(s.NextFileNum, maxFileNum+1, s.LogNum+1)
	return s, nil
}

// SnapshotEdit returns the edit that recreates s (for starting a new
// manifest): its counters, its compact pointers by level, and every live
// file as a new file, level by level.
func SnapshotEdit(s *ManifestState) *VersionEdit {
	e := &VersionEdit{
		HasLogNum: true, LogNum: s.LogNum,
		HasNextFileNum: true, NextFileNum: s.NextFileNum,
		HasLastSeq: true, LastSeq: s.LastSeq,
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
