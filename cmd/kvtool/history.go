package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// historyEdit is one version edit of a manifest and where it starts.
type historyEdit struct {
	offset int64
	edit   manifest.VersionEdit
}

// history is a manifest read record by record. Unlike
// manifest.ReadManifest, which only yields the final state, it keeps every
// edit, so kvtool can print the history and say when a file came and went.
type history struct {
	path  string
	size  int64
	edits []historyEdit
	// torn is set when a torn tail was dropped after tornOffset.
	torn       bool
	tornOffset int64
	// err is the damage that stopped the walk (nil when the whole file was
	// read); edits holds everything before it.
	err error
}

// readHistory reads every edit of the manifest at path. It stops at the
// first damaged record or edit that does not decode, recording the error.
func readHistory(fs vfs.FS, path string) *history {
	h := &history{path: path}
	f, err := fs.Open(path)
	if err != nil {
		h.err = fmt.Errorf("kvtool: open %s: %w", path, err)
		return h
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil {
		h.size = info.Size()
	}
	r := record.NewReader(f, path)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			h.err = err
			return h
		}
		e := historyEdit{offset: r.RecordOffset()}
		if err := e.edit.Decode(rec); err != nil {
			h.err = fmt.Errorf("%s at offset %d: %w", path, e.offset, err)
			return h
		}
		h.edits = append(h.edits, e)
	}
	h.torn, h.tornOffset = r.TornTail()
	return h
}

// fileEvents says, for each file number the history mentions, in which
// edits (1-based) it was added and deleted; 0 means never.
type fileEvent struct {
	level          int
	added, deleted int
}

func (h *history) fileEvents() map[uint64]fileEvent {
	ev := map[uint64]fileEvent{}
	for i, e := range h.edits {
		for _, d := range e.edit.DeletedFiles {
			x := ev[d.FileNum]
			x.deleted = i + 1
			ev[d.FileNum] = x
		}
		for _, nf := range e.edit.NewFiles {
			ev[nf.Meta.FileNum] = fileEvent{level: nf.Level, added: i + 1}
		}
	}
	return ev
}
