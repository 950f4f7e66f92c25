package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

func TestManifestPrintsEdits(t *testing.T) {
	dir := cleanDB(t)
	name := filesOfType(t, dir, base.FileTypeManifest)[0]
	hist := readHistory(vfs.Default, filepath.Join(dir, name))
	for _, arg := range []string{dir, filepath.Join(dir, name)} {
		code, out, errOut := runTool(t, "manifest", arg)
		if code != exitOK {
			t.Fatalf("manifest %s: exit %d:\n%s%s", arg, code, out, errOut)
		}
		edits := regexp.MustCompile(`(?m)^edit (\d+) at offset (\d+)`).FindAllStringSubmatch(out, -1)
		if len(edits) != len(hist.edits) || len(edits) < 3 {
			t.Fatalf("%d edits printed, the manifest has %d:\n%s", len(edits), len(hist.edits), out)
		}
		for _, want := range []string{"edit 1 at offset 0 (snapshot)", "add ", "delete ", "L0", "L6", "version after", "LEVEL"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for _, table := range filesOfType(t, dir, base.FileTypeTable) {
			if !strings.Contains(out, table) {
				t.Errorf("live table %s not in the output", table)
			}
		}
	}
}

// TestManifestGolden pins the output for a hand-written manifest.
func TestManifestGolden(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.Default
	f5 := &manifest.FileMetadata{
		FileNum: 5, Size: 1000, SmallestSeq: 1, LargestSeq: 9,
		Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet),
		Largest:  base.MakeInternalKey([]byte("k"), 9, base.KindDelete),
	}
	f7 := &manifest.FileMetadata{
		FileNum: 7, Size: 2048, SmallestSeq: 10, LargestSeq: 12,
		Smallest: base.MakeInternalKey([]byte("b"), 12, base.KindSet),
		Largest:  base.MakeInternalKey([]byte("c"), 10, base.KindSet),
	}
	state := &manifest.State{Version: &manifest.Version{}, LogNum: 4, NextFileNum: 6, LastSeq: 9}
	state.Version.Levels[0] = []*manifest.FileMetadata{f5}
	vs := manifest.NewVersionSet(fs, dir, state, manifest.Options{MaxManifestSize: 1 << 20})
	if err := vs.WriteSnapshot(func() (uint64, uint64) { return 3, 6 }); err != nil {
		t.Fatal(err)
	}
	edits := []*manifest.VersionEdit{
		{HasLogNum: true, LogNum: 6, HasNextFileNum: true, NextFileNum: 8, HasLastSeq: true, LastSeq: 12,
			NewFiles: []manifest.NewFileEntry{{Level: 0, Meta: f7}}},
		{CompactPointers: []manifest.CompactPointer{{Level: 0, Key: []byte("k")}},
			DeletedFiles: []manifest.DeletedFileEntry{{Level: 0, FileNum: 5}},
			NewFiles:     []manifest.NewFileEntry{{Level: 1, Meta: f5}}},
	}
	for _, e := range edits {
		if _, err := vs.LogAndApply(e, manifest.Install{}); err != nil {
			t.Fatal(err)
		}
	}
	vs.Close()
	code, out, errOut := runTool(t, "manifest", dir)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	out = strings.ReplaceAll(out, dir, "DIR")
	// Each edit is one full log fragment: a 7-byte header and 33, 33 and
	// 34 bytes of encoded edit, hence offsets 0, 40, 80 and 121 bytes.
	want := `DIR/MANIFEST-000003: 121 B, 3 edits

edit 1 at offset 0 (snapshot)
  log number        4
  next file number  6
  last sequence     9
  add               L0  000005.sst  1000 B  seqs 1-9  "a"#1,SET .. "k"#9,DEL

edit 2 at offset 40
  log number        6
  next file number  8
  last sequence     12
  add               L0  000007.sst  2.0 KiB  seqs 10-12  "b"#12,SET .. "c"#10,SET

edit 3 at offset 80
  compact pointer  L0 "k"
  delete           L0  000005.sst
  add              L1  000005.sst  1000 B  seqs 1-9  "a"#1,SET .. "k"#9,DEL

version after 3 edits: log number 6, next file number 8, last sequence 12, flushed 0, synced 0
LEVEL  TABLE       SIZE     SEQS   SMALLEST    LARGEST
L0     000007.sst  2.0 KiB  10-12  "b"#12,SET  "c"#10,SET
L1     000005.sst  1000 B   1-9    "a"#1,SET   "k"#9,DEL
`
	if out != want {
		t.Fatalf("output changed:\n--- got\n%s--- want\n%s", out, want)
	}
}

func TestManifestDamaged(t *testing.T) {
	dir := cleanDB(t)
	name := filesOfType(t, dir, base.FileTypeManifest)[0]
	xorByte(t, filepath.Join(dir, name), 9, 0x02) // inside the snapshot edit
	code, out, errOut := runTool(t, "manifest", dir)
	if code != exitProblems || !strings.Contains(out, "ERROR") || !strings.Contains(errOut, name) {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}

	code, _, errOut = runTool(t, "manifest", filepath.Join(dir, "MANIFEST-999999"))
	if code != exitProblems || errOut == "" {
		t.Fatalf("missing manifest: exit %d: %s", code, errOut)
	}
}

// TestManifestUndecodableEdit writes a record whose framing is intact but
// whose bytes are not a version edit: printed edits stop there, with the
// offset.
func TestManifestUndecodableEdit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "MANIFEST-000001")
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := walWriter(f)
	e := &manifest.VersionEdit{HasLogNum: true, LogNum: 2, HasNextFileNum: true, NextFileNum: 3, HasLastSeq: true}
	w.add(t, e.Encode())
	w.add(t, []byte{0x7f, 0x01}) // tag 127 does not exist
	w.close(t)
	code, out, _ := runTool(t, "manifest", path)
	if code != exitProblems || !strings.Contains(out, "edit 1 at offset 0") || !strings.Contains(out, "unknown tag 127") ||
		!strings.Contains(out, "at offset 13") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
