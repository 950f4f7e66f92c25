package main

import (
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/bloomkv/bloomkv/wal"
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
	// ReservedBytes are the zeros after the last record of the newest log
	// that its writer reserved and never used (a memory-mapped log of a
	// database that is open or crashed): not damage, nothing lost.
	ReservedBytes int64 `json:"reserved_bytes,omitempty"`
	// Status is "ok", "torn tail", "corrupt" or "foreign" (listed as
	// foreign, or numbered past the manifest's next file number: never
	// read).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// checkLogs checks every log, in number order, with wal.Check: the rules
// Open applies in its default recovery mode (bloomkv.WALRecoverTolerateTornTail),
// so check finds in the logs exactly what makes Open refuse the database.
// The live logs (at or past the manifest's log number, not foreign) are
// checked together: every one before the newest non-empty one strictly,
// their sequences continuing from the manifest's FlushedSeq without a gap,
// every write up to its SyncedSeq found. An obsolete log is not part of
// recovery (Open deletes it): it is read on its own, and damage in it is
// a warning. Without a manifest there is no log number and no sequence to
// continue: every log counts as live and is read on its own, strictly
// when a newer log holds writes.
func checkLogs(fs vfs.FS, dir string, listing *dirListing, state *manifest.State, foreign map[string]bool, rep *checkReport, out *findings) {
	var logNum uint64
	if state != nil {
		logNum = state.LogNum
	}
	stats := map[uint64]*logStats{}
	opts := wal.Options{
		FS:        fs,
		Mode:      wal.TolerateTornTail,
		Sequences: batchSequences,
		KeepGoing: true,
		OnRecord: func(lr *wal.LogResult, _ int64, rec []byte) {
			stats[lr.Num].add(rec)
		},
	}
	// results[i] is what wal.Check found in listing.logs[i] (nil: foreign).
	results := make([]*wal.LogResult, len(listing.logs))
	var live []wal.Log
	var liveIdx []int
	newest := -1 // without a manifest: index of the newest non-empty log
	for i, f := range listing.logs {
		if !foreign[f.name] && f.size > 0 {
			newest = i
		}
	}
	for i, f := range listing.logs {
		if foreign[f.name] {
			continue
		}
		stats[f.num] = &logStats{}
		l := wal.Log{Num: f.num, Path: fs.PathJoin(dir, f.name), Size: f.size}
		if state != nil && f.num >= logNum {
			live, liveIdx = append(live, l), append(liveIdx, i)
			continue
		}
		// On its own: an obsolete log, or any log without a manifest.
		o := opts
		if state == nil && i < newest {
			o.Mode = wal.AbsoluteConsistency // strict: a newer log holds writes
		}
		results[i] = &checkWith(o, []wal.Log{l}).Logs[0]
	}
	var liveRes *wal.Result
	if state != nil {
		o := opts
		o.FlushedSeq, o.FlushedSeqKnown, o.SyncedSeq = state.FlushedSeq, state.HasFlushedSeq, state.SyncedSeq
		liveRes = checkWith(o, live)
		for j, i := range liveIdx {
			results[i] = &liveRes.Logs[j]
		}
	}

	for i, f := range listing.logs {
		lr := results[i]
		if lr == nil {
			rep.Logs = append(rep.Logs, logResult{File: f.name, Live: false, Bytes: f.size, Status: "foreign"})
			continue
		}
		isLive := state == nil || f.num >= logNum
		rep.Logs = append(rep.Logs, reportLog(f, lr, stats[f.num], isLive, state != nil, out))
	}

	// Where the logs end: the last live log holding a record (the
	// manifest, when none does).
	lastFile, lastEnd := "", int64(0)
	if state != nil {
		lastFile = rep.Manifest.Name
	}
	if liveRes != nil {
		for j := len(liveRes.Logs) - 1; j >= 0; j-- {
			if lr := &liveRes.Logs[j]; lr.Records > 0 {
				lastFile, lastEnd = listing.logs[liveIdx[j]].name, lr.KeepEnd
				break
			}
		}
	}
	syncedLost := liveRes != nil && liveRes.MissingSynced != nil
	for _, l := range rep.Logs {
		if l.TornTailOffset != nil {
			noteTornTail(l, state != nil, syncedLost && l.File == lastFile, out)
		}
	}
	if state == nil {
		return
	}
	if !state.HasFlushedSeq {
		checkLogCoverage(rep.Logs, state.LastSeq, out)
	}
	if syncedLost {
		out.errorf(lastFile, "writes lost: the manifest records every write up to sequence %d as durable, but the logs end at sequence %d (%s at offset %d): a log was deleted, cut short or damaged at its end",
			state.SyncedSeq, liveRes.LastSeq, lastFile, lastEnd)
	}
}

// checkWith runs wal.Check. With KeepGoing it records every problem in
// the result rather than returning it, so an error is not expected; should
// one come, it is recorded against every log all the same.
func checkWith(o wal.Options, logs []wal.Log) *wal.Result {
	res, err := wal.Check(o, logs)
	if err == nil {
		return res
	}
	res = &wal.Result{Logs: make([]wal.LogResult, len(logs))}
	for i, l := range logs {
		res.Logs[i] = wal.LogResult{Log: l, Err: err}
	}
	return res
}

// logStats counts what the records of a log hold.
type logStats struct {
	ops, deletes uint64
}

// add counts rec, a batch that batchSequences accepted.
func (s *logStats) add(rec []byte) {
	s.ops += uint64(batchrep.Count(rec))
	r := batchrep.NewReader(rec, batchLimits)
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		if op.Kind == base.KindDelete {
			s.deletes++
		}
	}
}

