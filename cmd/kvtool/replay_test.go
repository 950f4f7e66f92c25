package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
)

// bigManifestDB writes a database through the public API whose manifest
// spans several log blocks: each flush records a table whose bounds are
// 4 KiB keys. Damage in any block but the last is then corruption, not a
// torn tail, so the manifest does not replay.
func bigManifestDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db, err := bloomkv.Open(dir, &bloomkv.Options{DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		for j := range 2 {
			key := append(fmt.Appendf(nil, "key%03d-%d-", i, j), bytes.Repeat([]byte{'k'}, 4<<10)...)
			if err := db.Put(key, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckManifestDoesNotReplay: when the manifest CURRENT names does not
// replay, that is the finding (an error, exit 1), and check says nothing
// that only a replayed manifest could tell: not that the manifest is "not
// named by CURRENT" (it is), nor what the next Open would delete or drop
// (Open fails on it).
func TestCheckManifestDoesNotReplay(t *testing.T) {
	cases := []struct {
		name   string
		build  func(t *testing.T) string
		damage func(t *testing.T, path string)
	}{
		{"first edit", func(t *testing.T) string { return cleanDB(t) }, func(t *testing.T, path string) {
			xorByte(t, path, 8, 0x01) // inside the snapshot edit: nothing replays
		}},
		{"middle", bigManifestDB, func(t *testing.T, path string) {
			size := fileSize(t, path)
			if size < 3*record.BlockSize {
				t.Fatalf("manifest is %d bytes; want more than three %d-byte blocks", size, record.BlockSize)
			}
			xorByte(t, path, size/2, 0x01)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.build(t)
			name := filesOfType(t, dir, base.FileTypeManifest)[0]
			tc.damage(t, filepath.Join(dir, name))
			// Leftovers Open would delete if it could open the database.
			if err := os.WriteFile(filepath.Join(dir, "000999.tmp"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}

			code, out, _ := runTool(t, "check", dir)
			if code != exitProblems {
				t.Fatalf("exit %d, want %d:\n%s", code, exitProblems, out)
			}
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				if len(f) >= 2 && f[0] == "NOTE" && f[1] == name {
					t.Errorf("note about the manifest that does not replay: %q", line)
				}
			}
			for _, bad := range []string{"not named by CURRENT", "next Open"} {
				if strings.Contains(out, bad) {
					t.Errorf("output says %q, which needs a manifest that replays:\n%s", bad, out)
				}
			}
			wantFinding(t, out, "ERROR", name, "does not replay")
			if !strings.Contains(out, "manifest  "+name+": does not replay") {
				t.Errorf("details do not say the manifest does not replay:\n%s", out)
			}
			if strings.Contains(out, " live ") || strings.Contains(out, " obsolete ") {
				t.Errorf("logs called live or obsolete without a manifest's log number:\n%s", out)
			}

			code, js, _ := runTool(t, "check", "-json", dir)
			var rep struct {
				Manifest *manifestInfo
				Findings []struct{ Severity, File, Message string }
				Errors   int
				OK       bool
			}
			if err := json.Unmarshal([]byte(js), &rep); err != nil {
				t.Fatalf("JSON: %v\n%s", err, js)
			}
			if code != exitProblems || rep.OK || rep.Errors == 0 || rep.Manifest != nil {
				t.Fatalf("-json: exit %d, ok %v, errors %d, manifest %+v", code, rep.OK, rep.Errors, rep.Manifest)
			}
			if len(rep.Findings) == 0 || rep.Findings[0].Severity != "ERROR" || rep.Findings[0].File != name {
				t.Errorf("first finding is not the manifest's error: %+v", rep.Findings)
			}
			for _, f := range rep.Findings {
				if f.File == name && f.Severity != "ERROR" {
					t.Errorf("-json: %s finding about the manifest: %s", f.Severity, f.Message)
				}
			}
		})
	}
}
