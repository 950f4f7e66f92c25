package bloomkv

import (
	"errors"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestOpenWithoutCurrentRefusesData: a directory without CURRENT that holds
// data (a table, a non-empty log, a manifest naming tables, a temporary
// file the engine did not write) is refused with an error that points to
// kvtool repair, and every file is left as it was.
func TestOpenWithoutCurrentRefusesData(t *testing.T) {
	cases := map[string]map[string]string{
		"non-empty log and tmp": {"000003.log": "some bytes", "000007.tmp": "not ours"},
		"table":                 {"000005.sst": "a table"},
		"foreign tmp":           {"000009.tmp": "MANIFEST-000010\n"},
	}
	for name, files := range cases {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/db", 0o755); err != nil {
			t.Fatal(err)
		}
		for f, content := range files {
			replaceFile(t, fs, "/db/"+f, []byte(content))
		}
		replaceFile(t, fs, "/db/README", []byte("not a database file"))
		_, err := Open("/db", &Options{FS: fs})
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "kvtool repair") {
			t.Fatalf("%s: Open = %v, want a refusal pointing to kvtool repair", name, err)
		}
		files["README"] = "not a database file"
		for f, content := range files {
			if got := string(readMemFile(t, fs, "/db/"+f)); got != content {
				t.Fatalf("%s: %s changed to %q", name, f, got)
			}
		}
	}

	// A database whose CURRENT was lost is refused too.
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs})
	putRange(t, db, 0, 10, "v")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := fs.Remove("/db/CURRENT"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("/db", &Options{FS: fs}); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "kvtool repair") {
		t.Fatalf("lost CURRENT: Open = %v", err)
	}
}

// TestOpenKeepsUnrelatedFiles: files whose names are not database file
// names are never touched, in a new directory or an existing database.
func TestOpenKeepsUnrelatedFiles(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"README", "notes.txt", "x.log.bak", "MANIFEST"} {
		replaceFile(t, fs, "/db/"+f, []byte(f))
	}
	for round := 0; round < 2; round++ {
		db := mustOpen(t, "/db", tinyOptions(fs))
		putRange(t, db, 0, 300, "v")
		if err := db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	for _, f := range []string{"README", "notes.txt", "x.log.bak", "MANIFEST"} {
		if got := string(readMemFile(t, fs, "/db/"+f)); got != f {
			t.Fatalf("%s changed to %q", f, got)
		}
	}
}

// TestOrphansRemovedAtOpen leaves files a crash could leave (numbers the
// manifest reserved, not live) and foreign files (numbers the engine never
// handed out) and checks that Open deletes the former only, and keeps the
// foreign ones across later opens too.
func TestOrphansRemovedAtOpen(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", tinyOptions(fs))
	putRange(t, db, 0, 100, "v")
	db.Close()
	name, err := manifest.ReadCurrent(fs, "/db")
	if err != nil {
		t.Fatal(err)
	}
	st, err := manifest.ReadManifest(fs, "/db/"+name)
	if err != nil {
		t.Fatal(err)
	}
	reserved := st.NextFileNum - 1 // reserved by the manifest, never used yet
	orphans := []string{base.MakeFilename(base.FileTypeTable, reserved), base.MakeFilename(base.FileTypeTemp, reserved-1)}
	// Foreign files just past the reservation: the engine's numbers soon
	// pass theirs, and it must skip them rather than reuse or delete them.
	foreign := []string{"999999.sst", "999998.tmp", "MANIFEST-999997", "999996.log",
		base.MakeFilename(base.FileTypeTable, st.NextFileNum+2),
		base.MakeFilename(base.FileTypeTemp, st.NextFileNum+3),
		base.MakeFilename(base.FileTypeLog, st.NextFileNum+5)}
	for _, name := range append(append([]string(nil), orphans...), foreign...) {
		f, _ := fs.Create("/db/" + name)
		f.Write([]byte("junk"))
		f.Close()
	}
	for round := 0; round < 3; round++ {
		db = mustOpen(t, "/db", tinyOptions(fs))
		putRange(t, db, 100, 200, "w")
		if err := db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
		for _, name := range orphans {
			if _, err := fs.Stat("/db/" + name); err == nil {
				t.Errorf("round %d: orphan %s survived Open", round, name)
			}
		}
		for _, name := range foreign {
			if _, err := fs.Stat("/db/" + name); err != nil {
				t.Errorf("round %d: foreign file %s was removed: %v", round, name, err)
			}
		}
	}
}
