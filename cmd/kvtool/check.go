package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// checkReport is the result of kvtool check; -json prints it as is.
type checkReport struct {
	Dir      string        `json:"dir"`
	Manifest *manifestInfo `json:"manifest,omitempty"`
	Levels   []levelInfo   `json:"levels,omitempty"`
	Tables   []tableResult `json:"tables"`
	Logs     []logResult   `json:"logs"`
	Order    *orderStats   `json:"read_order,omitempty"`
	Findings []finding     `json:"findings"`
	Errors   int           `json:"errors"`
	Warnings int           `json:"warnings"`
	Notes    int           `json:"notes"`
	// OK is true when check exits 0: no errors (and, with -strict, no
	// warnings).
	OK bool `json:"ok"`
	// noManifest says, for the text report, why no manifest was replayed
	// (Manifest is nil then); the reason itself is an error finding.
	noManifest string
}

// manifestInfo summarizes the manifest CURRENT names.
type manifestInfo struct {
	Name           string `json:"name"`
	Bytes          int64  `json:"bytes"`
	Edits          int    `json:"edits"`
	LogNum         uint64 `json:"log_num"`
	NextFileNum    uint64 `json:"next_file_num"`
	LastSeq        uint64 `json:"last_seq"`
	FlushedSeq     uint64 `json:"flushed_seq"`
	HasFlushedSeq  bool   `json:"has_flushed_seq"`
	SyncedSeq      uint64 `json:"synced_seq"`
	DBID           string `json:"dbid,omitempty"`
	TornTailOffset *int64 `json:"torn_tail_offset,omitempty"`
}

// levelInfo summarizes one non-empty level of the live version.
type levelInfo struct {
	Level    int    `json:"level"`
	Tables   int    `json:"tables"`
	Bytes    int64  `json:"bytes"`
	Entries  uint64 `json:"entries"`
	Smallest string `json:"smallest"`
	Largest  string `json:"largest"`
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("check", "[-json] [-strict] [-q] DIR", stderr)
	asJSON := flags.Bool("json", false, "print the report as JSON")
	strict := flags.Bool("strict", false, "exit 1 on warnings (orphaned tables, damaged obsolete logs) too")
	quiet := flags.Bool("q", false, "print only the findings and the verdict")
	dir, code, ok := parseFlags(flags, args, "database directory", stderr)
	if !ok {
		return code
	}
	rep := check(vfs.Default, dir)
	rep.OK = rep.Errors == 0 && !(*strict && rep.Warnings > 0)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "kvtool: %v\n", err)
			return exitProblems
		}
	} else {
		renderCheck(stdout, rep, *quiet)
	}
	if !rep.OK {
		return exitProblems
	}
	return exitOK
}

// check verifies the database in dir; see doc.go for what it covers. It
// never writes.
func check(fs vfs.FS, dir string) *checkReport {
	rep := &checkReport{Dir: dir, Tables: []tableResult{}, Logs: []logResult{}}
	var out findings
	defer func() {
		rep.Findings = out.list
		if rep.Findings == nil {
			rep.Findings = []finding{}
		}
		rep.Errors, rep.Warnings, rep.Notes = out.count(sevError), out.count(sevWarning), out.count(sevNote)
	}()

	listing, err := listDir(fs, dir)
	if err != nil {
		out.errorf("", "%v", err)
		return rep
	}
	if listing.isEmpty() {
		out.errorf("", "%s holds no bloomkv files (no CURRENT, MANIFEST, tables or logs): not a database", dir)
		return rep
	}

	state, hist := loadManifest(fs, dir, listing, rep, &out)
	// Only a manifest that replays says which files are obsolete, and only
	// then can Open proceed to delete or trim them. Without one, Open
	// fails, so no finding may promise what it would do.
	replayed := state != nil
	foreign := foreignFiles(listing, state, &out)
	var logNum uint64
	if state != nil {
		logNum = state.LogNum
		checkVersion(fs, dir, listing, state, hist, foreign, rep, &out)
	} else {
		// Without a manifest there is no version to check against; still
		// tell the operator which tables are intact.
		for _, num := range listing.tableNums() {
			rep.Tables = append(rep.Tables, checkLooseTable(fs, dir, listing.tables[num], &out))
		}
	}
	noteExtractorFilters(rep, &out)
	checkLogs(fs, dir, listing, state, foreign, rep, &out)

	haveLogNum := false
	for _, f := range listing.logs {
		haveLogNum = haveLogNum || f.num == logNum
	}
	if state != nil && logNum > 0 && !haveLogNum {
		// The engine keeps the log the manifest's log number names until a
		// later edit moves the number past it, so its absence means the
		// writes since the last flush are gone, or the manifest lost its
		// latest edits (damage its tail looked like a crash's torn tail).
		// Log number 0 names no log, as Open reads it: a checkpoint's
		// manifest (every write is in its tables), or a new database's
		// first one before its first log was recorded.
		out.errorf(base.MakeFilename(base.FileTypeLog, logNum),
			"missing: the manifest's log number names this log, the oldest one whose writes are not in tables yet")
	}
	if replayed {
		// Without a replayed manifest there is no telling which manifest
		// is the live one (CURRENT may name the damaged one, or be
		// damaged itself), so none is called obsolete.
		for _, f := range listing.manifests {
			if f.name != rep.Manifest.Name && !foreign[f.name] {
				out.notef(f.name, "manifest not named by CURRENT (an older one, or a rewrite a crash interrupted); the next Open deletes it")
			}
		}
	}
	for _, f := range listing.temps {
		switch {
		case foreign[f.name]:
		case replayed:
			out.notef(f.name, "temporary file (%d bytes), never live; the next Open deletes it", f.size)
		default:
			out.notef(f.name, "temporary file (%d bytes), never live", f.size)
		}
	}
	for _, name := range listing.foreign {
		if name == lostDirName {
			noteLostDir(fs, dir, &out)
			continue
		}
		out.notef(name, "not a bloomkv file; ignored")
	}
	return rep
}

