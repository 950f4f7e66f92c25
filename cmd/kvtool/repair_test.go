package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// kvModel is what a test database should hold: the newest value of every
// key written (nil once deleted), and every value a key ever had, so that
// a repair that has to fall back to an older version can be told from one
// that invents data.
type kvModel struct {
	cur  map[string][]byte
	hist map[string]map[string]bool
}

func newModel() *kvModel {
	return &kvModel{cur: map[string][]byte{}, hist: map[string]map[string]bool{}}
}

func (m *kvModel) put(k string, v []byte) {
	m.cur[k] = v
	if m.hist[k] == nil {
		m.hist[k] = map[string]bool{}
	}
	m.hist[k][string(v)] = true
}

func (m *kvModel) del(k string) { m.cur[k] = nil }

// modelShape says how buildModelDB writes.
type modelShape struct {
	keys, rounds, opsPerRound int
	unflushed                 int // operations left only in the log at Close
	opts                      bloomkv.Options
}

var repairShape = modelShape{
	keys: 400, rounds: 4, opsPerRound: 300, unflushed: 120,
	opts: bloomkv.Options{MemtableSize: 8 << 10, BlockSize: 512, TargetFileSize: 4 << 10, L0CompactionThreshold: 8},
}

// buildModelDB writes random puts and deletes (in batches and alone)
// through the public API: rounds flushed, the first compacted into the
// levels, the later ones left in level 0, and some operations only in the
// log. It returns the closed directory and the model.
func buildModelDB(t testing.TB, seed uint64, shape modelShape) (string, *kvModel) {
	t.Helper()
	dir := t.TempDir()
	opts := shape.opts
	db, err := bloomkv.Open(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	m := newModel()
	rng := rand.New(rand.NewPCG(seed, 99))
	ops := func(n, round int) {
		b := bloomkv.NewBatch()
		type op struct {
			k string
			v []byte
		}
		var pending []op
		for i := 0; i < n; i++ {
			k := string(testKey(rng.IntN(shape.keys)))
			var v []byte
			if rng.IntN(10) < 7 {
				v = fmt.Appendf(nil, "%s=r%d.%d", k, round, i)
				b.Put([]byte(k), v)
			} else {
				b.Delete([]byte(k))
			}
			pending = append(pending, op{k, v})
			if rng.IntN(4) == 0 || i == n-1 {
				must(db.Write(b))
				for _, o := range pending {
					if o.v == nil {
						m.del(o.k)
					} else {
						m.put(o.k, o.v)
					}
				}
				b.Reset()
				pending = pending[:0]
			}
		}
	}
	for r := 0; r < shape.rounds; r++ {
		ops(shape.opsPerRound, r)
		must(db.Flush())
		if r == 0 {
			must(db.Compact(nil, nil))
		}
	}
	ops(shape.unflushed, shape.rounds)
	must(db.Close())
	return dir, m
}

// verifyModel opens dir and compares every key with the model. Keys in
// loose may instead hold any value they ever had, or be absent (their
// newest version was in a damaged file). It fails on a key the model never
// had.
func verifyModel(t testing.TB, dir string, m *kvModel, loose map[string]bool) {
	t.Helper()
	verifyModelOpts(t, dir, nil, m, loose)
}

// verifyModelOpts is verifyModel with options (another file system).
func verifyModelOpts(t testing.TB, dir string, opts *bloomkv.Options, m *kvModel, loose map[string]bool) {
	t.Helper()
	db, err := bloomkv.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open after repair: %v", err)
	}
	defer db.Close()
	for k, want := range m.cur {
		got, err := db.Get([]byte(k))
		if errors.Is(err, bloomkv.ErrNotFound) {
			got, err = nil, nil
		}
		if err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
		switch {
		case bytes.Equal(got, want) && (got == nil) == (want == nil):
		case loose[k] && (got == nil || m.hist[k][string(got)]):
		default:
			t.Errorf("Get(%s) = %q, want %q", k, got, want)
		}
	}
	it := db.NewIterator(nil)
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key())
		if _, known := m.cur[k]; !known {
			t.Errorf("key %q was never written", k)
		}
		n++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("repaired database is empty")
	}
}

