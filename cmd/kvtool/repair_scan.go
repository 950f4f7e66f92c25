package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
)

// repairTable is one table found in the directory.
type repairTable struct {
	f     dirFile
	res   repairTableResult
	props *sstable.Properties // nil when the table did not open
	// named: the chosen manifest lists the table; identityErr says how
	// the table disagrees with that entry.
	named       bool
	identityErr error
}

// repairLog is one log found in the directory, with the operations kept.
type repairLog struct {
	f   dirFile
	res repairLogResult
	mem *memtable.Memtable // kept operations; nil when none
	// firstSeq and lastSeq bound the intact records read, superseded ones
	// included (0 when none).
	firstSeq, lastSeq uint64
}

// verifyTables reads every table but the foreign ones fully: sstable.Open
// (footer, properties, index and filter), Reader.Check (every block, key
// order, properties recounted, filter membership) and an iteration over
// every entry. Damage makes a table damaged; any other error (an I/O
// error, a permission) stops the repair, since it says nothing of the
// table's contents.
func (rp *repairer) verifyTables() error {
	named := map[uint64]*manifest.FileMetadata{}
	if rp.state != nil {
		for _, files := range rp.state.Version.Levels {
			for _, m := range files {
				named[m.FileNum] = m
			}
		}
	}
	for _, num := range rp.listing.tableNums() {
		f := rp.listing.tables[num]
		t := &repairTable{f: f, res: repairTableResult{File: f.name}}
		rp.tables = append(rp.tables, t)
		if why, ok := rp.foreign[f.name]; ok {
			t.res.Status, t.res.Reason = repairForeign, why
			continue
		}
		id := sstable.Identity{FileNum: num}
		if m, ok := named[num]; ok {
			t.named = true
			id.Smallest, id.Largest, id.SmallestSeq, id.LargestSeq = m.Smallest, m.Largest, m.SmallestSeq, m.LargestSeq
		}
		props, idErr, err := verifyWholeTable(rp, f, id)
		t.props = props
		if props != nil {
			t.res.Entries, t.res.Deletions = props.NumEntries, props.NumDeletions
			t.res.SmallestSeq, t.res.LargestSeq = props.SmallestSeq, props.LargestSeq
			t.res.DBID = string(props.DBID)
			if props.LargestSeq <= base.MaxSeq {
				rp.maxSeq = max(rp.maxSeq, props.LargestSeq)
			}
		}
		if err != nil && !errors.Is(err, base.ErrCorruption) {
			return fmt.Errorf("reading %s: %w", f.name, err)
		}
		if err != nil {
			t.res.Status, t.res.Reason = repairDamaged, err.Error()
			rp.out.errorf(f.name, "damaged; it goes to lost/: %v", err)
			continue
		}
		t.identityErr = idErr
		if idErr != nil {
			// The contents are intact and of this database (the identity
			// is decided later): they are merged like any other table's.
			rp.out.warnf(f.name, "intact, but not the table the manifest or its name says; merged by its contents: %v", idErr)
		}
	}
	return nil
}

// verifyWholeTable opens and fully verifies one table and compares it
// with id. It returns the properties when the table opened, and the
// identity mismatch separately from damage.
func verifyWholeTable(rp *repairer, f dirFile, id sstable.Identity) (*sstable.Properties, error, error) {
	path := rp.fs.PathJoin(rp.dir, f.name)
	file, err := rp.fs.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("kvtool: open %s: %w", path, err)
	}
	r, err := sstable.Open(file, path, f.num, f.size, sstable.ReaderOptions{})
	if err != nil {
		return nil, nil, err // Open closed the file
	}
	defer r.Close()
	props := *r.Properties()
	if err := r.Check(); err != nil {
		return &props, nil, err
	}
	it := r.NewIter(false)
	n := uint64(0)
	for ok := it.First(); ok; ok = it.Next() {
		if _, _, _, valid := base.ParseInternalKey(it.Key()); !valid {
			_ = it.Close()
			return &props, nil, base.CorruptionErrorf("kvtool: %s: entry %d: invalid internal key %s", path, n, fmtKey(it.Key()))
		}
		n++
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &props, nil, err
	}
	if n != props.NumEntries {
		return &props, nil, base.CorruptionErrorf("kvtool: %s: iterating yields %d entries, the properties say %d", path, n, props.NumEntries)
	}
	return &props, r.CheckIdentity(id), nil
}

