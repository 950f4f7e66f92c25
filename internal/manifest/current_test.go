package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

func TestCurrentRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, num := range []uint64{1, 42, 1234567, 1<<64 - 1} {
		if err := SetCurrent(vfs.Default, dir, num); err != nil {
			t.Fatal(err)
		}
		got, err := ReadCurrent(vfs.Default, dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := base.MakeFilename(base.FileTypeManifest, num); got != want {
			t.Fatalf("ReadCurrent = %q, want %q", got, want)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
		if err != nil || string(raw) != got+"\n" {
			t.Fatalf("CURRENT holds %q (%v)", raw, err)
		}
	}
	names, err := vfs.Default.List(dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("directory holds %v (%v), want only CURRENT", names, err)
	}
}

func TestReadCurrentMissing(t *testing.T) {
	_, err := ReadCurrent(vfs.Default, t.TempDir())
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, base.ErrCorruption) {
		t.Fatalf("missing CURRENT: %v", err)
	}
}

func TestReadCurrentDamage(t *testing.T) {
	for _, content := range []string{
		"", "\n", "MANIFEST-000001", "MANIFEST-\n", "MANIFEST-00000x\n", "MANIFEST-000001\n\n",
		"manifest-000001\n", "MANIFEST-+1\n", "MANIFEST-99999999999999999999999\n",
		"MANIFEST-000001\r\n", " MANIFEST-000001\n", "000001.log\n", strings.Repeat("9", 100) + "\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "CURRENT"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		name, err := ReadCurrent(vfs.Default, dir)
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("CURRENT %q: got %q, %v; want corruption", content, name, err)
		}
		if !strings.HasPrefix(err.Error(), "bloomkv/manifest: "+filepath.Join(dir, "CURRENT")+" at offset ") {
			t.Fatalf("CURRENT %q: error %q does not name the file and offset", content, err)
		}
	}
}

// After SetCurrent returns, a power loss keeps the new CURRENT; before it
// starts, the old one. MemFS drops everything not synced.
func TestSetCurrentSurvivesPowerLoss(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := SetCurrent(fs, "/db", 3); err != nil {
		t.Fatal(err)
	}
	if err := SetCurrent(fs, "/db", 8); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	name, err := ReadCurrent(crashed, "/db")
	if err != nil || name != "MANIFEST-000008" {
		t.Fatalf("after power loss: %q, %v", name, err)
	}
}

// failingFS fails one named operation.
type failingFS struct {
	vfs.FS
	failRename, failOpenDir bool
}

var errInjected = errors.New("injected failure")

func (f failingFS) Rename(a, b string) error {
	if f.failRename {
		return errInjected
	}
	return f.FS.Rename(a, b)
}

func (f failingFS) OpenDir(name string) (vfs.File, error) {
	if f.failOpenDir {
		return nil, errInjected
	}
	return f.FS.OpenDir(name)
}

func TestSetCurrentFailureKeepsOldAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	if err := SetCurrent(vfs.Default, dir, 5); err != nil {
		t.Fatal(err)
	}
	err := SetCurrent(failingFS{FS: vfs.Default, failRename: true}, dir, 6)
	if !errors.Is(err, errInjected) || !strings.HasPrefix(err.Error(), "bloomkv/manifest: set ") {
		t.Fatalf("SetCurrent with failing rename: %v", err)
	}
	if name, err := ReadCurrent(vfs.Default, dir); err != nil || name != "MANIFEST-000005" {
		t.Fatalf("CURRENT after failed SetCurrent: %q, %v", name, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "000006.tmp")); !os.IsNotExist(err) {
		t.Fatalf("temp file left behind: %v", err)
	}
	if err := SetCurrent(failingFS{FS: vfs.Default, failOpenDir: true}, dir, 7); !errors.Is(err, errInjected) {
		t.Fatalf("SetCurrent with failing dir sync: %v", err)
	}
}