// fileContents returns the content of every regular file in dir and, if
// it exists, dir/lost/, as a multiset.
func fileContents(t testing.TB, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, d := range []string{dir, filepath.Join(dir, lostDirName)} {
		entries, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[string(data)]++
		}
	}
	return out
}

// wantNothingDeleted fails unless every original content is still found
// in dir or dir/lost/ (as often as it was).
func wantNothingDeleted(t testing.TB, before map[string]int, dir string) {
	t.Helper()
	after := fileContents(t, dir)
	for content, n := range before {
		if after[content] < n {
			t.Errorf("a file of %d bytes (%q...) is gone: %d copies before, %d after", len(content), trunc(content), n, after[content])
		}
	}
}

func trunc(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

// runRepairOK runs repair on dir and fails the test unless it commits.
func runRepairOK(t testing.TB, dir string) *repairReport {
	t.Helper()
	rep := repair(vfs.Default, dir)
	var buf bytes.Buffer
	renderRepair(&buf, rep)
	if !rep.OK {
		t.Fatalf("repair failed:\n%s", buf.String())
	}
	t.Logf("%s", buf.String())
	return rep
}

// wantCheckOK runs kvtool check on dir and fails unless it passes.
func wantCheckOK(t testing.TB, dir string) {
	t.Helper()
	code, out, errOut := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("check of the repaired database exited %d:\n%s%s", code, out, errOut)
	}
}

func inLost(t testing.TB, dir, name string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, lostDirName, name))
	return err == nil
}

func tableResultOf(rep *repairReport, name string) *repairTableResult {
	for i := range rep.Tables {
		if rep.Tables[i].File == name {
			return &rep.Tables[i]
		}
	}
	return nil
}

