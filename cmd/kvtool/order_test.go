package main

import (
	"path/filepath"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// handTable is a table for handDB: its level and its entries (user key and
// sequence; every entry is a set of value "v").
type handTable struct {
	num     uint64
	level   int
	entries []handEntry
}

type handEntry struct {
	key string
	seq uint64
}

// handDB writes a database directly with the format packages, so a test
// can build states the engine never would. The manifest's log number names
// an empty log that exists, and the last sequence covers every table.
func handDB(t *testing.T, tables []handTable) string {
	t.Helper()
	dir := t.TempDir()
	fs := vfs.Default
	v := &manifest.Version{}
	var lastSeq, maxNum uint64
	for _, ht := range tables {
		f, err := fs.Create(filepath.Join(dir, base.MakeFilename(base.FileTypeTable, ht.num)))
		if err != nil {
			t.Fatal(err)
		}
		w := sstable.NewWriter(f, sstable.WriterOptions{BloomBitsPerKey: 10})
		for _, e := range ht.entries {
			if err := w.Add(base.MakeInternalKey([]byte(e.key), e.seq, base.KindSet), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		m, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		v.Levels[ht.level] = append(v.Levels[ht.level], &manifest.FileMetadata{
			FileNum: ht.num, Size: m.Size, Smallest: m.Smallest, Largest: m.Largest,
			SmallestSeq: m.SmallestSeq, LargestSeq: m.LargestSeq,
		})
		lastSeq = max(lastSeq, m.LargestSeq)
		maxNum = max(maxNum, ht.num)
	}
	logNum := maxNum + 1
	lf, err := fs.Create(filepath.Join(dir, base.MakeFilename(base.FileTypeLog, logNum)))
	if err != nil {
		t.Fatal(err)
	}
	lf.Close()
	state := &manifest.State{Version: v, LogNum: logNum, NextFileNum: logNum + 2, LastSeq: lastSeq}
	vs := manifest.NewVersionSet(fs, dir, state, manifest.Options{MaxManifestSize: 1 << 20})
	if err := vs.WriteSnapshot(func() (uint64, uint64) { return logNum + 1, logNum + 2 }); err != nil {
		t.Fatal(err)
	}
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCheckHandBuiltClean(t *testing.T) {
	dir := handDB(t, []handTable{
		{num: 4, level: 0, entries: []handEntry{{"b", 30}, {"c", 31}}},
		{num: 5, level: 1, entries: []handEntry{{"a", 20}, {"b", 21}}},
		{num: 6, level: 2, entries: []handEntry{{"a", 10}, {"b", 11}, {"z", 12}}},
	})
	code, out, _ := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestCheckReadOrderViolation: level 1 holds an older version of "a" than
// level 2, so a Get would return the older value. Each table is intact and
// the manifest replays; only the cross-table scan can see it.
func TestCheckReadOrderViolation(t *testing.T) {
	dir := handDB(t, []handTable{
		{num: 4, level: 1, entries: []handEntry{{"a", 10}, {"m", 11}}},
		{num: 5, level: 2, entries: []handEntry{{"a", 20}}},
	})
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", "000004.sst", "read order violated", `"a"#10,SET`, `"a"#20,SET`, "000005.sst")
}

// TestCheckReadOrderLevel0: level 0 is read newest first, by the file's
// largest sequence; a key whose versions disagree with that order is
// reported.
func TestCheckReadOrderLevel0(t *testing.T) {
	dir := handDB(t, []handTable{
		// 000007 sorts first in level 0 (largest sequence 50), yet holds
		// the older "k".
		{num: 7, level: 0, entries: []handEntry{{"k", 5}, {"z", 50}}},
		{num: 6, level: 0, entries: []handEntry{{"k", 9}}},
	})
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", "000007.sst", "read order violated", `"k"#5,SET`)
}

func TestCheckDuplicateSequence(t *testing.T) {
	dir := handDB(t, []handTable{
		{num: 4, level: 0, entries: []handEntry{{"b", 5}}},
		{num: 5, level: 1, entries: []handEntry{{"a", 1}, {"b", 5}}},
	})
	code, out, _ := runTool(t, "check", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", "000005.sst", "sequence number used twice", "000004.sst")
}

// TestCheckReadOrderBounded: one bad level produces a violation per key;
// the report lists a few and counts the rest.
func TestCheckReadOrderBounded(t *testing.T) {
	var old, newer []handEntry
	for i := 0; i < 50; i++ {
		k := string(testKey(i))
		old = append(old, handEntry{k, uint64(1 + i)})
		newer = append(newer, handEntry{k, uint64(100 + i)})
	}
	dir := handDB(t, []handTable{{num: 4, level: 1, entries: old}, {num: 5, level: 3, entries: newer}})
	code, out, _ := runTool(t, "check", "-q", dir)
	if code != exitProblems {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantFinding(t, out, "ERROR", "-", "40 further violations not listed")
}
