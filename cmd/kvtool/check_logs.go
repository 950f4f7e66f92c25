package main

import (
	"errors"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// logResult is what check learned about one write-ahead log.
type logResult struct {
	File string `json:"file"`
	// Live is false for a log older than the manifest's log number: its
	// writes are in tables already, and the next Open deletes it.
	Live bool `json:"live"`
	// Strict: a live log older than the newest non-empty one, which must
	// read cleanly to its end (a torn tail in it is damage).
	Strict   bool   `json:"strict,omitempty"`
	Bytes    int64  `json:"bytes"`
	Records  int    `json:"records"`
	Ops      uint64 `json:"ops"`
	Deletes  uint64 `json:"deletes"`
	FirstSeq uint64 `json:"first_seq,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty"`
	// TornTailOffset is where a dropped torn tail began, when there was one.
	TornTailOffset *int64 `json:"torn_tail_offset,omitempty"`
	// Status is "ok", "torn tail", "corrupt" or "foreign" (listed as
	// foreign, or numbered past the manifest's next file number: never
	// read).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// seqTracker follows the sequence numbers across the live logs, in log
// order, as recovery does: every write after the manifest's FlushedSeq
// must follow the one before it, without a gap.
type seqTracker struct {
	// next is the sequence the next record must start with; 0 when the
	// manifest predates FlushedSeq and the first record sets it.
	next uint64
	// last is the last sequence reached (FlushedSeq before any record),
	// and where: lastFile at offset lastEnd.
	last     uint64
	lastFile string
	lastEnd  int64
}

// checkLogs checks every log, in number order, by the rules recovery
// applies (see bloomkv.WALRecoveryMode): logs older than the newest
// non-empty live log read strictly; the live logs' sequences continue
// from the manifest's FlushedSeq without a gap; and every write up to its
// SyncedSeq is found. Without a manifest every log counts as live.
func checkLogs(fs vfs.FS, dir string, listing *dirListing, state *manifest.ManifestState, foreign map[string]bool, rep *checkReport, out *findings) {
	var logNum uint64
	var seqs *seqTracker
	if state != nil {
		logNum = state.LogNum
		seqs = &seqTracker{last: state.FlushedSeq, lastFile: rep.Manifest.Name}
		if state.HasFlushedSeq {
			seqs.next = state.FlushedSeq + 1
		}
	}
	newest := -1 // index in listing.logs of the newest non-empty live log
	for i, f := range listing.logs {
		if f.num >= logNum && !foreign[f.name] && f.size > 0 {
			newest = i
		}
	}
	for i, f := range listing.logs {
		if foreign[f.name] {
			rep.Logs = append(rep.Logs, logResult{File: f.name, Live: false, Bytes: f.size, Status: "foreign"})
			continue
		}
		live := f.num >= logNum
		strict := live && i < newest
		var tracker *seqTracker
		if live {
			tracker = seqs
		}
		rep.Logs = append(rep.Logs, checkLog(fs, dir, f, live, strict, tracker, out))
	}
	syncedLost := state != nil && state.SyncedSeq > seqs.last
	for _, l := range rep.Logs {
		if l.TornTailOffset != nil {
			noteTornTail(l, state != nil, syncedLost && l.File == seqs.lastFile, out)
		}
	}
	if state == nil {
		return
	}
	if !state.HasFlushedSeq {
		checkLogCoverage(rep.Logs, state.LastSeq, out)
	}
	if syncedLost {
		out.errorf(seqs.lastFile, "writes lost: the manifest records every write up to sequence %d as durable, but the logs end at sequence %d (%s at offset %d): a log was deleted, cut short or damaged at its end",
			state.SyncedSeq, seqs.last, seqs.lastFile, seqs.lastEnd)
	}
}

// checkLog reads every record of a log and decodes it as a write batch.
// Damage in a live log is an error; in an obsolete log, whose contents are
// in tables already, a warning. A strict log must end cleanly: a torn tail
// in it is damage too. seqs, for a live log, checks that its sequences
// continue those before it.
func checkLog(fs vfs.FS, dir string, f dirFile, live, strict bool, seqs *seqTracker, out *findings) logResult {
	res := logResult{File: f.name, Live: live, Strict: strict, Bytes: f.size, Status: "ok"}
	sev := sevError
	if !live {
		sev = sevWarning
		out.notef(f.name, "obsolete log (older than the manifest's log number): its writes are in tables; the next Open deletes it")
	}
	fail := func(err error) logResult {
		res.Status, res.Error = "corrupt", err.Error()
		if strict {
			out.add(sev, f.name, "a newer log holds writes, so this one must read cleanly to its end, and Open refuses it: %v", err)
		} else {
			out.add(sev, f.name, "%v", err)
		}
		return res
	}
	path := fs.PathJoin(dir, f.name)
	file, err := fs.Open(path)
	if err != nil {
		return fail(err)
	}
	defer file.Close()
	r := record.NewReader(file, path)
	if strict {
		r.SetStrict()
	}
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
		if seqs != nil {
			seqs.follow(f.name, r.RecordOffset(), r.EndOfLastRecord(), s, out)
		}
	}
	if torn, off := r.TornTail(); torn {
		// checkLogs notes it, once it knows whether the tail held writes
		// recorded as synced.
		res.Status = "torn tail"
		res.TornTailOffset = &off
	}
	return res
}

// noteTornTail notes the torn tail of log l. opens says the next Open gets
// as far as the logs; syncedLost that the tail held writes the manifest
// records as synced (an error reported apart).
func noteTornTail(l logResult, opens, syncedLost bool, out *findings) {
	off := *l.TornTailOffset
	then := ""
	switch {
	case syncedLost:
		then = ", but it held writes the manifest records as durable, so Open refuses the database"
	case opens:
		then = "; the next Open drops them"
	}
	out.notef(l.File, "torn tail: the %d bytes from offset %d on are a partial write (a crash artefact)%s", l.Bytes-off, off, then)
}

// follow checks that record s of log file (at offset off, ending at end)
// continues the sequence, reporting a gap or an overlap, then moves past
// it.
func (t *seqTracker) follow(file string, off, end int64, s batchSummary, out *findings) {
	if t.next != 0 && s.seq != t.next {
		if s.seq > t.next {
			out.errorf(file, "sequence gap at the record at offset %d: it starts at sequence %d, but the writes before it end at %d, so %s missing from every table and log (a log was lost), and Open refuses the database",
				off, s.seq, t.next-1, writesRange(t.next, s.seq-1))
		} else {
			out.errorf(file, "sequence overlap at the record at offset %d: it starts at sequence %d, but the writes before it (tables and earlier logs) already reach %d, and Open refuses the database",
				off, s.seq, t.next-1)
		}
	}
	if s.count > 0 {
		t.next = s.seq + uint64(s.count)
		t.last, t.lastFile, t.lastEnd = t.next-1, file, end
	}
}

// checkLogCoverage is the coverage check for manifests written before
// FlushedSeq existed. Every edit records the last sequence number handed
// out, so the oldest live log's first write is at most one past the
// manifest's last sequence; a larger gap means the writes in between are
// in no table and no log (or the manifest lost its latest edits).
func checkLogCoverage(logs []logResult, lastSeq uint64, out *findings) {
	for _, l := range logs {
		if !l.Live || l.Records == 0 {
			continue
		}
		if l.FirstSeq > lastSeq+1 {
			out.errorf(l.File, "writes lost: this is the oldest live log and its first write has sequence %d, but the manifest's last sequence is %d, so sequences %d-%d are in no table or log",
				l.FirstSeq, lastSeq, lastSeq+1, l.FirstSeq-1)
		}
		return
	}
}
