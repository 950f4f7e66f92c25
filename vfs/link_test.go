package vfs

import (
	"errors"
	"os"
	"testing"
)

// TestLink: a link is the same file under a second name, on the OS and in
// memory; it refuses an existing target and a missing source.
func TestLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		dir  string
	}{
		{"os", Default, t.TempDir()},
		{"mem", NewMem(), "/d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := tc.fs
			if err := fs.MkdirAll(fs.PathJoin(tc.dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			a, b := fs.PathJoin(tc.dir, "a"), fs.PathJoin(tc.dir, "sub", "b")
			mustWriteFile(t, fs, a, "hello", true)
			if err := fs.Link(a, b); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, fs, b); got != "hello" {
				t.Fatalf("linked file holds %q", got)
			}
			if err := fs.Link(a, b); !errors.Is(err, os.ErrExist) {
				t.Fatalf("Link over an existing name: %v, want os.ErrExist", err)
			}
			if err := fs.Link(fs.PathJoin(tc.dir, "missing"), fs.PathJoin(tc.dir, "c")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Link of a missing file: %v, want os.ErrNotExist", err)
			}
			if err := fs.Remove(a); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, fs, b); got != "hello" {
				t.Fatalf("after removing the first name the link holds %q", got)
			}
		})
	}
}

// TestLinkCrash: in MemFS a link is durable only once its directory is
// synced, and the two names stay one inode in a crash clone.
func TestLinkCrash(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, fs, "/d/a", "data", true)
	if err := SyncDir(fs, "/d"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Link("/d/a", "/d/b"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs.CrashClone(), "/d/b"); got != "<absent>" {
		t.Fatalf("an unsynced link survived a power loss: %q", got)
	}
	if err := SyncDir(fs, "/d"); err != nil {
		t.Fatal(err)
	}
	c := fs.CrashClone()
	if got := readFile(t, c, "/d/b"); got != "data" {
		t.Fatalf("synced link holds %q after a crash", got)
	}
}

// TestLinkOrCopy: with linking failing (as across file systems) the file
// is copied, synced and complete.
func TestLinkOrCopy(t *testing.T) {
	mem := NewMem()
	efs := NewErrorFS(mem)
	if err := efs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, efs, "/d/a", "payload", true)
	copied, err := LinkOrCopy(efs, "/d/a", "/d/linked")
	if err != nil || copied {
		t.Fatalf("LinkOrCopy = %v, %v; want a link", copied, err)
	}
	efs.Inject(Rule{Ops: []Op{OpLink}, Sticky: true})
	copied, err = LinkOrCopy(efs, "/d/a", "/d/copied")
	if err != nil || !copied {
		t.Fatalf("LinkOrCopy with linking failing = %v, %v; want a copy", copied, err)
	}
	if got := readFile(t, mem, "/d/a"); got != "payload" {
		t.Fatal("source changed")
	}
	if err := SyncDir(efs, "/d"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, mem.CrashClone(), "/d/copied"); got != "payload" {
		t.Fatalf("the copy holds %q after a crash", got)
	}
	if _, err := LinkOrCopy(efs, "/d/a", "/d/copied"); !errors.Is(err, os.ErrExist) {
		t.Fatalf("LinkOrCopy over an existing file: %v", err)
	}
	if _, err := LinkOrCopy(efs, "/d/missing", "/d/x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LinkOrCopy of a missing file: %v", err)
	}
}