// decideIdentity takes the database's identity from the chosen manifest,
// else the identity most of the intact tables record, else a new one; and
// calls every intact table of another database foreign.
func (rp *repairer) decideIdentity() {
	switch {
	case rp.state != nil && rp.state.DBID != nil:
		rp.dbid = rp.state.DBID
		rp.rep.DBIDFrom = rp.stateName
	default:
		counts := map[string]int{}
		for _, t := range rp.tables {
			if t.res.Status == "" && len(t.props.DBID) > 0 {
				counts[string(t.props.DBID)]++
			}
		}
		ids := make([]string, 0, len(counts))
		for id := range counts {
			ids = append(ids, id)
		}
		// Most tables first; ties broken by the identity itself, so the
		// choice is the same on every run.
		sort.Slice(ids, func(i, j int) bool {
			if counts[ids[i]] != counts[ids[j]] {
				return counts[ids[i]] > counts[ids[j]]
			}
			return ids[i] < ids[j]
		})
		switch {
		case len(ids) == 0:
			rp.dbid = manifest.NewDBID()
			rp.rep.DBIDFrom = "new (no manifest or table records one)"
		default:
			rp.dbid = []byte(ids[0])
			rp.rep.DBIDFrom = fmt.Sprintf("tables (%d of them record it)", counts[ids[0]])
			if len(ids) > 1 {
				rp.out.warnf("", "the tables record %d database identities and no manifest decides: the most common, %q, is taken as this database's", len(ids), ids[0])
			}
		}
	}
	rp.rep.DBID = string(rp.dbid)
	for _, t := range rp.tables {
		if t.res.Status == "" && len(t.props.DBID) > 0 && !bytes.Equal(t.props.DBID, rp.dbid) {
			t.res.Status = repairForeign
			t.res.Reason = fmt.Sprintf("belongs to database %q, not %q", t.props.DBID, rp.dbid)
			rp.out.notef(t.f.name, "foreign file, left in place, not used: %s", t.res.Reason)
			rp.foreign[t.f.name] = t.res.Reason
		}
	}
}

// checkTrust decides whether the chosen manifest vouches for every write
// up to its FlushedSeq: it does when every table it names is present,
// intact, of this database and the table it names. Copies of those writes
// elsewhere -- an obsolete log a crash left, a table compacted away but
// not yet removed -- are then superseded rather than merged. Merging them
// would be harmless for the versions a newer write shadows, but could
// bring back a key whose deletion a compaction has since dropped together
// with the value it deleted.
func (rp *repairer) checkTrust() {
	trusted := rp.state != nil && rp.state.HasFlushedSeq
	if trusted {
		byNum := map[uint64]*repairTable{}
		for _, t := range rp.tables {
			byNum[t.f.num] = t
		}
		for level, files := range rp.state.Version.Levels {
			for _, m := range files {
				name := base.MakeFilename(base.FileTypeTable, m.FileNum)
				t, ok := byNum[m.FileNum]
				why := ""
				switch {
				case !ok:
					why = "is missing"
					rp.out.errorf(name, "missing: %s lists it at level %d; its writes are lost unless other files hold copies", rp.stateName, level)
				case t.res.Status != "":
					why = "is " + t.res.Status
				case t.identityErr != nil:
					why = "is not the table the manifest describes"
				}
				if why != "" && trusted {
					trusted = false
					rp.out.notef(rp.stateName, "not trusted for the writes it calls flushed: the table %s it lists %s, so every intact table and log record is merged", name, why)
				}
			}
		}
	}
	rp.trusted = trusted
	rp.rep.Trusted = trusted
	if trusted {
		rp.rep.FlushedSeq = rp.state.FlushedSeq
	}
	for _, t := range rp.tables {
		if t.res.Status != "" {
			continue
		}
		t.res.Status = repairMerged
		if trusted && !t.named && t.props.LargestSeq <= rp.state.FlushedSeq {
			t.res.Status = repairSuperseded
			t.res.Reason = fmt.Sprintf("not in %s, and its writes (sequences up to %d) are in the tables it lists", rp.stateName, t.props.LargestSeq)
		}
	}
}

