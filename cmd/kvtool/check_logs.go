package main

import (
	"errors"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
)

// logResult is what check learned about one write-ahead log.
type logResult struct {
	File string `json:"file"`
	// Live is false for a log older than the manifest's log number: its
	// writes are in tables already, and the next Open deletes it.
	Live     bool   `json:"live"`
	Bytes    int64  `json:"bytes"`
	Records  int    `json:"records"`
	Ops      uint64 `json:"ops"`
	Deletes  uint64 `json:"deletes"`
	FirstSeq uint64 `json:"first_seq,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty"`
	// TornTailOffset is where a dropped torn tail began, when there was one.
	TornTailOffset *int64 `json:"torn_tail_offset,omitempty"`
	Status         string `json:"status"` // "ok", "torn tail" or "corrupt"
	Error          string `json:"error,omitempty"`
}

// checkLog reads every record of a log and decodes it as a write batch.
// Damage in a live log is an error; in an obsolete log, whose contents are
// in tables already, a warning. opens says the manifest replayed, so the
// next Open gets as far as the logs (and drops a torn tail).
func checkLog(fs vfs.FS, dir string, f dirFile, live, opens bool, out *findings) logResult {
	res := logResult{File: f.name, Live: live, Bytes: f.size, Status: "ok"}
	sev := sevError
	if !live {
		sev = sevWarning
		out.notef(f.name, "obsolete log (older than the manifest's log number): its writes are in tables; the next Open deletes it")
	}
	fail := func(err error) logResult {
		res.Status, res.Error = "corrupt", err.Error()
		out.add(sev, f.name, "%v", err)
		return res
	}
	path := fs.PathJoin(dir, f.name)
	file, err := fs.Open(path)
	if err != nil {
		return fail(err)
	}
	defer file.Close()
	r := wal.NewReader(file, path)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(err)
		}
		s, err := decodeBatch(rec, path, r.RecordOffset())
		if err != nil {
			return fail(err)
		}
		if res.Records > 0 && s.seq <= res.LastSeq {
			return fail(base.CorruptionErrorf("kvtool: %s: record at offset %d: sequence %d does not follow the previous record's last sequence %d",
				path, r.RecordOffset(), s.seq, res.LastSeq))
		}
		if res.Records == 0 {
			res.FirstSeq = s.seq
		}
		res.Records++
		res.Ops += uint64(s.count)
		res.Deletes += uint64(s.deletes)
		if s.count > 0 {
			res.LastSeq = s.seq + uint64(s.count) - 1
		} else {
			res.LastSeq = max(res.LastSeq, s.seq)
		}
	}
	if torn, off := r.TornTail(); torn {
		res.Status = "torn tail"
		res.TornTailOffset = &off
		then := "; the next Open drops them"
		if !opens {
			then = ""
		}
		out.notef(f.name, "torn tail: the %d bytes from offset %d on are a partial write (a crash artefact)%s",
			f.size-off, off, then)
	}
	return res
}
