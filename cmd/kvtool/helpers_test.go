package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// dbShape says how much data buildDB writes.
type dbShape struct {
	keys      int // keys per round
	unflushed int // writes left in the log at Close
	opts      bloomkv.Options
}

var smallDB = dbShape{keys: 600, unflushed: 50, opts: bloomkv.Options{MemtableSize: 16 << 10, BlockSize: 512}}

// buildDB writes a database through the public API: a first round of
// keys flushed and compacted into the levels, a second round (overwrites
// and deletions) flushed to level 0, and some writes left only in the
// log. It returns the directory, closed.
func buildDB(t testing.TB, shape dbShape) string {
	t.Helper()
	dir := t.TempDir()
	opts := shape.opts
	db, err := bloomkv.Open(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < shape.keys; i++ {
		must(db.Put(testKey(i), testValue(i, 0)))
	}
	must(db.Flush())
	must(db.Compact(nil, nil))
	for i := 0; i < shape.keys; i += 3 {
		if i%2 == 0 {
			must(db.Delete(testKey(i)))
		} else {
			must(db.Put(testKey(i), testValue(i, 1)))
		}
	}
	must(db.Flush())
	b := bloomkv.NewBatch()
	for i := 0; i < shape.unflushed; i++ {
		b.Put(testKey(shape.keys+i), testValue(i, 2))
		if b.Len() == 10 {
			must(db.Write(b))
			b.Reset()
		}
	}
	if b.Len() > 0 {
		must(db.Write(b))
	}
	must(db.Close())
	return dir
}

func testKey(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

func testValue(i, round int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "v%d.%d-", i, round), 4)
}

// runTool runs kvtool with args and returns its exit code and output.
func runTool(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// filesOfType returns the base names of dir's files of type ft, sorted.
func filesOfType(t testing.TB, dir string, ft base.FileType) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if typ, _, ok := base.ParseFilename(e.Name()); ok && typ == ft {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// copyDir copies a database directory (flat) into a fresh temp dir, so a
// test can damage the copy and keep the original.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// xorByte flips bits of the byte at off in path.
func xorByte(t testing.TB, path string, off int64, mask byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= mask
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// wantFinding fails unless out has a finding line with sev that names
// file and contains every fragment.
func wantFinding(t testing.TB, out, sev, file string, fragments ...string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != sev || f[1] != file {
			continue
		}
		ok := true
		for _, frag := range fragments {
			ok = ok && strings.Contains(line, frag)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no %s finding for %s containing %q in:\n%s", sev, file, fragments, out)
}

// testWAL appends records to a file in the log format.
type testWAL struct{ w *record.Writer }

func walWriter(f vfs.File) testWAL { return testWAL{record.NewWriter(f)} }

func (l testWAL) add(t testing.TB, rec []byte) {
	t.Helper()
	if _, err := l.w.AddRecord(rec); err != nil {
		t.Fatal(err)
	}
}

func (l testWAL) close(t testing.TB) {
	t.Helper()
	if err := l.w.Close(); err != nil {
		t.Fatal(err)
	}
}
