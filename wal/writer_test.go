package wal

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// fileSize returns the size of path as the operating system sees it.
func fileSize(t *testing.T, fs vfs.FS, path string) int64 {
	t.Helper()
	fi, err := fs.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// readRecords reads every record of path.
func readRecords(t *testing.T, fs vfs.FS, path string) [][]byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := record.NewReader(f, path)
	var out [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(rec))
	}
}

func newTestWriter(t *testing.T, o WriterOptions) (*vfs.MemFS, *Writer) {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create("/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := vfs.SyncDir(fs, "/"); err != nil { // the name survives a power loss
		t.Fatal(err)
	}
	return fs, NewWriter(f, o)
}

func TestWriterWriteThrough(t *testing.T) {
	fs, w := newTestWriter(t, WriterOptions{Mode: ModeWriteThrough})
	for i := range 3 {
		if err := w.Append([]byte{byte(i)}, false); err != nil {
			t.Fatal(err)
		}
		// Every record is in the file (the OS has it) when Append returns.
		if got := len(readRecords(t, fs, "/000001.log")); got != i+1 {
			t.Fatalf("after %d appends the file holds %d records", i+1, got)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte("x"), false); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

func TestWriterBuffered(t *testing.T) {
	fs, w := newTestWriter(t, WriterOptions{Mode: ModeBuffered, BufferedDelay: time.Hour, BufferedBytes: 100})
	if err := w.Append([]byte("a"), false); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, fs, "/000001.log"); n != 0 {
		t.Fatalf("a buffered record reached the file at once (%d bytes)", n)
	}
	if w.Size() == 0 {
		t.Fatal("Size does not count buffered bytes")
	}
	// BufferedBytes waiting: handed over at once.
	if err := w.Append(bytes.Repeat([]byte("b"), 120), false); err != nil {
		t.Fatal(err)
	}
	if got := len(readRecords(t, fs, "/000001.log")); got != 2 {
		t.Fatalf("past BufferedBytes the file holds %d records, want 2", got)
	}
	// A synced append flushes and syncs everything before it.
	if err := w.Append([]byte("c"), false); err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte("d"), true); err != nil {
		t.Fatal(err)
	}
	if got := len(readRecords(t, fs.CrashClone(), "/000001.log")); got != 4 {
		t.Fatalf("after a synced append a power loss keeps %d records, want 4", got)
	}
	// Close hands over what is left.
	if err := w.Append([]byte("e"), false); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(readRecords(t, fs, "/000001.log")); got != 5 {
		t.Fatalf("after Close the file holds %d records, want 5", got)
	}
}

func TestWriterBufferedDeadline(t *testing.T) {
	fs, w := newTestWriter(t, WriterOptions{Mode: ModeBuffered, BufferedDelay: 2 * time.Millisecond})
	defer w.Close()
	if err := w.Append([]byte("a"), false); err != nil {
		t.Fatal(err)
	}
	// The record reaches the file within the delay (polled, not timed: the
	// test only fails if it never arrives).
	for i := 0; len(readRecords(t, fs, "/000001.log")) == 0; i++ {
		if i > 5000 {
			t.Fatal("a buffered record never reached the file")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWriterBufferedConcurrentDeadlines(t *testing.T) {
	// Appends racing the timer's flushes (run under -race): every record
	// arrives, in order.
	fs, w := newTestWriter(t, WriterOptions{Mode: ModeBuffered, BufferedDelay: 50 * time.Microsecond})
	const n = 2000
	for i := range n {
		if err := w.Append([]byte{byte(i), byte(i >> 8)}, false); err != nil {
			t.Fatal(err)
		}
		if i%200 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, fs, "/000001.log")
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if r[0] != byte(i) || r[1] != byte(i>>8) {
			t.Fatalf("record %d out of order", i)
		}
	}
}

func TestWriterSyncAndDisabled(t *testing.T) {
	fs, w := newTestWriter(t, WriterOptions{Mode: ModeSync})
	if err := w.Append([]byte("a"), false); err != nil {
		t.Fatal(err)
	}
	if got := len(readRecords(t, fs.CrashClone(), "/000001.log")); got != 1 {
		t.Fatalf("sync mode: a power loss keeps %d records", got)
	}
	w.Close()
	fs, w = newTestWriter(t, WriterOptions{Mode: ModeDisabled})
	if err := w.Append([]byte("a"), true); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if n := fileSize(t, fs, "/000001.log"); n != 0 {
		t.Fatalf("disabled mode wrote %d bytes", n)
	}
}

func TestWriterErrorIsSticky(t *testing.T) {
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	f, err := efs.Create("/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{Mode: ModeBuffered, BufferedDelay: time.Hour})
	if err := w.Append([]byte("a"), false); err != nil {
		t.Fatal(err)
	}
	efs.FailAfter(1, vfs.OpWrite)
	if err := w.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("flush: %v", err)
	}
	if err := w.Append([]byte("b"), false); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("append after a failed flush: %v", err)
	}
}