// foreignFiles returns the files of the directory that the engine did not
// write and never touches, each noted: those the manifest lists as
// foreign, and -- when the manifest records a database identity, so the
// engine reserves file numbers in it before use -- every file numbered at
// or past its next file number, which the next Open adds to the list.
func foreignFiles(listing *dirListing, state *manifest.State, out *findings) map[string]bool {
	foreign := map[string]bool{}
	if state == nil {
		return foreign
	}
	present := map[string]uint64{}
	for _, num := range listing.tableNums() {
		present[listing.tables[num].name] = num
	}
	for _, group := range [][]dirFile{listing.logs, listing.manifests, listing.temps} {
		for _, f := range group {
			present[f.name] = f.num
		}
	}
	listed := map[string]bool{}
	for _, name := range state.ForeignFiles {
		listed[name] = true
		if _, ok := present[name]; ok {
			foreign[name] = true
			out.notef(name, "foreign file, never touched (the manifest lists it: the engine did not write it)")
		} else {
			out.notef(name, "the manifest lists it as a foreign file, but it is gone; the next Open drops it from the list")
		}
	}
	if state.DBID == nil {
		return foreign
	}
	names := make([]string, 0, len(present))
	for name := range present {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if num := present[name]; num >= state.NextFileNum && !listed[name] {
			foreign[name] = true
			out.notef(name, "foreign file, never touched: numbered at or past the manifest's next file number %d, so the engine did not write it; the next Open records it as foreign",
				state.NextFileNum)
		}
	}
	return foreign
}

// noteLostDir notes the lost/ subdirectory, where recovery and repair put
// the files they do not keep.
func noteLostDir(fs vfs.FS, dir string, out *findings) {
	names, err := fs.List(fs.PathJoin(dir, lostDirName))
	if err != nil {
		out.notef(lostDirName+"/", "cannot be listed: %v", err)
		return
	}
	out.notef(lostDirName+"/", "%s set aside by point-in-time recovery or kvtool repair; never read or deleted", plural(len(names), "file"))
}