// reportLog turns what wal.Check found in log f into its result and
// findings. Damage in a live log is an error; in an obsolete log, whose
// contents are in tables already, a warning. opens says a manifest
// replayed, so that Open gets as far as the logs.
func reportLog(f dirFile, lr *wal.LogResult, st *logStats, live, opens bool, out *findings) logResult {
	res := logResult{
		File: f.name, Live: live, Strict: lr.Strict, Bytes: f.size, Status: "ok",
		Records: lr.Records, Ops: st.ops, Deletes: st.deletes, FirstSeq: lr.FirstSeq, LastSeq: lr.LastSeq,
	}
	sev := sevError
	if !live {
		sev = sevWarning
		out.notef(f.name, "obsolete log (older than the manifest's log number): its writes are in tables; the next Open deletes it")
	}
	for _, se := range lr.SeqErrs {
		noteSequenceError(f.name, se, sev, live && opens, out)
	}
	if lr.Err != nil {
		res.Status, res.Error = "corrupt", lr.Err.Error()
		if lr.Strict {
			out.add(sev, f.name, "a newer log holds writes, so this one must read cleanly to its end, and Open refuses it: %v", lr.Err)
		} else {
			out.add(sev, f.name, "%v", lr.Err)
		}
	}
	if lr.Reserved > 0 {
		res.ReservedBytes = lr.Reserved
		out.notef(f.name, "ends in %d bytes of space reserved ahead of its records at offset %d (a memory-mapped log of a database that is open or was not closed): unused, nothing lost",
			lr.Reserved, lr.KeepEnd)
	}
	if lr.TornTail {
		// checkLogs notes it, once it knows whether the tail held writes
		// recorded as synced.
		off := lr.KeepEnd
		res.Status, res.TornTailOffset = "torn tail", &off
	}
	return res
}

// noteSequenceError reports a record of log file whose sequence does not
// continue the writes before it. refuses says Open would refuse the
// database for it (a live log, and a manifest that replays).
func noteSequenceError(file string, se *wal.SequenceError, sev severity, refuses bool, out *findings) {
	then := ""
	if refuses {
		then = ", and Open refuses the database"
	}
	// A log's first record is at offset 0; any other follows a record of
	// the same log.
	if se.Gap() {
		where := "from every table and log (a log was lost)"
		if se.Offset > 0 {
			where = "between two records of this log"
		}
		out.add(sev, file, "sequence gap at the record at offset %d: it starts at sequence %d, but the writes before it end at %d, so %s missing %s%s",
			se.Offset, se.Got, se.Want-1, writesRange(se.Want, se.Got-1), where, then)
		return
	}
	before := "the writes before it (tables and earlier logs)"
	if se.Offset > 0 {
		before = "the records before it in this log"
	}
	out.add(sev, file, "sequence overlap at the record at offset %d: it starts at sequence %d, but %s already reach %d%s",
		se.Offset, se.Got, before, se.Want-1, then)
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
