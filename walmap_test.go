package bloomkv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFiles copies every regular file of dir into a new directory, as a
// crash of the process would leave them (what the page cache holds), and
// returns it. The LOCK file is copied too; nothing holds it there.
func copyFiles(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if os.IsNotExist(err) {
			continue // an obsolete file the engine was deleting
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestMappedLogRecovery: the files of an open write-through database (a
// memory-mapped log, reserved ahead of its records) recover every
// acknowledged write in every recovery mode, absolute consistency
// included, with nothing counted as dropped; and Close leaves no reserved
// space behind.
func TestMappedLogRecovery(t *testing.T) {
	if !logsMapped {
		t.Skip("logs are not memory-mapped on this system")
	}
	dir := t.TempDir()
	o := &Options{MemtableSize: 256 << 10} // several logs, the newest mid-way
	db := mustOpen(t, dir, o)
	const n = 5000
	val := strings.Repeat("v", 100)
	putRange(t, db, 0, n, val)
	if err := db.WaitForCompactions(); err != nil { // no file changes while copying
		t.Fatal(err)
	}
	snap := copyFiles(t, dir)
	reserved := false
	logs, _ := filepath.Glob(filepath.Join(snap, "*.log"))
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.Size() > 0 && fi.Size()%(64<<10) == 0 {
			reserved = true
		}
	}
	if !reserved {
		t.Fatalf("no log of the open database is reserved ahead of its records: %v", logs)
	}
	for _, mode := range []WALRecoveryMode{WALRecoverTolerateTornTail, WALRecoverAbsoluteConsistency, WALRecoverPointInTime} {
		crashed := copyFiles(t, snap)
		rdb, err := Open(crashed, &Options{WALRecovery: mode})
		if err != nil {
			t.Fatalf("%s: open after the crash: %v", mode, err)
		}
		for i := 0; i < n; i += 37 {
			k := fmt.Sprintf("key%06d", i)
			if v, err := rdb.Get([]byte(k)); err != nil || string(v) != val {
				t.Fatalf("%s: %s: %q %v", mode, k, v, err)
			}
		}
		if m := rdb.Metrics(); m.WALRecoveryDroppedBytes != 0 {
			t.Fatalf("%s: recovery dropped %d bytes of reserved space", mode, m.WALRecoveryDroppedBytes)
		}
		if err := rdb.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ = filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.Size() > 0 && fi.Size()%(64<<10) == 0 {
			t.Fatalf("closed database: %s is %d bytes, reserved space left", l, fi.Size())
		}
	}
}
