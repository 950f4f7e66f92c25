package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// sharedDB is one database built once for the tests that only read it or
// damage a copy of it.
var sharedDB struct {
	once sync.Once
	dir  string
}

func cleanDB(t *testing.T) string {
	t.Helper()
	sharedDB.once.Do(func() {
		// Built outside any test's TempDir so it outlives the first test;
		// TestMain removes it.
		dir, err := os.MkdirTemp("", "kvtool-shared-")
		if err != nil {
			t.Fatal(err)
		}
		src := buildDB(t, smallDB)
		for _, name := range mustList(t, src) {
			data, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sharedDB.dir = dir
	})
	if sharedDB.dir == "" {
		t.Fatal("shared database was not built")
	}
	return copyDir(t, sharedDB.dir)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDB.dir != "" {
		os.RemoveAll(sharedDB.dir)
	}
	os.Exit(code)
}

func mustList(t testing.TB, dir string) []string {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestCheckClean(t *testing.T) {
	dir := cleanDB(t)
	code, out, errOut := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("check of a clean database exited %d:\n%s%s", code, out, errOut)
	}
	// Background work may leave an obsolete log behind at Close: a note.
	if strings.Contains(out, "ERROR") || strings.Contains(out, "WARN") {
		t.Errorf("clean database has errors or warnings:\n%s", out)
	}
	for _, want := range []string{"0 errors, 0 warnings", ": OK", "LEVEL", "TABLE", "LOG", "verified", "read order: scanned"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The database has tables at level 0 and deeper, and a live log with
	// the writes left unflushed: the check must have seen all of them.
	tables := filesOfType(t, dir, base.FileTypeTable)
	if len(tables) < 3 {
		t.Fatalf("test database has only %d tables", len(tables))
	}
	for _, name := range tables {
		if !strings.Contains(out, name) {
			t.Errorf("output does not list %s", name)
		}
	}
	if !strings.Contains(out, "L0 ") || !strings.Contains(out, "L6 ") {
		t.Errorf("expected tables at L0 and L6 (the last level under dynamic targets):\n%s", out)
	}
}

func TestCheckJSON(t *testing.T) {
	dir := cleanDB(t)
	code, out, _ := runTool(t, "check", "-json", dir)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep struct {
		Dir      string
		Manifest struct {
			Name    string
			Edits   int
			LastSeq uint64 `json:"last_seq"`
		}
		Tables []struct {
			File    string
			Level   *int
			Entries uint64
			Filter  string
			Status  string
		}
		Logs []struct {
			File    string
			Live    bool
			Ops     uint64
			LastSeq uint64 `json:"last_seq"`
			Status  string
		}
		ReadOrder struct {
			Entries  uint64
			UserKeys uint64 `json:"user_keys"`
		} `json:"read_order"`
		Findings []any
		Errors   int
		Warnings int
		OK       bool
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if !rep.OK || rep.Errors != 0 || rep.Warnings != 0 || rep.Dir != dir {
		t.Fatalf("report: ok=%v errors=%d warnings=%d findings=%v dir=%q", rep.OK, rep.Errors, rep.Warnings, rep.Findings, rep.Dir)
	}
	if !strings.HasPrefix(rep.Manifest.Name, "MANIFEST-") || rep.Manifest.Edits < 2 {
		t.Errorf("manifest %+v", rep.Manifest)
	}
	var entries uint64
	for _, tr := range rep.Tables {
		if tr.Status != statusOK || tr.Level == nil || tr.Filter != filterVerified {
			t.Errorf("table %+v", tr)
		}
		entries += tr.Entries
	}
	if len(rep.Tables) != len(filesOfType(t, dir, base.FileTypeTable)) {
		t.Errorf("%d tables reported", len(rep.Tables))
	}
	// buildDB: keys, then every third key overwritten or deleted.
	want := uint64(smallDB.keys + (smallDB.keys+2)/3)
	if entries != want || rep.ReadOrder.Entries != want || rep.ReadOrder.UserKeys != uint64(smallDB.keys) {
		t.Errorf("tables hold %d entries, read order scanned %d over %d user keys; want %d over %d",
			entries, rep.ReadOrder.Entries, rep.ReadOrder.UserKeys, want, smallDB.keys)
	}
	var logOps uint64
	for _, l := range rep.Logs {
		if l.Live {
			logOps += l.Ops
		}
	}
	if logOps != uint64(smallDB.unflushed) {
		t.Errorf("live logs hold %d operations, want %d", logOps, smallDB.unflushed)
	}
}

// TestCheckFlippedTableByte damages one byte of one table at random, many
// times: every table byte is covered by a checksum, so check must always
// fail and name the damaged file.
func TestCheckFlippedTableByte(t *testing.T) {
	src := cleanDB(t)
	tables := filesOfType(t, src, base.FileTypeTable)
	rng := rand.New(rand.NewPCG(5, 8))
	iters := 40
	if testing.Short() {
		iters = 10
	}
	for i := 0; i < iters; i++ {
		dir := copyDir(t, src)
		name := tables[rng.IntN(len(tables))]
		path := filepath.Join(dir, name)
		off := rng.Int64N(fileSize(t, path))
		mask := byte(1 << rng.IntN(8))
		xorByte(t, path, off, mask)
		code, out, _ := runTool(t, "check", "-q", dir)
		if code != exitProblems {
			t.Fatalf("%s byte %d ^= %#x: check exited %d:\n%s", name, off, mask, code, out)
		}
		wantFinding(t, out, "ERROR", name, "corruption")
	}
}

func TestCheckMissingTable(t *testing.T) {
	dir := cleanDB(t)
	name := filesOfType(t, dir, base.FileTypeTable)[0]
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", name, "missing", "not in the directory")
}

func TestCheckTruncatedTable(t *testing.T) {
	dir := cleanDB(t)
	name := filesOfType(t, dir, base.FileTypeTable)[1]
	path := filepath.Join(dir, name)
	if err := os.Truncate(path, fileSize(t, path)-10); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", name, "size mismatch")
	wantFinding(t, out, "ERROR", name, "footer")
}

func TestCheckOrphans(t *testing.T) {
	dir := cleanDB(t)
	tables := filesOfType(t, dir, base.FileTypeTable)
	data, err := os.ReadFile(filepath.Join(dir, tables[0]))
	if err != nil {
		t.Fatal(err)
	}
	// A table numbered past everything: the engine reserves numbers in
	// the manifest before use, so it did not write this one.
	if err := os.WriteFile(filepath.Join(dir, "999999.sst"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A table numbered inside the reservation that no edit added: an
	// interrupted flush's output.
	state := replayCurrent(t, dir)
	reserved := base.MakeFilename(base.FileTypeTable, state.NextFileNum-1)
	if err := os.WriteFile(filepath.Join(dir, reserved), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A table the history shows compacted away (buildDB compacts its
	// first round of flushes).
	deleted := deletedTable(t, dir)
	if err := os.WriteFile(filepath.Join(dir, deleted), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "000042.tmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("orphans alone are warnings, but check exited %d:\n%s", code, out)
	}
	wantFinding(t, out, "NOTE", "999999.sst", "foreign file, never touched", "next file number")
	wantFinding(t, out, "WARN", reserved, "orphaned table", "interrupted flush or compaction")
	wantFinding(t, out, "WARN", deleted, "orphaned table", "deleted from level", "by edit")
	wantFinding(t, out, "NOTE", "000042.tmp", "temporary file")
	if code, out, _ := runTool(t, "check", "-strict", dir); code != exitProblems {
		t.Fatalf("-strict with orphans exited %d:\n%s", code, out)
	}
}

// TestCheckLogTornTail cuts the live log inside its last record, in a
// crash image (a copy taken while the database was open): a crash
// artefact that Open drops silently, so check notes it and passes.
func TestCheckLogTornTail(t *testing.T) {
	dir := crashImage(t)
	logs := filesOfType(t, dir, base.FileTypeLog)
	path := filepath.Join(dir, logs[len(logs)-1])
	code, out, _ := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("an open database's image: check exited %d:\n%s", code, out)
	}
	if logsMapped {
		wantFinding(t, out, "NOTE", logs[len(logs)-1], "space reserved ahead of its records", "nothing lost")
	}
	if err := os.Truncate(path, recordsEnd(t, path)-5); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("a torn log tail is not an error, but check exited %d:\n%s", code, out)
	}
	wantFinding(t, out, "NOTE", logs[len(logs)-1], "torn tail")
}

// logsMapped: the engine writes write-through logs through a memory map
// on this system (64-bit Linux), so an open database's newest log ends in
// reserved space.
const logsMapped = runtime.GOOS == "linux" && math.MaxInt != math.MaxInt32

// recordsEnd returns where the records of the log at path end: before any
// space a memory-mapped log reserved ahead of them.
func recordsEnd(t testing.TB, path string) int64 {
	return eachLogRecord(t, path, func(*record.Reader, []byte) {}).EndOfLastRecord()
}

// eachLogRecord calls fn with every whole record of the log at path (its
// reserved space, if any, ends it cleanly) and returns the reader.
func eachLogRecord(t testing.TB, path string, fn func(r *record.Reader, rec []byte)) *record.Reader {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := record.NewReader(f, path)
	r.AllowReservedTail()
	for {
		rec, err := r.Next()
		if err != nil {
			return r
		}
		fn(r, rec)
	}
}

// crashImage returns a copy of a database taken while it was open, with
// writes in its log that the manifest does not record as synced: what a
// kill -9 leaves.
func crashImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db, err := bloomkv.Open(dir, &bloomkv.Options{MemtableSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := db.Put(testKey(i), testValue(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 150; i++ {
		if err := db.Put(testKey(i), testValue(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	// The engine may still be deleting an obsolete file: skip one that
	// vanishes between the listing and the copy.
	image := t.TempDir()
	for _, name := range mustList(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(image, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return image
}

// TestCheckLogTornTailSynced cuts the log of a cleanly closed database:
// Close recorded every write as synced, so the lost tail held
// acknowledged, synced writes, and Open refuses the database.
func TestCheckLogTornTailSynced(t *testing.T) {
	dir := cleanDB(t)
	logs := filesOfType(t, dir, base.FileTypeLog)
	path := filepath.Join(dir, logs[len(logs)-1])
	if err := os.Truncate(path, fileSize(t, path)-5); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "NOTE", logs[len(logs)-1], "torn tail")
	wantFinding(t, out, "ERROR", logs[len(logs)-1], "writes lost", "as durable")
	wantOpenRefuses(t, dir)
}

// TestCheckOlderLogTornTail: a torn tail is a crash artefact only in the
// newest log; in an older live log it is damage.
func TestCheckOlderLogTornTail(t *testing.T) {
	dir := crashImage(t)
	logs := filesOfType(t, dir, base.FileTypeLog)
	older := logs[len(logs)-1]
	// A newer live log with the next writes makes the torn one older.
	state := replayCurrent(t, dir)
	newer := base.MakeFilename(base.FileTypeLog, state.NextFileNum-1)
	path := filepath.Join(dir, older)
	size := fileSize(t, path)
	last := lastLogSeq(t, path)
	if err := os.Truncate(path, size-5); err != nil {
		t.Fatal(err)
	}
	writeBatchLog(t, filepath.Join(dir, newer), last+1, "newer")
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", older, "must read cleanly to its end")
	// The newer log's first write follows the lost tail's: the tail is the
	// damage, not a lost log, and Open stops at the damage.
	if strings.Contains(out, "sequence gap") {
		t.Errorf("the damage is also reported as a sequence gap:\n%s", out)
	}
	wantOpenRefuses(t, dir)
}

// writeLiveLog writes a live log (numbered inside the manifest's
// reservation, past every other log) holding recs, and returns its name.
func writeLiveLog(t *testing.T, dir string, recs ...[]byte) string {
	t.Helper()
	name := base.MakeFilename(base.FileTypeLog, replayCurrent(t, dir).NextFileNum-1)
	f, err := vfs.Default.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	l := walWriter(f)
	for _, rec := range recs {
		l.add(t, rec)
	}
	l.close(t)
	return name
}

// TestCheckSequenceInsideLog: the records of one log must follow each
// other too. Each gap and overlap is reported, and the log is read on
// past them (its statistics count every record).
func TestCheckSequenceInsideLog(t *testing.T) {
	dir := crashImage(t)
	logs := filesOfType(t, dir, base.FileTypeLog)
	// Sealed, as the engine seals a log before it starts the next: cut
	// back to its records.
	lastPath := filepath.Join(dir, logs[len(logs)-1])
	if err := os.Truncate(lastPath, recordsEnd(t, lastPath)); err != nil {
		t.Fatal(err)
	}
	last := lastLogSeq(t, lastPath)
	put := func(seq uint64, key string) []byte { return encodeBatch(seq, []testBatchOp{{key: key, value: "v"}}) }
	del := func(seq uint64, key string) []byte { return encodeBatch(seq, []testBatchOp{{del: true, key: key}}) }
	name := writeLiveLog(t, dir, put(last+1, "a"), put(last+4, "b"), del(last+2, "c"), put(last+3, "d"))
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", name, "sequence gap at the record at offset 24", fmt.Sprintf("writes %d-%d missing between two records of this log", last+2, last+3), "Open refuses")
	wantFinding(t, out, "ERROR", name, "sequence overlap at the record at offset 48", fmt.Sprintf("starts at sequence %d", last+2), fmt.Sprintf("the records before it in this log already reach %d", last+4))
	code, js, _ := runTool(t, "check", "-json", dir)
	var rep struct{ Logs []logResult }
	if err := json.Unmarshal([]byte(js), &rep); err != nil || code != exitProblems {
		t.Fatalf("exit %d, %v:\n%s", code, err, js)
	}
	l := rep.Logs[len(rep.Logs)-1]
	if l.File != name || l.Records != 4 || l.Ops != 4 || l.Deletes != 1 || l.FirstSeq != last+1 || l.LastSeq != last+3 || l.Status != "ok" {
		t.Errorf("log %+v", l)
	}
	wantOpenRefuses(t, dir)
}

// TestCheckEmptyBatch: the engine never logs a batch without operations,
// and Open refuses a log holding one; so does check.
func TestCheckEmptyBatch(t *testing.T) {
	dir := cleanDB(t)
	name := writeLiveLog(t, dir, encodeBatch(replayCurrent(t, dir).LastSeq+1, nil))
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", name, "record at offset 0", "no writes")
	wantOpenRefuses(t, dir)
}

// TestCheckObsoleteLogDamage: an obsolete log is not part of recovery, so
// damage in it is a warning (check still exits 0), and Open deletes it.
func TestCheckObsoleteLogDamage(t *testing.T) {
	dir := cleanDB(t)
	// A number below the log number that no file in dir has.
	used := map[uint64]bool{}
	for _, n := range mustList(t, dir) {
		if _, num, ok := base.ParseFilename(n); ok {
			used[num] = true
		}
	}
	num := replayCurrent(t, dir).LogNum - 1
	for used[num] {
		num--
	}
	name := base.MakeFilename(base.FileTypeLog, num)
	f, err := vfs.Default.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	l := walWriter(f)
	for i := range 3 { // intact records after the damage: not a torn tail
		l.add(t, encodeBatch(uint64(10+i), []testBatchOp{{key: "k", value: "v"}}))
	}
	l.close(t)
	xorByte(t, filepath.Join(dir, name), 30, 0x01) // inside the second record
	code, out, _ := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("damage in an obsolete log is a warning, but check exited %d:\n%s", code, out)
	}
	wantFinding(t, out, "NOTE", name, "obsolete log")
	wantFinding(t, out, "WARN", name, "at offset 24", "intact records follow")
	if code, _, _ := runTool(t, "check", "-strict", dir); code != exitProblems {
		t.Fatalf("-strict exited %d", code)
	}
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatalf("check reports only a warning, but Open fails: %v", err)
	}
	db.Close()
}

// wantOpenRefuses checks that the engine agrees with check's error.
func wantOpenRefuses(t testing.TB, dir string) {
	t.Helper()
	db, err := bloomkv.Open(dir, nil)
	if err == nil {
		db.Close()
		t.Fatalf("check reports an error, but Open accepts %s", dir)
	}
}

// TestCheckSequenceGap: a live log whose first write does not follow the
// writes before it (a log in between was lost) is an error naming the
// log and the record.
func TestCheckSequenceGap(t *testing.T) {
	dir := crashImage(t)
	logs := filesOfType(t, dir, base.FileTypeLog)
	// Sealed, as the engine seals a log before it starts the next: cut
	// back to its records.
	lastPath := filepath.Join(dir, logs[len(logs)-1])
	if err := os.Truncate(lastPath, recordsEnd(t, lastPath)); err != nil {
		t.Fatal(err)
	}
	last := lastLogSeq(t, lastPath)
	state := replayCurrent(t, dir)
	newer := base.MakeFilename(base.FileTypeLog, state.NextFileNum-1)
	writeBatchLog(t, filepath.Join(dir, newer), last+5, "gap")
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", newer, "sequence gap", "offset 0", fmt.Sprintf("writes %d-%d", last+1, last+4))
	wantOpenRefuses(t, dir)
}

// replayCurrent returns the state of the manifest CURRENT names.
func replayCurrent(t testing.TB, dir string) *manifest.State {
	t.Helper()
	name, err := manifest.ReadCurrent(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	state, err := manifest.ReadManifest(vfs.Default, filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// lastLogSeq returns the last sequence of the whole records of a log.
func lastLogSeq(t testing.TB, path string) uint64 {
	t.Helper()
	var last uint64
	eachLogRecord(t, path, func(r *record.Reader, rec []byte) {
		s, err := decodeBatch(rec, path, r.RecordOffset())
		if err != nil {
			t.Fatal(err)
		}
		last = s.seq + uint64(s.count) - 1
	})
	return last
}

// writeBatchLog writes a log holding one batch: a put of key at seq.
func writeBatchLog(t testing.TB, path string, seq uint64, key string) {
	t.Helper()
	rec := binary.LittleEndian.AppendUint64(nil, seq)
	rec = binary.LittleEndian.AppendUint32(rec, 1)
	rec = append(rec, byte(base.KindSet))
	rec = binary.AppendUvarint(rec, uint64(len(key)))
	rec = append(rec, key...)
	rec = binary.AppendUvarint(rec, 1)
	rec = append(rec, 'v')
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	l := walWriter(f)
	l.add(t, rec)
	l.close(t)
}

// TestCheckLogCorrupt damages the first block of a log that goes on past
// it: that is real damage, not a torn tail.
func TestCheckLogCorrupt(t *testing.T) {
	shape := smallDB
	shape.opts.MemtableSize = 1 << 20
	shape.unflushed = 2000 // about 80 KiB of log: two blocks and more
	dir := buildDB(t, shape)
	logs := filesOfType(t, dir, base.FileTypeLog)
	name := logs[len(logs)-1]
	path := filepath.Join(dir, name)
	if fileSize(t, path) <= 2*record.BlockSize {
		t.Fatalf("log %s is only %d bytes", name, fileSize(t, path))
	}
	xorByte(t, path, 100, 0x40)
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", name, "corruption")
}

// TestCheckBadBatch writes a log whose framing is intact but whose record
// is not a write batch.
func TestCheckBadBatch(t *testing.T) {
	dir := cleanDB(t)
	// A live log (numbered inside the manifest's reservation: one past it
	// would be foreign, and never read).
	name := base.MakeFilename(base.FileTypeLog, replayCurrent(t, dir).NextFileNum-1)
	f, err := vfs.Default.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	w := record.NewWriter(f)
	if _, err := w.AddRecord([]byte("not a batch at all")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", name, "record at offset 0")
}

func TestCheckMissingLog(t *testing.T) {
	dir := cleanDB(t)
	for _, name := range filesOfType(t, dir, base.FileTypeLog) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "the manifest's log number names this log") {
		t.Fatalf("missing log not reported:\n%s", out)
	}
}

func TestCheckManifestDamage(t *testing.T) {
	t.Run("first edit", func(t *testing.T) {
		dir := cleanDB(t)
		name := filesOfType(t, dir, base.FileTypeManifest)[0]
		xorByte(t, filepath.Join(dir, name), 8, 0x01) // inside the snapshot edit
		code, out, _ := runTool(t, "check", dir)
		if code != exitProblems {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		wantFinding(t, out, "ERROR", name)
		// Tables are still checked, on their own.
		for _, tbl := range filesOfType(t, dir, base.FileTypeTable) {
			if !strings.Contains(out, tbl) {
				t.Errorf("table %s not checked without a manifest", tbl)
			}
		}
	})
	t.Run("compaction edit", func(t *testing.T) {
		// Damage to an edit with intact edits after it is corruption, not a
		// crash's torn tail, even in the manifest's last block.
		dir := cleanDB(t)
		name := filesOfType(t, dir, base.FileTypeManifest)[0]
		hist := readHistory(vfs.Default, filepath.Join(dir, name))
		if len(hist.edits) < 8 {
			t.Fatalf("manifest has %d edits", len(hist.edits))
		}
		xorByte(t, filepath.Join(dir, name), hist.edits[len(hist.edits)-3].offset+10, 0x01)
		code, out, _ := runTool(t, "check", dir)
		if code != exitProblems {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		wantFinding(t, out, "ERROR", name, "intact records follow")
	})
	t.Run("CURRENT", func(t *testing.T) {
		dir := cleanDB(t)
		if err := os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-0000x3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runTool(t, "check", dir)
		if code != exitProblems {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		wantFinding(t, out, "ERROR", "CURRENT", "not a manifest name")
	})
	t.Run("no CURRENT", func(t *testing.T) {
		dir := cleanDB(t)
		if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runTool(t, "check", dir)
		if code != exitProblems {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		wantFinding(t, out, "ERROR", "CURRENT", "missing")
	})
}

func TestCheckNotADatabase(t *testing.T) {
	code, out, _ := runTool(t, "check", t.TempDir())
	if code != exitProblems || !strings.Contains(out, "not a database") {
		t.Fatalf("empty dir: exit %d:\n%s", code, out)
	}
	code, out, _ = runTool(t, "check", filepath.Join(t.TempDir(), "nope"))
	if code != exitProblems || !strings.Contains(out, "list") {
		t.Fatalf("missing dir: exit %d:\n%s", code, out)
	}
}

// TestCheckReadsOnly: check, sst and manifest leave every file as it was
// (no LOCK taken, nothing replayed, rewritten or deleted), even on a
// database with orphans and a torn log that Open would clean up.
func TestCheckReadsOnly(t *testing.T) {
	dir := cleanDB(t)
	tables := filesOfType(t, dir, base.FileTypeTable)
	data, _ := os.ReadFile(filepath.Join(dir, tables[0]))
	os.WriteFile(filepath.Join(dir, "999999.sst"), data, 0o644)
	before := snapshotDir(t, dir)
	runTool(t, "check", dir)
	runTool(t, "check", "-json", dir)
	runTool(t, "manifest", dir)
	runTool(t, "sst", "-blocks", filepath.Join(dir, tables[0]))
	after := snapshotDir(t, dir)
	if len(before) != len(after) {
		t.Fatalf("files before %v, after %v", keys(before), keys(after))
	}
	for name, content := range before {
		if after[name] != content {
			t.Errorf("%s changed", name)
		}
	}
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	m := map[string]string{}
	for _, name := range mustList(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		m[name] = string(data)
	}
	return m
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// deletedTable returns the name of a table that an edit of dir's manifest
// deleted and no later edit added back.
func deletedTable(t *testing.T, dir string) string {
	t.Helper()
	name := filesOfType(t, dir, base.FileTypeManifest)[0]
	h := readHistory(vfs.Default, filepath.Join(dir, name))
	for num, ev := range h.fileEvents() {
		if ev.deleted > 0 {
			return base.MakeFilename(base.FileTypeTable, num)
		}
	}
	t.Fatalf("no edit of %s deletes a table", name)
	return ""
}

// TestCheckTableIdentity: a valid table in another live table's place is
// caught by the file number its properties record.
func TestCheckTableIdentity(t *testing.T) {
	dir := cleanDB(t)
	tables := filesOfType(t, dir, base.FileTypeTable)
	data, err := os.ReadFile(filepath.Join(dir, tables[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tables[1]), data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	_, num, _ := base.ParseFilename(tables[0])
	wantFinding(t, out, "ERROR", tables[1], "not the table the manifest lists", fmt.Sprintf("says it is file %06d", num))
}

// TestCheckForeignListed: a file the manifest lists as foreign is noted,
// never read, and neither an orphan nor a live log.
func TestCheckForeignListed(t *testing.T) {
	dir := cleanDB(t)
	for _, name := range []string{"999999.sst", "999998.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("not ours"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := bloomkv.Open(dir, nil) // records them as foreign
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if ff := replayCurrent(t, dir).ForeignFiles; len(ff) != 2 {
		t.Fatalf("the manifest lists %v as foreign", ff)
	}
	code, out, _ := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "NOTE", "999999.sst", "foreign file, never touched", "the manifest lists it")
	wantFinding(t, out, "NOTE", "999998.log", "foreign file, never touched", "the manifest lists it")
	if strings.Contains(out, "WARN") {
		t.Errorf("warnings:\n%s", out)
	}
}
