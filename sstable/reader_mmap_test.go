package sstable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// mmapSupported reports whether this system maps tables (mmap_unix.go).
func mmapSupported() bool {
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "openbsd":
		return ^uint(0)>>63 == 1 // 64-bit
	}
	return false
}

// openMapped opens the table at path through the OS file system with Mmap.
func openMapped(t *testing.T, path string, size int64) *Reader {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(f, filepath.Base(path), 1, size, ReaderOptions{Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	if mmapSupported() && r.mapped == nil {
		t.Fatal("the table was not mapped")
	}
	return r
}

// TestMmapReaderMatchesPread reads every entry of a table through a mapped
// reader and a pread reader and requires the same answers.
func TestMmapReaderMatchesPread(t *testing.T) {
	dir := t.TempDir()
	es := randomEntries(rand.New(rand.NewPCG(3, 4)), 3000, 2)
	meta := writeTableFile(t, dir, 1, es, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10})
	path := filepath.Join(dir, base.MakeFilename(base.FileTypeTable, 1))
	mapped := openMapped(t, path, int64(meta.Size))
	defer mapped.Close()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Open(f, "plain", 2, int64(meta.Size), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, e := range es {
		uk, seq := kv.UserKey(e.key), kv.Trailer(e.key)>>8
		v1, k1, ok1, err1 := mapped.Get(uk, seq, true, nil)
		v2, k2, ok2, err2 := plain.Get(uk, seq, true, nil)
		if err1 != nil || err2 != nil || ok1 != ok2 || k1 != k2 || !bytes.Equal(v1, v2) {
			t.Fatalf("%s: mapped (%q, %v, %v, %v), pread (%q, %v, %v, %v)", kv.FormatInternalKey(e.key), v1, k1, ok1, err1, v2, k2, ok2, err2)
		}
	}
}

// TestMmapReaderTruncated: a file shorter than the manifest says at Open is
// truncated corruption, as with pread; a file cut short after it was mapped
// makes reads of the lost part fail with an error instead of a crash
// (SIGBUS recovered, whether the copy of a raw block or the decoder of a
// compressed one touches the lost pages), and the part still there stays
// readable.
func TestMmapReaderTruncated(t *testing.T) {
	if !mmapSupported() {
		t.Skip("tables are not mapped on this system")
	}
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		t.Run(c.String(), func(t *testing.T) { testMmapReaderTruncated(t, c) })
	}
}

func testMmapReaderTruncated(t *testing.T, c Compression) {
	dir := t.TempDir()
	es := randomEntries(rand.New(rand.NewPCG(3, 4)), 4000, 1)
	meta := writeTableFile(t, dir, 1, es, WriterOptions{BlockSize: 512, Compression: c})
	path := filepath.Join(dir, base.MakeFilename(base.FileTypeTable, 1))

	// Cut short before Open: the footer is missing.
	short := filepath.Join(dir, "short.sst")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.Default.Open(short)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(f, "short.sst", 3, int64(meta.Size), ReaderOptions{Mmap: true}); !errors.Is(err, kv.ErrCorruption) {
		t.Fatalf("open of a table cut short before Open: %v, want corruption", err)
	}

	// Cut short while mapped.
	r := openMapped(t, path, int64(meta.Size))
	defer r.Close()
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	failed, found := 0, 0
	var firstErr error
	for _, e := range es {
		_, _, ok, err := r.Get(kv.UserKey(e.key), kv.MaxSeq, false, nil)
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
			failed++
		case ok:
			found++
		default:
			t.Fatalf("%s: not found and no error", kv.FormatInternalKey(e.key))
		}
	}
	t.Logf("after the cut: %d keys found, %d reads failed (%v)", found, failed, firstErr)
	if failed == 0 || found == 0 {
		t.Fatalf("after cutting the mapped file to 4 KiB: %d keys found, %d reads failed; want both", found, failed)
	}
}

// readCountingFile counts the reads that reach a file through ReadAt, and
// maps it as the file it wraps does.
type readCountingFile struct {
	vfs.File
	reads int
}

func (f *readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	return f.File.ReadAt(p, off)
}

func (f *readCountingFile) Map(size int64) ([]byte, func() error, error) {
	return f.File.(vfs.Mapper).Map(size)
}

// TestCompactionIterPreads: a mapped table's Gets copy blocks out of the
// mapping (no read reaches the file), while a compaction iterator reads
// its windows with pread, so a compaction does not map its inputs' pages
// into the process; both see every entry.
func TestCompactionIterPreads(t *testing.T) {
	if !mmapSupported() {
		t.Skip("tables are not mapped on this system")
	}
	dir := t.TempDir()
	es := randomEntries(rand.New(rand.NewPCG(5, 6)), 3000, 1)
	meta := writeTableFile(t, dir, 1, es, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10})
	path := filepath.Join(dir, base.MakeFilename(base.FileTypeTable, 1))
	inner, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &readCountingFile{File: inner}
	r, err := Open(f, "counted", 1, int64(meta.Size), ReaderOptions{Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.mapped == nil {
		t.Fatal("the table was not mapped")
	}
	opened := f.reads
	for _, e := range es[:100] {
		if _, _, ok, err := r.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil); !ok || err != nil {
			t.Fatalf("Get(%s): %v %v", kv.FormatInternalKey(e.key), ok, err)
		}
	}
	if f.reads != opened {
		t.Fatalf("Gets of a mapped table made %d file reads, want 0", f.reads-opened)
	}
	it := r.NewCompactionIter()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), es[n].key) || !bytes.Equal(it.Value(), es[n].value) {
			t.Fatalf("entry %d: %s", n, kv.FormatInternalKey(it.Key()))
		}
		n++
	}
	if err := it.Close(); err != nil || n != len(es) {
		t.Fatalf("compaction iterator: %d of %d entries, %v", n, len(es), err)
	}
	if f.reads == opened {
		t.Fatal("the compaction iterator read nothing through the file: it read the mapping")
	}
}
