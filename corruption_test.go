package bloomkv

// Damaged files: for every on-disk format (write-ahead log, MANIFEST,
// CURRENT, and each part of an SSTable: footer, index, data, filter and
// properties blocks) a flipped byte and a truncation must surface as an
// error wrapping ErrCorruption that names the file -- from Open, Get or an
// iterator -- and never as a panic or wrong data. The one exception is the
// end of a log, where a torn tail is a crash artefact and is dropped: the
// database then recovers a prefix of its batches.
//
// Table damage is placed with the layout of sstable/doc.go: the 64-byte
// footer at the end holds the handles (offset, size; little-endian uint64s)
// of the index block at byte 0, the filter block at byte 16 and the
// properties block at byte 32; data blocks fill the file before the first
// of those; each block is followed by a 5-byte trailer.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

func readMemFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceFile rewrites name with data, durably.
func replaceFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// filesOfType returns the names in /db of the given type.
func filesOfType(t *testing.T, fs vfs.FS, ft base.FileType) []string {
	t.Helper()
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if typ, _, ok := base.ParseFilename(n); ok && typ == ft {
			out = append(out, n)
		}
	}
	return out
}

func flipAt(off int) func([]byte) []byte {
	return func(b []byte) []byte { b[off] ^= 0x20; return b }
}

func truncateTo(n int) func([]byte) []byte {
	return func(b []byte) []byte { return b[:n] }
}

// withDamage returns a copy of fs with file name changed by fn.
func withDamage(t *testing.T, fs *vfs.MemFS, name string, fn func([]byte) []byte) *vfs.MemFS {
	t.Helper()
	c := fs.ProcessCrashClone()
	path := "/db/" + name
	replaceFile(t, c, path, fn(readMemFile(t, c, path)))
	return c
}

// expectCorruption fails unless err wraps ErrCorruption and names file.
func expectCorruption(t *testing.T, err error, file, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("%s: error %q does not wrap ErrCorruption", what, err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("%s: error %q does not name %s", what, err, file)
	}
}

// ---- write-ahead log ----

// buildLogDB writes batches 1..n, which stay in one write-ahead log (the
// memtable is large enough never to flush). With crashed, the
// image is taken as a kill -9 would leave it (the database was never
// closed); otherwise after a clean Close, which records in the manifest
// that every write is durable.
func buildLogDB(t *testing.T, n int, crashed bool) (*vfs.MemFS, string, []byte) {
	t.Helper()
	img, logs, _ := multiLogDB(t, 1, n, crashed)
	data := readMemFile(t, img, "/db/"+logs[0])
	if len(data) < 3*32<<10 {
		t.Fatalf("log of %d bytes is too small to damage in the middle", len(data))
	}
	return img, logs[0], data
}

