package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadOutputPathFailsFirst: an output file that cannot be written is
// reported before the benchmark starts (no database made, no report), with
// the flag and the path, and exit 2 like any other unusable flag value.
func TestBadOutputPathFailsFirst(t *testing.T) {
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "no-such-dir")
	for _, tc := range []struct {
		flag, path string
		extra      []string
	}{
		{"-json", filepath.Join(missing, "r.json"), nil},
		{"-csv", filepath.Join(missing, "r.csv"), nil},
		{"-plot", filepath.Join(missing, "r.png"), []string{"-sweep", "off,4"}},
		{"-json", tmp, nil}, // a directory
	} {
		t.Run(tc.flag+" "+filepath.Base(tc.path), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "db")
			args := append([]string{"-num", "20000", "-progress=false", "-db", db, tc.flag, tc.path}, tc.extra...)
			var out, errb bytes.Buffer
			start := time.Now()
			code := run(args, &out, &errb)
			took := time.Since(start)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if msg := errb.String(); !strings.Contains(msg, tc.flag+" "+tc.path) {
				t.Errorf("stderr %q does not name %s %s", msg, tc.flag, tc.path)
			}
			if out.Len() != 0 {
				t.Errorf("the benchmark ran before the bad path was reported (%v):\n%s", took, out.String())
			}
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("-db %s was created before the bad path was reported (stat: %v)", db, err)
			}
		})
	}
}

// TestOutputFilesOnFailure: outputs are opened before the run, but a run
// that fails leaves no new empty file behind and does not truncate an
// existing one.
func TestOutputFilesOnFailure(t *testing.T) {
	tmp := t.TempDir()
	used := filepath.Join(tmp, "db")
	if err := os.Mkdir(used, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(tmp, "old.json")
	if err := os.WriteFile(old, []byte("earlier results"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(tmp, "new.csv")
	var out, errb bytes.Buffer
	if code := run([]string{"-num", "100", "-progress=false", "-db", used, "-json", old, "-csv", fresh}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "not empty") {
		t.Fatalf("non-empty -db: exit %d, stderr %q; want 1 and a refusal", code, errb.String())
	}
	if data, err := os.ReadFile(old); err != nil || string(data) != "earlier results" {
		t.Errorf("existing -json file after a failed run: %q, %v", data, err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed run left -csv %s behind (stat: %v)", fresh, err)
	}
}

// TestOutputFlagsSameFile: two outputs naming one file would overwrite
// each other; that is refused up front.
func TestOutputFlagsSameFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.out")
	var out, errb bytes.Buffer
	code := run([]string{"-num", "100", "-progress=false", "-json", path, "-csv", path}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "same file") || out.Len() != 0 {
		t.Errorf("exit %d, stderr %q, %d bytes of report; want 2, a refusal and no report", code, errb.String(), out.Len())
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused run left %s behind (stat: %v)", path, err)
	}
}

// TestProfiles: -cpuprofile and -memprofile write profiles pprof can read
// (gzipped protobufs), and a bad path fails before the run like other
// output files.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var out, errb bytes.Buffer
	args := []string{"-num", "5000", "-progress=false", "-wal_mode", "buffered", "-cpuprofile", cpu, "-memprofile", mem}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, p := range []string{cpu, mem} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Fatalf("%s is not a gzipped profile (%d bytes)", p, len(b))
		}
	}
	if !strings.Contains(out.String(), "WAL buffered") {
		t.Fatalf("the report does not say which WAL mode it ran:\n%s", out.String())
	}
	if code := run([]string{"-num", "5000", "-cpuprofile", filepath.Join(dir, "none", "x")}, &out, &errb); code != 2 {
		t.Fatalf("bad -cpuprofile path: exit %d", code)
	}
}