// readLogs reads every log but the foreign ones in number order and keeps
// each whole record before the first damage: a torn tail, a record the
// log reader rejects, a record that is not a well-formed batch, or one
// whose sequence does not follow the previous record's.
//
// Each log is read on its own: damage in one log does not stop the reading
// of the next, whose intact writes are kept too (a repair never drops
// intact data). When that leaves a gap in the sequences, the repaired
// database holds later writes without some earlier ones, and a warning
// says so.
func (rp *repairer) readLogs() error {
	var prev *repairLog // the previous log with records
	for _, f := range rp.listing.logs {
		l := &repairLog{f: f, res: repairLogResult{File: f.name, Bytes: f.size}}
		rp.logs = append(rp.logs, l)
		if why, ok := rp.foreign[f.name]; ok {
			l.res.Status, l.res.Reason = logForeign, why
			continue
		}
		if err := rp.readLog(l); err != nil {
			return err
		}
		if l.lastSeq == 0 {
			continue
		}
		if prev != nil && l.firstSeq > prev.lastSeq+1 {
			rp.out.warnf(l.f.name, "%s missing between %s and this log (in the damaged part of a log, or in a log that is gone): "+
				"the writes after the gap are kept, so the repaired database may hold later writes without some earlier ones",
				writesRange(prev.lastSeq+1, l.firstSeq-1), prev.f.name)
		}
		prev = l
	}
	return nil
}

// readLog reads one log into l. Only an I/O error is returned; damage is
// recorded in l.
func (rp *repairer) readLog(l *repairLog) error {
	path := rp.fs.PathJoin(rp.dir, l.f.name)
	file, err := rp.fs.Open(path)
	if err != nil {
		return fmt.Errorf("kvtool: open %s: %w", path, err)
	}
	defer file.Close()
	r := record.NewReader(file, path)
	l.res.Status = logRead
	keepEnd := int64(0) // end of the last record kept
	stop := func(at int64, status string, reason error) {
		l.res.Status, l.res.Reason = status, reason.Error()
		keepEnd = at
	}
	var lastSeq uint64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			if torn, off := r.TornTail(); torn {
				stop(off, logTornTail, errors.New("a torn tail: a partial write, a crash artefact"))
			} else {
				keepEnd = l.f.size
			}
			break
		}
		if err != nil {
			var ce *record.CorruptionError
			if !errors.As(err, &ce) && !errors.Is(err, base.ErrCorruption) {
				return err // an I/O error: nothing to judge
			}
			stop(r.EndOfLastRecord(), logDamaged, err)
			break
		}
		s, err := decodeBatch(rec, path, r.RecordOffset())
		if err == nil && s.count == 0 {
			err = base.CorruptionErrorf("kvtool: %s: record at offset %d: batch with no operations", path, r.RecordOffset())
		}
		if err == nil && l.res.Records+l.res.Superseded > 0 && s.seq <= lastSeq {
			err = base.CorruptionErrorf("kvtool: %s: record at offset %d: sequence %d does not follow the previous record's last sequence %d",
				path, r.RecordOffset(), s.seq, lastSeq)
		}
		if err != nil {
			stop(r.RecordOffset(), logDamaged, err)
			break
		}
		lastSeq = s.seq + uint64(s.count) - 1
		rp.maxSeq = max(rp.maxSeq, lastSeq)
		if l.firstSeq == 0 {
			l.firstSeq = s.seq
		}
		l.lastSeq = lastSeq
		if rp.trusted && lastSeq <= rp.state.FlushedSeq {
			l.res.Superseded++
			continue
		}
		if l.mem == nil {
			l.mem = memtable.New()
		}
		ops := batchrep.NewReader(rec, batchLimits) // decodeBatch accepted rec
		for op, ok := ops.Next(); ok; op, ok = ops.Next() {
			if op.Kind == base.KindRangeDelete {
				l.mem.AddRangeDel(op.Seq, op.Key, op.Value)
				continue
			}
			l.mem.Add(op.Seq, op.Kind, op.Key, op.Value)
		}
		if l.res.Records == 0 {
			l.res.FirstSeq = s.seq
		}
		l.res.Records++
		l.res.Ops += uint64(s.count)
		l.res.LastSeq = lastSeq
	}
	if keepEnd < l.f.size {
		at := keepEnd
		l.res.DroppedBytes, l.res.DroppedAt = l.f.size-keepEnd, &at
		sev := sevError
		if l.res.Status == logTornTail {
			sev = sevNote
		}
		rp.out.add(sev, l.f.name, "%d bytes from offset %d on dropped (%s); every whole record before them kept; the log goes to lost/",
			l.res.DroppedBytes, keepEnd, l.res.Reason)
	}
	if l.res.Superseded > 0 {
		rp.out.notef(l.f.name, "%d records already in %s's tables (sequences up to its flushed sequence %d): not merged again",
			l.res.Superseded, rp.stateName, rp.state.FlushedSeq)
	}
	return nil
}