func TestCorruptionLog(t *testing.T) {
	const batches = 1000
	fs, logName, data := buildLogDB(t, batches, true)
	lastBlock := len(data) / (32 << 10) * (32 << 10)

	t.Run("flip mid-file", func(t *testing.T) {
		// Damage with intact records after it is not a torn tail.
		for _, off := range []int{0, 3, 6, 7, 500, 32<<10 - 1, 32 << 10, 40000, lastBlock - 100, lastBlock + 20} {
			_, err := Open("/db", &Options{FS: withDamage(t, fs, logName, flipAt(off))})
			expectCorruption(t, err, logName, fmt.Sprintf("flip@%d", off))
			if !strings.Contains(err.Error(), "offset") {
				t.Fatalf("flip@%d: error %q names no offset", off, err)
			}
		}
	})
	t.Run("tail", func(t *testing.T) {
		// After a crash, truncations and damage in the last record cannot be
		// told from a torn write: the database opens with a prefix of the
		// batches (or, for a flip, may report corruption), never anything
		// else.
		cases := map[string]func([]byte) []byte{
			"zeros appended":   func(b []byte) []byte { return append(b, make([]byte, 100)...) },
			"garbage appended": func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xa5}, 30)...) },
		}
		for _, n := range []int{0, 1, 6, 7, 100, 32 << 10, 32<<10 + 3, 50000, lastBlock, len(data) - 1} {
			cases[fmt.Sprintf("truncate@%d", n)] = truncateTo(n)
		}
		for _, off := range []int{len(data) - 20, len(data) - 1} {
			cases[fmt.Sprintf("flip@%d", off)] = flipAt(off)
		}
		for name, fn := range cases {
			img := withDamage(t, fs, logName, fn)
			db, err := Open("/db", &Options{FS: img})
			if err != nil {
				if strings.HasPrefix(name, "flip") {
					expectCorruption(t, err, logName, name)
					continue
				}
				t.Fatalf("%s: Open: %v", name, err)
			}
			p := verifyPrefix(t, db, 0, batches)
			if strings.HasSuffix(name, "appended") && p != batches {
				t.Fatalf("%s: recovered 1..%d of %d", name, p, batches)
			}
			if strings.HasPrefix(name, "flip") && p != batches-1 {
				t.Fatalf("%s: recovered 1..%d of %d; a flip in the last record drops just that record", name, p, batches)
			}
			db.Close()
		}
	})
	t.Run("tail after a clean close", func(t *testing.T) {
		// Close recorded every write as durable: nothing may be missing, so
		// a cut or damaged end is corruption, not a torn tail.
		fs, logName, data := buildLogDB(t, batches, false)
		for _, fn := range map[string]func([]byte) []byte{
			"truncate@0":     truncateTo(0),
			"truncate@1":     truncateTo(1),
			"truncate@end-1": truncateTo(len(data) - 1),
			"flip@end-1":     flipAt(len(data) - 1),
		} {
			_, err := Open("/db", &Options{FS: withDamage(t, fs, logName, fn)})
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("damaged end after a clean close: Open: %v; want corruption", err)
			}
		}
		// Deleting the log loses its writes: corruption too.
		img := fs.ProcessCrashClone()
		if err := img.Remove("/db/" + logName); err != nil {
			t.Fatal(err)
		}
		if _, err := Open("/db", &Options{FS: img}); !errors.Is(err, ErrCorruption) {
			t.Fatalf("deleted log after a clean close: Open: %v; want corruption", err)
		}
	})
}

// ---- MANIFEST and CURRENT ----