// (a) CURRENT deleted: Open refuses, repair brings back every write.
func TestRepairLostCurrent(t *testing.T) {
	dir, m := buildModelDB(t, 1, repairShape)
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
	if db, err := bloomkv.Open(dir, nil); err == nil {
		db.Close()
		t.Fatal("Open succeeded without CURRENT")
	} else if !strings.Contains(err.Error(), "kvtool repair") {
		t.Fatalf("Open's refusal does not point at repair: %v", err)
	}
	before := fileContents(t, dir)
	code, out, errOut := runTool(t, "repair", dir)
	if code != exitOK {
		t.Fatalf("repair exited %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"CURRENT is missing", "merged", "new tables at level 6", "new manifest", "repaired: "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	wantNothingDeleted(t, before, dir)
	verifyModel(t, dir, m, nil)
	wantCheckOK(t, dir)
}

// (b) A flipped byte in one table: that table goes to lost/, everything
// else is recovered, and nothing is invented.
func TestRepairDamagedTable(t *testing.T) {
	dir, m := buildModelDB(t, 2, repairShape)
	tables := filesOfType(t, dir, base.FileTypeTable)
	if len(tables) < 3 {
		t.Fatalf("only %d tables", len(tables))
	}
	victim := tables[len(tables)/2]
	// The keys with a version in the victim may fall back to an older
	// version (or vanish): read them before the damage.
	loose := map[string]bool{}
	for _, k := range tableUserKeys(t, filepath.Join(dir, victim)) {
		loose[k] = true
	}
	xorByte(t, filepath.Join(dir, victim), 20, 0x10) // inside the first data block
	if db, err := bloomkv.Open(dir, nil); err == nil {
		// Open reads tables lazily; the damage shows at the first read.
		db.Close()
	}
	before := fileContents(t, dir)
	rep := runRepairOK(t, dir)
	tr := tableResultOf(rep, victim)
	if tr == nil || tr.Status != repairDamaged || !strings.Contains(tr.Reason, "checksum") {
		t.Fatalf("victim %s reported as %+v", victim, tr)
	}
	if !inLost(t, dir, victim) {
		t.Errorf("%s is not in lost/", victim)
	}
	if _, err := os.Stat(filepath.Join(dir, victim)); err == nil {
		t.Errorf("%s is still in the directory", victim)
	}
	for _, name := range tables {
		if name != victim && tableResultOf(rep, name).Status != repairMerged {
			t.Errorf("%s: %+v", name, tableResultOf(rep, name))
		}
	}
	wantNothingDeleted(t, before, dir)
	verifyModel(t, dir, m, loose)
	wantCheckOK(t, dir)
}

// tableUserKeys returns the distinct user keys of a table.
func tableUserKeys(t testing.TB, path string) []string {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.Open(f, path, 0, fileSize(t, path), sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it := r.NewIter(false)
	defer it.Close()
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		k := string(base.UserKey(it.Key()))
		if len(keys) == 0 || keys[len(keys)-1] != k {
			keys = append(keys, k)
		}
	}
	return keys
}

// (c) Damage in the middle of a log: the records before it are kept, the
// ones after it are not, and the log goes to lost/.
func TestRepairLogDamage(t *testing.T) {
	dir := t.TempDir()
	db, err := bloomkv.Open(dir, &bloomkv.Options{MemtableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000 // 10 per batch, about 100 KiB of log: several blocks
	value := bytes.Repeat([]byte("v"), 40)
	b := bloomkv.NewBatch()
	for i := 0; i < n; i++ {
		b.Put(testKey(i), value)
		if b.Len() == 10 {
			if err := db.Write(b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs := filesOfType(t, dir, base.FileTypeLog)
	name := logs[len(logs)-1]
	path := filepath.Join(dir, name)
	if fileSize(t, path) < 3*record.BlockSize {
		t.Fatalf("log %s is only %d bytes", name, fileSize(t, path))
	}
	damageAt := int64(record.BlockSize + 1000)
	xorByte(t, path, damageAt, 0x04)
	if db, err := bloomkv.Open(dir, nil); err == nil {
		db.Close()
		t.Fatal("Open accepted a log damaged in the middle")
	}
	before := fileContents(t, dir)
	rep := runRepairOK(t, dir)
	var lr *repairLogResult
	for i := range rep.Logs {
		if rep.Logs[i].File == name {
			lr = &rep.Logs[i]
		}
	}
	if lr == nil || lr.Status != logDamaged || lr.DroppedBytes == 0 || lr.DroppedAt == nil || *lr.DroppedAt > damageAt {
		t.Fatalf("log reported as %+v", lr)
	}
	if !inLost(t, dir, name) {
		t.Errorf("%s is not in lost/", name)
	}
	wantNothingDeleted(t, before, dir)

	// A prefix of the batches survives: keys 0..kept-1, nothing after.
	db, err = bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	kept := 0
	for kept < n {
		if _, err := db.Get(testKey(kept)); err != nil {
			break
		}
		kept++
	}
	if kept == 0 || kept == n || kept%10 != 0 || kept != lr.Records*10 {
		t.Fatalf("%d keys kept, %d records reported", kept, lr.Records)
	}
	for i := kept; i < n; i++ {
		if _, err := db.Get(testKey(i)); !errors.Is(err, bloomkv.ErrNotFound) {
			t.Fatalf("key %d after the damage: %v", i, err)
		}
	}
	db.Close()
	wantCheckOK(t, dir)
}

// (d) Versions of one key at different levels, where the deeper table
// has the larger LargestSeq: putting every table in level 0 (ordered by
// LargestSeq) would serve the older version. Repair serves the newest.
func TestRepairNewestVersionAcrossLevels(t *testing.T) {
	dir := t.TempDir()
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A deep table [a, y] holding k's old version.
	must(db.Put([]byte("a"), []byte("a1")))
	must(db.Put([]byte("k"), []byte("old")))
	must(db.Put([]byte("y"), []byte("y1")))
	must(db.Compact(nil, nil))
	// k's new version, flushed to level 0.
	must(db.Put([]byte("k"), []byte("new")))
	must(db.Flush())
	// A newer write to l, compacted by range: the level-0 table holding
	// only k stays, and the deep table is rewritten with l in it, so it
	// gets the larger LargestSeq while still holding k's old version.
	must(db.Put([]byte("l"), []byte("l1")))
	must(db.Compact([]byte("l"), []byte("l")))
	if got, err := db.Get([]byte("k")); err != nil || string(got) != "new" {
		t.Fatalf("before the repair: Get(k) = %q, %v", got, err)
	}
	must(db.Close())

	// The construction holds: a level-0 table with k's newest version,
	// and a deeper one with an older k but a larger LargestSeq.
	vs, _, err := manifest.LoadVersionSet(vfs.Default, dir, manifest.Options{MaxManifestSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	v := vs.State().Version
	var shallow, deep *manifest.FileMetadata
	for level, files := range v.Levels {
		for _, f := range files {
			keys := tableUserKeys(t, filepath.Join(dir, base.MakeFilename(base.FileTypeTable, f.FileNum)))
			switch {
			case level == 0 && len(keys) == 1 && keys[0] == "k":
				shallow = f
			case level > 0 && len(keys) == 4:
				deep = f
			}
		}
	}
	if shallow == nil || deep == nil || deep.LargestSeq <= shallow.LargestSeq {
		t.Fatalf("construction failed: shallow %v, deep %v, version %+v", shallow, deep, v.Levels)
	}

	// Naive placement, every table in level 0, returns the old version.
	naive := copyDir(t, dir)
	writeNaiveManifest(t, naive, vs.State(), []*manifest.FileMetadata{shallow, deep})
	ndb, err := bloomkv.Open(naive, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ndb.Get([]byte("k")); err != nil || string(got) != "old" {
		t.Fatalf("naive level-0 placement: Get(k) = %q, %v; the test expects it to show the old version", got, err)
	}
	ndb.Close()

	must(os.Remove(filepath.Join(dir, "CURRENT")))
	runRepairOK(t, dir)
	m := newModel()
	for k, v := range map[string]string{"a": "a1", "k": "new", "l": "l1", "y": "y1"} {
		m.put(k, []byte(v))
	}
	verifyModel(t, dir, m, nil)
	wantCheckOK(t, dir)
}

// writeNaiveManifest replaces the database's manifest with one listing
// the given tables, all in level 0.
func writeNaiveManifest(t testing.TB, dir string, old *manifest.State, tables []*manifest.FileMetadata) {
	t.Helper()
	edit := &manifest.VersionEdit{}
	lastSeq := uint64(0)
	for _, f := range tables {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: f})
		lastSeq = max(lastSeq, f.LargestSeq)
	}
	b := manifest.NewBuilder(nil)
	if err := b.Apply(edit); err != nil {
		t.Fatal(err)
	}
	v, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	num := old.NextFileNum + 10
	logName := filepath.Join(dir, base.MakeFilename(base.FileTypeLog, num))
	if err := os.WriteFile(logName, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	state := &manifest.State{
		Version: v, LogNum: num, NextFileNum: num + 2, LastSeq: lastSeq,
		FlushedSeq: lastSeq, HasFlushedSeq: true, SyncedSeq: lastSeq, DBID: old.DBID,
	}
	vs := manifest.NewVersionSet(vfs.Default, dir, state, manifest.Options{MaxManifestSize: 1 << 20})
	if err := vs.WriteSnapshot(func() (uint64, uint64) { return num + 1, num + 2 }); err != nil {
		t.Fatal(err)
	}
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
}

// (e) Repair deletes nothing: with a damaged table, a log damaged in the
// middle, a stray temporary file, an orphaned table, a table of another
// database and a file numbered past the manifest's reservation, every
// original file's bytes are still in the directory or in lost/, and the
// foreign files are untouched in place.
func TestRepairNeverDeletes(t *testing.T) {
	dir, _ := buildModelDB(t, 5, repairShape)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	next := replayCurrent(t, dir).NextFileNum
	tables := filesOfType(t, dir, base.FileTypeTable)
	xorByte(t, filepath.Join(dir, tables[0]), 30, 0x01)
	logs := filesOfType(t, dir, base.FileTypeLog)
	logPath := filepath.Join(dir, logs[len(logs)-1])
	xorByte(t, logPath, fileSize(t, logPath)/3, 0x01)
	// Inside the reservation: the engine's leftovers, which repair uses
	// or moves to lost/.
	tmp := base.MakeFilename(base.FileTypeTemp, next-1)
	must(os.WriteFile(filepath.Join(dir, tmp), []byte("MANIFEST-000777\n"), 0o644))
	data, err := os.ReadFile(filepath.Join(dir, tables[1]))
	must(err)
	orphan := base.MakeFilename(base.FileTypeTable, next-2)
	must(os.WriteFile(filepath.Join(dir, orphan), data, 0o644)) // a copy of a live table
	// Foreign: a table of another database, and a file past the
	// reservation.
	foreignTable := writeForeignTable(t, dir, next-3)
	past := base.MakeFilename(base.FileTypeLog, next+5)
	must(os.WriteFile(filepath.Join(dir, past), []byte("not a log of ours"), 0o644))
	foreign := map[string][]byte{}
	for _, name := range []string{foreignTable, past} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		must(err)
		foreign[name] = data
	}
	// lost/ already holds a file named like one repair moves.
	must(os.MkdirAll(filepath.Join(dir, lostDirName), 0o755))
	must(os.WriteFile(filepath.Join(dir, lostDirName, tables[0]), []byte("an earlier loss"), 0o644))
	// CURRENT goes too, so that Open refuses the directory.
	must(os.Remove(filepath.Join(dir, "CURRENT")))

	before := fileContents(t, dir)
	rep := runRepairOK(t, dir)
	wantNothingDeleted(t, before, dir)
	if !inLost(t, dir, tables[0]+".1") {
		t.Errorf("the damaged table did not get a suffixed name in lost/: %+v", rep.Moved)
	}
	for _, name := range []string{tmp, orphan} {
		if !inLost(t, dir, name) {
			t.Errorf("%s is not in lost/", name)
		}
	}
	for name, data := range foreign {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("foreign file %s changed or moved: %v", name, err)
		}
	}
	if tr := tableResultOf(rep, foreignTable); tr == nil || tr.Status != repairForeign || !strings.Contains(tr.Reason, "another-database") {
		t.Errorf("foreign table reported as %+v", tr)
	}
	wantForeign := []string{foreignTable, past}
	sort.Strings(wantForeign)
	if fmt.Sprint(rep.ForeignFiles) != fmt.Sprint(wantForeign) {
		t.Errorf("foreign files %v, want %v", rep.ForeignFiles, wantForeign)
	}
	if ff := replayCurrent(t, dir).ForeignFiles; fmt.Sprint(ff) != fmt.Sprint(wantForeign) {
		t.Errorf("the new manifest's foreign files: %v", ff)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("check exited %d:\n%s", code, out)
	}
	for _, name := range wantForeign {
		wantFinding(t, out, "NOTE", name, "foreign file, never touched")
	}
}

// writeForeignTable writes a valid table of another database as num.sst
// and returns its name.
func writeForeignTable(t testing.TB, dir string, num uint64) string {
	t.Helper()
	name := base.MakeFilename(base.FileTypeTable, num)
	f, err := vfs.Default.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{FileNum: num, DBID: []byte("another-database")})
	for i := 0; i < 10; i++ {
		if err := w.Add(base.MakeInternalKey(testKey(i), uint64(i+1), base.KindSet), []byte("foreign")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return name
}

// (f) Repairing a healthy, closed database keeps all of its data.
func TestRepairHealthy(t *testing.T) {
	dir, m := buildModelDB(t, 6, repairShape)
	before := fileContents(t, dir)
	defer func(size uint64) { repairTargetTableSize = size }(repairTargetTableSize)
	repairTargetTableSize = 2 << 10 // several output tables
	rep := runRepairOK(t, dir)
	if !rep.Trusted {
		t.Errorf("the manifest of a healthy database is not trusted: %+v", rep.Findings)
	}
	if len(rep.NewTables) < 3 {
		t.Errorf("%d new tables of at most about 2 KiB", len(rep.NewTables))
	}
	for _, f := range rep.Findings {
		if f.Severity != sevNote {
			t.Errorf("finding on a healthy database: %+v", f)
		}
	}
	for _, tr := range rep.Tables {
		if tr.Status != repairMerged {
			t.Errorf("table %+v", tr)
		}
	}
	wantNothingDeleted(t, before, dir)
	verifyModel(t, dir, m, nil)
	wantCheckOK(t, dir)

	// Repairing again changes no data; the tables of the first repair
	// are what the second one merges.
	rep2 := runRepairOK(t, dir)
	if rep2.KeysOut != rep.KeysOut || rep2.LastSeq != rep.LastSeq {
		t.Errorf("second repair: %d keys up to %d, first: %d up to %d", rep2.KeysOut, rep2.LastSeq, rep.KeysOut, rep.LastSeq)
	}
	verifyModel(t, dir, m, nil)
}

// An obsolete log and a table compacted away, left behind by a crash, are
// superseded when the manifest vouches for their writes: merging them
// could bring back a key whose deletion a compaction dropped together
// with the value it deleted.
func TestRepairSupersededLeftovers(t *testing.T) {
	dir := t.TempDir()
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Put([]byte("gone"), []byte("resurrected?")))
	must(db.Put([]byte("kept"), []byte("v")))
	// Keep a copy of the log and of the table it is flushed to, before
	// both become obsolete.
	leftovers := map[string][]byte{}
	keep := func(ft base.FileType) {
		for _, name := range filesOfType(t, dir, ft) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, os.ErrNotExist) {
				continue // an obsolete file the engine just deleted
			}
			must(err)
			leftovers[name] = data
		}
	}
	keep(base.FileTypeLog)
	must(db.Flush())
	keep(base.FileTypeTable)
	must(db.Delete([]byte("gone")))
	must(db.Compact(nil, nil)) // the deletion and the value both dropped
	must(db.Close())
	// The leftovers come back, as if their deletion had not happened.
	oldLog := ""
	for name, data := range leftovers {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			continue // still live
		}
		if strings.HasSuffix(name, ".log") && len(data) > 0 {
			oldLog = name
		}
		must(os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	if oldLog == "" {
		t.Fatalf("no obsolete log with data among %v", keys2(leftovers))
	}
	rep := runRepairOK(t, dir)
	if !rep.Trusted {
		t.Fatalf("manifest not trusted: %+v", rep.Findings)
	}
	superseded := 0
	for _, tr := range rep.Tables {
		if tr.Status == repairSuperseded {
			superseded++
		}
	}
	for _, l := range rep.Logs {
		superseded += l.Superseded
	}
	if superseded < 2 {
		t.Errorf("expected the old table and the old log's records superseded: %+v %+v", rep.Tables, rep.Logs)
	}
	m := newModel()
	m.put("kept", []byte("v"))
	m.put("gone", []byte("resurrected?"))
	m.del("gone")
	verifyModel(t, dir, m, nil)
	wantCheckOK(t, dir)
}

func keys2(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRepairRefuses(t *testing.T) {
	t.Run("locked", func(t *testing.T) {
		dir, _ := buildModelDB(t, 7, modelShape{keys: 50, rounds: 1, opsPerRound: 50, unflushed: 10})
		db, err := bloomkv.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		before := snapshotDir(t, dir)
		code, out, errOut := runTool(t, "repair", dir)
		if code != exitProblems || !strings.Contains(errOut, "is in use") || !strings.Contains(out, "NOT REPAIRED") {
			t.Fatalf("repair of an open database: exit %d\n%s%s", code, out, errOut)
		}
		wantSameDir(t, before, snapshotDir(t, dir))
	})
	t.Run("empty", func(t *testing.T) {
		code, _, errOut := runTool(t, "repair", t.TempDir())
		if code != exitProblems || !strings.Contains(errOut, "nothing to repair") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("missing", func(t *testing.T) {
		code, _, errOut := runTool(t, "repair", filepath.Join(t.TempDir(), "nope"))
		if code != exitProblems || !strings.Contains(errOut, "no such file") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("nothing intact", func(t *testing.T) {
		dir, _ := buildModelDB(t, 8, modelShape{keys: 50, rounds: 2, opsPerRound: 50, opts: bloomkv.Options{MemtableSize: 1 << 20}})
		for _, name := range filesOfType(t, dir, base.FileTypeTable) {
			xorByte(t, filepath.Join(dir, name), 3, 0xff)
		}
		for _, name := range filesOfType(t, dir, base.FileTypeLog) {
			if path := filepath.Join(dir, name); fileSize(t, path) > 0 {
				xorByte(t, path, 0, 0xff)
			}
		}
		before := snapshotDir(t, dir)
		code, out, errOut := runTool(t, "repair", dir)
		if code != exitProblems || !strings.Contains(errOut, "nothing could be repaired") {
			t.Fatalf("exit %d:\n%s%s", code, out, errOut)
		}
		after := snapshotDir(t, dir)
		delete(after, "LOCK")
		delete(before, "LOCK")
		wantSameDir(t, before, after)
	})
}

func wantSameDir(t testing.TB, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("files before %v, after %v", keys(before), keys(after))
	}
	for name, content := range before {
		if after[name] != content {
			t.Errorf("%s changed", name)
		}
	}
}

// The JSON report has the fields docs/kvtool.md promises.
func TestRepairJSON(t *testing.T) {
	dir, _ := buildModelDB(t, 9, modelShape{keys: 100, rounds: 2, opsPerRound: 100, unflushed: 20,
		opts: bloomkv.Options{MemtableSize: 4 << 10}})
	os.Remove(filepath.Join(dir, "CURRENT"))
	code, out, errOut := runTool(t, "repair", "-json", dir)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, field := range []string{"dir", "manifest", "dbid", "dbid_from", "tables", "logs", "settings", "new_tables",
		"entries_in", "keys_out", "smallest_seq", "largest_seq", "last_seq", "new_manifest", "new_log",
		"foreign_files", "moved", "findings", "committed", "ok"} {
		if _, ok := rep[field]; !ok {
			t.Errorf("JSON report lacks %q", field)
		}
	}
	if rep["ok"] != true || rep["committed"] != true {
		t.Errorf("ok=%v committed=%v", rep["ok"], rep["committed"])
	}
}

// partitionRuns puts tables whose ranges meet in different runs, and
// uses no more runs than the deepest overlap.
func TestPartitionRuns(t *testing.T) {
	ik := func(k string, seq uint64) []byte { return base.MakeInternalKey([]byte(k), seq, base.KindSet) }
	tables := []runTable{
		{name: "1", smallest: ik("a", 1), largest: ik("f", 1)},
		{name: "2", smallest: ik("g", 2), largest: ik("m", 2)},
		{name: "3", smallest: ik("c", 9), largest: ik("h", 9)}, // overlaps 1 and 2
		{name: "4", smallest: ik("n", 3), largest: ik("z", 3)},
		{name: "5", smallest: ik("f", 0), largest: ik("f", 0)}, // same user key as 1's largest, older
	}
	runs := partitionRuns(tables)
	if len(runs) != 2 {
		t.Fatalf("%d runs: %v", len(runs), runs)
	}
	for _, r := range runs {
		for i := 1; i < len(r); i++ {
			if base.CompareInternal(r[i-1].largest, r[i].smallest) >= 0 {
				t.Errorf("run %v: %s meets %s", r, r[i-1].name, r[i].name)
			}
		}
	}
}

// Damage in one log does not stop the next: its intact writes are kept,
// and the gap they leave is reported.
func TestRepairKeepsLaterLogs(t *testing.T) {
	dir, _ := buildModelDB(t, 10, modelShape{keys: 100, rounds: 1, opsPerRound: 100, unflushed: 200,
		opts: bloomkv.Options{MemtableSize: 1 << 20}})
	logs := filesOfType(t, dir, base.FileTypeLog)
	older := filepath.Join(dir, logs[len(logs)-1])
	last := lastLogSeq(t, older)
	xorByte(t, older, fileSize(t, older)/2, 0x20)
	newer := base.MakeFilename(base.FileTypeLog, replayCurrent(t, dir).NextFileNum-1)
	writeBatchLog(t, filepath.Join(dir, newer), last+1, "later")

	rep := runRepairOK(t, dir)
	warned := false
	for _, f := range rep.Findings {
		warned = warned || f.Severity == sevWarning && f.File == newer && strings.Contains(f.Message, "missing between")
	}
	if !warned {
		t.Errorf("no warning about the gap: %+v", rep.Findings)
	}
	lost := false
	for _, f := range rep.Findings {
		lost = lost || f.Severity == sevError && strings.Contains(f.Message, "holds writes") &&
			strings.Contains(f.Message, fmt.Sprintf("-%d: lost", last))
	}
	if !lost {
		t.Errorf("the synced writes lost in the damaged log are not reported: %+v", rep.Findings)
	}
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("later")); err != nil || string(v) != "v" {
		t.Fatalf("the later log's write: %q, %v", v, err)
	}
}

// A foreign table the repaired manifest lists survives the next Open.
func TestRepairForeignSurvivesOpen(t *testing.T) {
	dir, _ := buildModelDB(t, 11, repairShape)
	foreign := writeForeignTable(t, dir, replayCurrent(t, dir).NextFileNum-3)
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
	runRepairOK(t, dir)
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, foreign)); err != nil {
		t.Fatalf("foreign table %s: %v", foreign, err)
	}
}