// loadManifest reads CURRENT and replays the manifest it names. It returns
// nil state when either cannot be read (the reason is an error finding, and
// rep.noManifest says it for the text report); the history is nil then too.
func loadManifest(fs vfs.FS, dir string, listing *dirListing, rep *checkReport, out *findings) (*manifest.State, *history) {
	currentName := base.MakeFilename(base.FileTypeCurrent, 0)
	name, err := manifest.ReadCurrent(fs, dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			out.errorf(currentName, "missing: the directory holds bloomkv files but no CURRENT, so Open cannot find the manifest")
		} else {
			out.errorf(currentName, "%v", err)
		}
		rep.noManifest = "none replayed: CURRENT cannot be read (see findings); tables checked on their own"
		return nil, nil
	}
	path := fs.PathJoin(dir, name)
	state, err := manifest.ReadManifest(fs, path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			out.errorf(name, "missing: CURRENT names it, but it is not in the directory")
			rep.noManifest = name + ": missing (see findings); tables checked on their own"
		} else {
			out.errorf(name, "does not replay, so Open fails: %v", err)
			rep.noManifest = name + ": does not replay (see findings); tables checked on their own"
		}
		return nil, nil
	}
	hist := readHistory(fs, path)
	if hist.err != nil {
		// ReadManifest accepted the file: only a race with a live
		// database writing it could get here.
		out.errorf(name, "reading the history: %v", hist.err)
	}
	info := &manifestInfo{
		Name: name, Bytes: hist.size, Edits: len(hist.edits),
		LogNum: state.LogNum, NextFileNum: state.NextFileNum, LastSeq: state.LastSeq,
		FlushedSeq: state.FlushedSeq, HasFlushedSeq: state.HasFlushedSeq, SyncedSeq: state.SyncedSeq,
		DBID: string(state.DBID),
	}
	if hist.torn {
		off := hist.tornOffset
		info.TornTailOffset = &off
		out.notef(name, "torn tail: the %d bytes from offset %d on are a partial edit (a crash artefact); the next Open drops them",
			hist.size-off, off)
	}
	rep.Manifest = info
	return state, hist
}

// checkVersion checks the live version: level invariants, every table
// against its file, orphans, and the read order across tables.
func checkVersion(fs vfs.FS, dir string, listing *dirListing, state *manifest.State, hist *history, foreign map[string]bool, rep *checkReport, out *findings) {
	v := state.Version
	if err := v.CheckInvariants(); err != nil {
		out.errorf(rep.Manifest.Name, "%v", err)
	}
	live := map[uint64]bool{}
	bad := map[uint64]bool{}
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		li := levelInfo{Level: level, Tables: len(files)}
		for _, m := range files {
			live[m.FileNum] = true
			onDisk, present := listing.tables[m.FileNum]
			res := checkLiveTable(fs, dir, level, m, onDisk, present, state.DBID, out)
			if res.Status != statusOK {
				bad[m.FileNum] = true
			}
			rep.Tables = append(rep.Tables, res)
			li.Bytes += int64(m.Size)
			li.Entries += res.Entries
		}
		li.Smallest, li.Largest = levelBounds(files)
		rep.Levels = append(rep.Levels, li)
	}
	events := hist.fileEvents()
	orphans := 0
	for _, num := range listing.tableNums() {
		f := listing.tables[num]
		switch {
		case live[num]:
		case foreign[f.name]:
			rep.Tables = append(rep.Tables, tableResult{File: f.name, FileNum: num, Size: f.size, Status: statusForeign})
		default:
			ev, known := events[num]
			rep.Tables = append(rep.Tables, orphanResult(f, ev, known, state.NextFileNum, state.DBID != nil, rep.Manifest.Name, out))
			orphans++
		}
	}
	if hist.torn && orphans > 0 {
		out.notef(rep.Manifest.Name, "its torn tail may be the edit that would have made the orphaned tables live (a flush or compaction the crash interrupted)")
	}
	st := checkReadOrder(fs, dir, v, bad, out)
	rep.Order = &st
}

// levelBounds returns the smallest and largest internal key of a level's
// files (level 0's files overlap, so every file counts).
func levelBounds(files []*manifest.FileMetadata) (smallest, largest string) {
	lo, hi := files[0].Smallest, files[0].Largest
	for _, f := range files[1:] {
		if base.CompareInternal(f.Smallest, lo) < 0 {
			lo = f.Smallest
		}
		if base.CompareInternal(f.Largest, hi) > 0 {
			hi = f.Largest
		}
	}
	return fmtKey(lo), fmtKey(hi)
}

// noteExtractorFilters says once, not per table, that filters built over a
// key extractor could not be checked for membership.
func noteExtractorFilters(rep *checkReport, out *findings) {
	n := 0
	for _, t := range rep.Tables {
		if strings.HasPrefix(t.Filter, filterUnverifiable) {
			n++
		}
	}
	if n > 0 {
		out.notef("", "%d tables have filters built over a key extractor (Options.FilterKey); kvtool cannot recompute their filter keys, so their filter membership was not verified (everything else was)", n)
	}
}