// buildManifestDB makes a database whose manifest holds a snapshot and the
// edits of three flushes, and whose data lives only in tables.
func buildManifestDB(t *testing.T) (*vfs.MemFS, string, int) {
	t.Helper()
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs})
	id := 0
	for f := 0; f < 3; f++ {
		for i := 0; i < 50; i++ {
			id++
			if err := db.Write(genBatch(id)); err != nil {
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
	ms := filesOfType(t, fs, base.FileTypeManifest)
	if len(ms) != 1 {
		t.Fatalf("manifests: %v", ms)
	}
	return fs, ms[0], id
}

func TestCorruptionManifest(t *testing.T) {
	fs, name, batches := buildManifestDB(t)
	data := readMemFile(t, fs, "/db/"+name)
	// The first record is the snapshot Open wrote: damage there, or a
	// truncation inside it, leaves no usable manifest.
	first := 7 + int(binary.LittleEndian.Uint16(data[4:6]))
	cases := map[string]func([]byte) []byte{}
	for _, off := range []int{0, 4, 6, 7, first / 2, first - 1} {
		cases[fmt.Sprintf("flip@%d", off)] = flipAt(off)
	}
	for _, n := range []int{0, 3, 7, first - 1} {
		cases[fmt.Sprintf("truncate@%d", n)] = truncateTo(n)
	}
	for what, fn := range cases {
		_, err := Open("/db", &Options{FS: withDamage(t, fs, name, fn)})
		expectCorruption(t, err, name, what)
	}
	// A flipped byte anywhere: an error naming the manifest, or all data.
	for off := 0; off < len(data); off += 5 {
		what := fmt.Sprintf("flip@%d", off)
		db, err := Open("/db", &Options{FS: withDamage(t, fs, name, flipAt(off))})
		if err != nil {
			expectCorruption(t, err, name, what)
			continue
		}
		// The damaged record was taken for a torn tail and dropped.
		verifyLostNothing(t, db, batches, what)
		db.Close()
	}
}

// verifyLostNothing checks that db holds batches 1..n exactly, or that
// reading it reports corruption: never silently missing data.
func verifyLostNothing(t *testing.T, db *DB, n int, what string) {
	t.Helper()
	it := db.NewIterator(nil)
	got := 0
	for ok := it.First(); ok; ok = it.Next() {
		got++
	}
	if err := it.Close(); err != nil {
		if !errors.Is(err, ErrCorruption) {
			t.Fatalf("%s: iterator error %v does not wrap ErrCorruption", what, err)
		}
		return
	}
	if want := len(genModel(seq(1, n))); got != want {
		t.Fatalf("%s: the database opened and holds %d keys, want %d: acknowledged data silently lost", what, got, want)
	}
	verifyPrefix(t, db, n, n)
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestCorruptionCurrent(t *testing.T) {
	fs, manifestName, _ := buildManifestDB(t)
	content := readMemFile(t, fs, "/db/CURRENT")
	if string(content) != manifestName+"\n" {
		t.Fatalf("CURRENT = %q", content)
	}
	cases := map[string]func([]byte) []byte{}
	for off := range content {
		for _, mask := range []byte{0x01, 0x20, 0x80} {
			cases[fmt.Sprintf("flip@%d^%#x", off, mask)] = func(b []byte) []byte { b[off] ^= mask; return b }
		}
	}
	for n := 0; n < len(content); n++ {
		cases[fmt.Sprintf("truncate@%d", n)] = truncateTo(n)
	}
	cases["appended"] = func(b []byte) []byte { return append(b, "x\n"...) }
	for what, fn := range cases {
		_, err := Open("/db", &Options{FS: withDamage(t, fs, "CURRENT", fn)})
		if err == nil {
			t.Fatalf("%s: Open succeeded with a damaged CURRENT", what)
		}
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "CURRENT") {
			t.Fatalf("%s: error %q does not report a corrupt CURRENT", what, err)
		}
	}
	// A missing CURRENT beside tables is damage too, not a new database.
	img := fs.ProcessCrashClone()
	if err := img.Remove("/db/CURRENT"); err != nil {
		t.Fatal(err)
	}
	_, err := Open("/db", &Options{FS: img})
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("Open without CURRENT: %v", err)
	}
}

func TestFlippedByteInTableIsCorruption(t *testing.T) {
	dir := t.TempDir()
	o := &Options{Compression: NoCompression, BlockCacheSize: -1}
	db := mustOpen(t, dir, o)
	for i := 0; i < 500; i++ {
		db.Put([]byte(fmt.Sprintf("key%04d", i)), bytes.Repeat([]byte{'v'}, 50))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) != 1 {
		t.Fatalf("tables: %v", tables)
	}
	data, _ := os.ReadFile(tables[0])
	data[100] ^= 0x40 // inside the first data block
	os.WriteFile(tables[0], data, 0o644)
	db = mustOpen(t, dir, o)
	defer db.Close()
	sawCorruption := false
	for i := 0; i < 500; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("key%04d", i)))
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("key%04d: error %v does not wrap ErrCorruption", i, err)
			}
			sawCorruption = true
			continue
		}
		if !bytes.Equal(v, bytes.Repeat([]byte{'v'}, 50)) {
			t.Fatalf("key%04d: wrong data %q", i, v)
		}
	}
	if !sawCorruption {
		t.Fatal("no Get reported the damaged block")
	}
}
