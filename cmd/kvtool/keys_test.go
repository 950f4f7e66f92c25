package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
)

// TestKeysOneWay pins issue 30's rule for keys: each key is quoted text
// when every byte is printable ASCII, else hex, never a mix of \x escapes
// and decoded runes; -hex prints every key in hex.
func TestKeysOneWay(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want string
	}{
		{"user:1", `"user:1"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"\xff\xff\xad\xde\xb1\xbc}", "0xffffaddeb1bc7d"}, // %q gave "\xff\xff\xadޱ\xbc}"
		{"caf\xc3\xa9", "0x636166c3a9"},                   // valid UTF-8 is still not ASCII
		{"tab\there", "0x7461620968657265"},
		{"", `""`},
	} {
		if got := fmtUserKey([]byte(tc.key)); got != tc.want {
			t.Errorf("fmtUserKey(%q) = %s, want %s", tc.key, got, tc.want)
		}
	}
	ikey := base.MakeInternalKey([]byte("k\x00"), 42, base.KindSet)
	if got, want := fmtKey(ikey), "0x6b00#42,SET"; got != want {
		t.Errorf("fmtKey = %s, want %s", got, want)
	}

	// A database holding binary keys, through kvtool check and sst.
	dir := filepath.Join(t.TempDir(), "db")
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"\x80\x01binary", "\xff\xff\xad\xde\xb1\xbc}", "plain"} {
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runTool(t, "check", dir)
	if code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, `\x`) || !strings.Contains(out, `"plain"#3,SET`) || !strings.Contains(out, "0xffffaddeb1bc7d#2,SET") {
		t.Errorf("check prints keys in mixed or unexpected form:\n%s", out)
	}
	// Numbers that look alarming come with their reason.
	if !strings.Contains(out, "numbers are never reused") && !strings.Contains(out, "the number the next new file gets") {
		t.Errorf("check does not explain the next file number:\n%s", out)
	}
	tables := filesOfType(t, dir, base.FileTypeTable)
	code, out, _ = runTool(t, "sst", "-hex", filepath.Join(dir, tables[0]))
	if code != exitOK || !strings.Contains(out, "smallest   0x706c61696e#3,SET") {
		t.Errorf("sst -hex: exit %d, the printable key \"plain\" not in hex:\n%s", code, out)
	}
	code, out, _ = runTool(t, "sst", filepath.Join(dir, tables[0]))
	if code != exitOK || !strings.Contains(out, `smallest   "plain"#3,SET`) {
		t.Errorf("sst after -hex: exit %d, \"plain\" not as text (is -hex left on?):\n%s", code, out)
	}
}
