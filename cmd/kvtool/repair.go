package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// repairTargetTableSize is where repair cuts its output tables (between
// user keys): the engine's default target file size. Tests lower it.
var repairTargetTableSize uint64 = 2 << 20

// Table statuses in a repair report.
const (
	repairMerged     = "merged"     // contents merged into the new tables; moved to lost/
	repairSuperseded = "superseded" // its writes are in the trusted manifest's tables; moved to lost/
	repairDamaged    = "damaged"    // failed verification; moved to lost/
	repairForeign    = "foreign"    // not this database's; left in place, untouched
)

// Log statuses in a repair report.
const (
	logRead     = "read"      // every byte read; moved to lost/
	logTornTail = "torn tail" // read up to a torn tail; moved to lost/
	logDamaged  = "damaged"   // read up to damage; moved to lost/
	logForeign  = "foreign"   // not this database's; left in place, untouched
)

// repairReport is the result of kvtool repair; -json prints it as is.
type repairReport struct {
	Dir string `json:"dir"`
	// Manifest is the old manifest repair took the identity (and, when
	// Trusted, the flushed sequence) from; empty when none replays.
	Manifest string `json:"manifest,omitempty"`
	// Trusted: every table the manifest names is present and intact, so
	// every write up to its FlushedSeq is in those tables, and copies of
	// such writes elsewhere (obsolete logs, tables compacted away but not
	// yet removed) are superseded rather than merged.
	Trusted    bool   `json:"manifest_trusted"`
	FlushedSeq uint64 `json:"manifest_flushed_seq,omitempty"`
	DBID       string `json:"dbid"`
	DBIDFrom   string `json:"dbid_from"`

	Tables    []repairTableResult `json:"tables"`
	Logs      []repairLogResult   `json:"logs"`
	Settings  *tableSettings      `json:"settings,omitempty"`
	NewTables []newTableResult    `json:"new_tables"`
	// EntriesIn counts the entries merged (table entries and log
	// operations); KeysOut the entries written, one per live user key.
	EntriesIn uint64 `json:"entries_in"`
	KeysOut   uint64 `json:"keys_out"`
	// SmallestSeq and LargestSeq bound the sequences of the data merged;
	// LastSeq is the new manifest's last (and flushed and synced)
	// sequence: at least every sequence seen anywhere.
	SmallestSeq uint64 `json:"smallest_seq,omitempty"`
	LargestSeq  uint64 `json:"largest_seq,omitempty"`
	LastSeq     uint64 `json:"last_seq"`

	NewManifest  string      `json:"new_manifest,omitempty"`
	NewLog       string      `json:"new_log,omitempty"`
	ForeignFiles []string    `json:"foreign_files"`
	Moved        []movedFile `json:"moved"`
	Findings     []finding   `json:"findings"`

	// Committed: the new manifest is durable and CURRENT names it.
	Committed bool `json:"committed"`
	// OK: committed, and every superseded file was moved to lost/.
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// repairTableResult is what repair did with one table.
type repairTableResult struct {
	File        string `json:"file"`
	Status      string `json:"status"`
	Entries     uint64 `json:"entries"`
	Deletions   uint64 `json:"deletions"`
	SmallestSeq uint64 `json:"smallest_seq,omitempty"`
	LargestSeq  uint64 `json:"largest_seq,omitempty"`
	DBID        string `json:"dbid,omitempty"`
	// Reason says why a table is damaged, foreign or superseded.
	Reason string `json:"reason,omitempty"`
}

// repairLogResult is what repair kept of one log.
type repairLogResult struct {
	File   string `json:"file"`
	Status string `json:"status"`
	Bytes  int64  `json:"bytes"`
	// Records and Ops were kept and merged; Superseded records were
	// intact but already in the trusted manifest's tables.
	Records    int    `json:"records"`
	Ops        uint64 `json:"ops"`
	Superseded int    `json:"superseded_records,omitempty"`
	FirstSeq   uint64 `json:"first_seq,omitempty"`
	LastSeq    uint64 `json:"last_seq,omitempty"`
	// DroppedBytes from DroppedAt on were not read as records.
	DroppedBytes int64  `json:"dropped_bytes"`
	DroppedAt    *int64 `json:"dropped_at,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// newTableResult describes one table repair wrote.
type newTableResult struct {
	File        string `json:"file"`
	Size        uint64 `json:"size"`
	Entries     uint64 `json:"entries"`
	Smallest    string `json:"smallest"`
	Largest     string `json:"largest"`
	SmallestSeq uint64 `json:"smallest_seq"`
	LargestSeq  uint64 `json:"largest_seq"`
}

// movedFile is a file repair moved into lost/ (To is relative to the
// database directory), or copied there when Copied is set.
type movedFile struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Copied bool   `json:"copied,omitempty"`
}

func runRepair(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("repair", "[-json] DIR", stderr)
	asJSON := flags.Bool("json", false, "print the report as JSON")
	dir, code, ok := parseFlags(flags, args, "database directory", stderr)
	if !ok {
		return code
	}
	rep := repair(vfs.Default, dir)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "kvtool: %v\n", err)
			return exitProblems
		}
	} else {
		renderRepair(stdout, rep)
	}
	if !rep.OK {
		if rep.Error != "" {
			fmt.Fprintf(stderr, "kvtool repair: %s\n", rep.Error)
		}
		return exitProblems
	}
	return exitOK
}

// repair rebuilds the database in dir; see doc.go and docs/kvtool.md. It
// changes nothing unless it can commit a repaired database, and it never
// deletes a file it did not create: what it does not keep goes to lost/.
func repair(fs vfs.FS, dir string) *repairReport {
	rp := &repairer{fs: fs, dir: dir, rep: &repairReport{
		Dir: dir, Tables: []repairTableResult{}, Logs: []repairLogResult{},
		NewTables: []newTableResult{}, ForeignFiles: []string{}, Moved: []movedFile{},
	}}
	err := rp.run()
	rep := rp.rep
	for _, t := range rp.tables {
		rep.Tables = append(rep.Tables, t.res)
	}
	for _, l := range rp.logs {
		rep.Logs = append(rep.Logs, l.res)
	}
	rep.Findings = rp.out.list
	if rep.Findings == nil {
		rep.Findings = []finding{}
	}
	if err != nil {
		rep.Error = err.Error()
	}
	rep.OK = err == nil && rep.Committed
	return rep
}

// repairer holds the state of one repair.
type repairer struct {
	fs  vfs.FS
	dir string
	rep *repairReport
	out findings

	listing *dirListing
	// state is the old manifest chosen (nil when none replays).
	state     *manifest.State
	stateName string
	trusted   bool
	dbid      []byte
	// foreign maps the files left in place to the reason: listed as
	// foreign by the old manifest, numbered past it (see chooseManifest),
	// or tables of another database.
	foreign map[string]string

	tables []*repairTable
	logs   []*repairLog
	// maxSeq is the largest sequence seen anywhere (tables of this
	// database, damaged ones whose properties read, kept log records, the
	// old manifests' counters).
	maxSeq uint64

	// newMetas are the tables written; nextNum the first number after
	// them and the new log (the new manifest's).
	newMetas []*manifest.FileMetadata
	nextNum  uint64

	created []string // files repair created, removed if it fails before the commit
}

// run does the repair in the order that keeps the directory as found
// until the commit: read and verify everything, write the new tables and
// log, commit the manifest, then move what was superseded to lost/.
func (rp *repairer) run() error {
	fs, dir := rp.fs, rp.dir
	info, err := fs.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	// A first look, so that a directory that is no database does not get
	// a LOCK file; the listing used is the one taken under the lock.
	if err := rp.list(); err != nil {
		return err
	}
	lock, err := fs.Lock(fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return fmt.Errorf("%s is in use: another process (or this one) holds its LOCK; close the database first (%v)", dir, err)
	}
	defer lock.Close()
	if err := rp.list(); err != nil {
		return err
	}
	rp.foreign = map[string]string{}
	rp.chooseManifest()
	if err := rp.verifyTables(); err != nil {
		return err
	}
	rp.decideIdentity()
	rp.checkTrust()
	if err := rp.readLogs(); err != nil {
		return err
	}
	rp.reportLostWrites()
	if err := rp.refuseIfNothingIntact(); err != nil {
		return err
	}

	if err := rp.writeRepaired(); err != nil {
		rp.removeCreated()
		return err
	}
	if err := rp.commit(); err != nil {
		return err
	}
	return rp.moveSuperseded()
}

// list lists the directory, refusing one with nothing to repair.
func (rp *repairer) list() error {
	l, err := listDir(rp.fs, rp.dir)
	if err != nil {
		return err
	}
	if len(l.tables) == 0 && len(l.logs) == 0 && len(l.manifests) == 0 {
		return fmt.Errorf("%s holds no tables, logs or manifests: nothing to repair", rp.dir)
	}
	rp.listing = l
	return nil
}

// chooseManifest picks the old manifest the repair takes the database's
// identity from: the one CURRENT names if it replays, else the newest that
// replays. Manifests that another replaying manifest lists as foreign are
// never chosen.
//
// The engine reserves file numbers in the manifest before using them, so
// every file it wrote is numbered below the NextFileNum of the last
// manifest it committed. When the chosen manifest is that one (CURRENT
// names it, or no manifest is newer) and it records an identity (manifests
// without one predate reservations), a file numbered at or past its
// NextFileNum is not the engine's: the repair leaves it alone, as Open
// and check do. The files the manifest lists as foreign stay too.
func (rp *repairer) chooseManifest() {
	type candidate struct {
		f     dirFile
		state *manifest.State
	}
	var cands []candidate
	listedForeign := map[string]bool{}
	for _, f := range rp.listing.manifests {
		state, err := manifest.ReadManifest(rp.fs, rp.fs.PathJoin(rp.dir, f.name))
		switch {
		case manifest.HoldsNoEdits(err):
			rp.out.notef(f.name, "holds no intact edit (a manifest whose creation a crash interrupted)")
		case err != nil:
			rp.out.warnf(f.name, "does not replay: %v", err)
		default:
			cands = append(cands, candidate{f, state})
			rp.maxSeq = max(rp.maxSeq, state.LastSeq, state.SyncedSeq)
			for _, n := range state.ForeignFiles {
				listedForeign[n] = true
			}
		}
	}
	current, curErr := manifest.ReadCurrent(rp.fs, rp.dir)
	var chosen *candidate
	why := ""
	for i := range cands {
		c := &cands[i]
		if listedForeign[c.f.name] {
			continue
		}
		if curErr == nil && c.f.name == current {
			chosen, why = c, "CURRENT names it"
			break
		}
		chosen = c // ascending: the last one left is the newest
	}
	switch {
	case chosen == nil && len(rp.listing.manifests) > 0:
		rp.out.warnf("", "no manifest replays: the identity comes from the tables, and every intact table and log record is merged")
	case chosen == nil:
	case why == "":
		why = "the newest manifest that replays"
		switch {
		case errors.Is(curErr, os.ErrNotExist):
			why += "; CURRENT is missing"
		case curErr != nil:
			why += "; CURRENT is damaged"
		default:
			why += fmt.Sprintf("; CURRENT names %s, which does not", current)
		}
	}
	if chosen == nil {
		return
	}
	rp.state, rp.stateName = chosen.state, chosen.f.name
	rp.rep.Manifest = chosen.f.name
	newest := true
	for _, f := range rp.listing.manifests {
		if f.num > chosen.f.num && !listedForeign[f.name] {
			newest = false
		}
	}
	numberRule := chosen.state.DBID != nil && (why == "CURRENT names it" || newest)
	rp.out.notef(chosen.f.name, "used for the database identity (%s): log number %d, next file number %d, last sequence %d",
		why, chosen.state.LogNum, chosen.state.NextFileNum, chosen.state.LastSeq)
	listed := map[string]bool{}
	for _, n := range chosen.state.ForeignFiles {
		listed[n] = true
	}
	for _, n := range rp.listedNames() {
		_, num, _ := base.ParseFilename(n)
		switch {
		case listed[n]:
			rp.foreign[n] = fmt.Sprintf("listed as foreign by %s", chosen.f.name)
		case numberRule && num >= chosen.state.NextFileNum:
			rp.foreign[n] = fmt.Sprintf("numbered at or past %s's next file number %d, so the engine did not write it",
				chosen.f.name, chosen.state.NextFileNum)
		default:
			continue
		}
		rp.out.notef(n, "foreign file, left in place, not read: %s", rp.foreign[n])
	}
}

// listedNames returns the names of every bloomkv file in the listing.
func (rp *repairer) listedNames() []string {
	l := rp.listing
	var names []string
	for _, num := range l.tableNums() {
		names = append(names, l.tables[num].name)
	}
	for _, group := range [][]dirFile{l.logs, l.manifests, l.temps} {
		for _, f := range group {
			names = append(names, f.name)
		}
	}
	return names
}

// reportLostWrites says when writes the old manifest records as durable
// (up to its SyncedSeq) are in no intact file. Writes after its FlushedSeq
// were only ever in logs, or in tables flushed but not yet recorded, and
// never compacted, so the sequences the intact logs and such tables cover
// show exactly which are missing. (A missing or damaged table is reported
// on its own.)
func (rp *repairer) reportLostWrites() {
	if rp.state == nil || rp.state.SyncedSeq <= rp.state.FlushedSeq {
		return
	}
	type span struct{ first, last uint64 }
	var spans []span
	for _, t := range rp.tables {
		if (t.res.Status == repairMerged || t.res.Status == repairSuperseded) && t.props.NumEntries > 0 {
			spans = append(spans, span{t.props.SmallestSeq, t.props.LargestSeq})
		}
	}
	for _, l := range rp.logs {
		if l.lastSeq > 0 {
			spans = append(spans, span{l.firstSeq, l.lastSeq})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	next := rp.state.FlushedSeq + 1 // the first write not yet found
	for _, sp := range spans {
		if next > rp.state.SyncedSeq {
			return
		}
		if sp.first > next {
			break
		}
		next = max(next, sp.last+1)
	}
	if next <= rp.state.SyncedSeq {
		end := rp.state.SyncedSeq
		for _, sp := range spans {
			if sp.first > next {
				end = min(end, sp.first-1)
				break
			}
		}
		rp.out.errorf(rp.stateName, "records every write up to sequence %d as durable, but no intact log or table holds %s: lost (in the damaged part of a log, or in a log that is gone)",
			rp.state.SyncedSeq, writesRange(next, end))
	}
}

// refuseIfNothingIntact stops a repair that would keep nothing although
// it found damage: committing would replace the damaged database with an
// empty one.
func (rp *repairer) refuseIfNothingIntact() error {
	intact, damaged := 0, 0
	for _, t := range rp.tables {
		switch t.res.Status {
		case repairMerged, repairSuperseded:
			intact++
		case repairDamaged:
			damaged++
		}
	}
	for _, l := range rp.logs {
		intact += l.res.Records + l.res.Superseded
		if l.res.DroppedBytes > 0 {
			damaged++
		}
	}
	if intact == 0 && damaged > 0 {
		return fmt.Errorf("nothing could be repaired: no intact table or log record of this database was found; the directory is as it was found")
	}
	return nil
}

// removeCreated removes the files repair created before a failure that
// came before the commit, leaving the directory as it was found.
func (rp *repairer) removeCreated() {
	for _, path := range rp.created {
		if err := rp.fs.Remove(path); err != nil {
			rp.out.warnf(path, "could not remove this file repair wrote before it failed: %v", err)
		}
	}
	rp.created = nil
}
