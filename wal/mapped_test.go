package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// sizedRec is a test record of size bytes (at least 12) that starts with
// its first sequence and count, then pseudo-random filler.
func sizedRec(rng *rand.Rand, first uint64, size int) []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, size), first)
	b = binary.LittleEndian.AppendUint32(b, 1)
	for len(b) < size {
		b = append(b, byte(rng.Uint32()))
	}
	return b
}

func sizedSequences(r []byte) (uint64, uint64, error) {
	if len(r) < 12 {
		return 0, 0, errors.New("short record")
	}
	return binary.LittleEndian.Uint64(r), uint64(binary.LittleEndian.Uint32(r[8:])), nil
}

// mappedWriter creates path on the operating system's file system and a
// write-through Writer on it with MapLog; it skips the test where logs are
// not mapped.
func mappedWriter(t *testing.T, path string) *Writer {
	t.Helper()
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{Mode: ModeWriteThrough, MapLog: true, WritebackBytes: -1})
	if w.mapped == nil {
		w.Close()
		t.Skip("logs are not memory-mapped on this system")
	}
	return w
}

// testRecords are records of mixed sizes whose total crosses several map
// windows; one (2.5 MiB) spans more than a window on its own.
func testRecords() [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs [][]byte
	for i := range 3000 {
		size := 12 + rng.IntN(300)
		switch {
		case i == 1500:
			size = 5 << 19 // 2.5 MiB
		case i%100 == 0:
			size = 12 + rng.IntN(80000) // split over blocks
		}
		recs = append(recs, sizedRec(rng, uint64(i+1), size))
	}
	return recs
}

func statSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// check runs Check on logs by the rules of mode.
func checkLogs(mode RecoveryMode, paths ...string) (*Result, error) {
	var logs []Log
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		logs = append(logs, Log{Num: uint64(i + 1), Path: p, Size: fi.Size()})
	}
	return Check(Options{FS: vfs.Default, Mode: mode, FlushedSeqKnown: true, Sequences: sizedSequences}, logs)
}

// TestMappedLogMatchesWriteCalls: a log written through the memory map
// holds byte for byte what write calls would have written, once closed;
// while it is open (or after a crash) the file is longer, the rest zeros,
// and recovery reads every record and counts the zeros as reserved, not
// dropped, in every mode -- in the newest log only.
func TestMappedLogMatchesWriteCalls(t *testing.T) {
	dir := t.TempDir()
	mappedPath, plainPath := filepath.Join(dir, "000001.log"), filepath.Join(dir, "plain.log")
	w := mappedWriter(t, mappedPath)
	pf, err := vfs.Default.Create(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	pw := NewWriter(pf, WriterOptions{Mode: ModeWriteThrough})
	recs := testRecords()
	for i, r := range recs {
		if err := w.Append(r, false); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if err := pw.Append(r, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}

	// Open, as a crash would leave it: reserved space after the records.
	size, reserved := w.Size(), statSize(t, mappedPath)
	if reserved <= size || reserved%mapWindowMin != 0 {
		t.Fatalf("open mapped log: %d bytes of records in a %d-byte file; want reserved space up to a window boundary", size, reserved)
	}
	for _, mode := range []RecoveryMode{TolerateTornTail, AbsoluteConsistency, PointInTime} {
		res, err := checkLogs(mode, mappedPath)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		lr := res.Logs[0]
		if lr.Records != len(recs) || lr.KeepEnd != size || lr.Reserved != reserved-size || lr.Dropped() != 0 || lr.TornTail {
			t.Fatalf("%s: %+v; want %d records, %d reserved bytes, none dropped", mode, lr, len(recs), reserved-size)
		}
	}
	// An older log may not end in reserved space: it was sealed before the
	// next log was created.
	if _, err := checkLogs(TolerateTornTail, mappedPath, plainPath); !errors.Is(err, base.ErrCorruption) ||
		!strings.Contains(err.Error(), "000001.log") {
		t.Fatalf("older log ending in reserved space: %v, want corruption naming it", err)
	}

	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if got := statSize(t, mappedPath); got != size {
		t.Fatalf("sealed log is %d bytes, want %d", got, size)
	}
	// Appending after Seal (a failed log switch goes on with the log)
	// reserves again from the page holding the end.
	extra := sizedRec(rand.New(rand.NewPCG(9, 9)), uint64(len(recs)+1), 5000)
	if err := w.Append(extra, false); err != nil {
		t.Fatal(err)
	}
	if got := statSize(t, mappedPath); got <= w.Size() {
		t.Fatalf("after Seal and Append: %d-byte file, %d bytes of records; want space reserved again", got, w.Size())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed: exactly the records, the write-call log's bytes followed by
	// the extra record.
	mapped, _ := os.ReadFile(mappedPath)
	plain, _ := os.ReadFile(plainPath)
	if int64(len(mapped)) != w.Size() || len(mapped) < len(plain) || !bytes.Equal(mapped[:len(plain)], plain) {
		t.Fatalf("closed mapped log: %d bytes (writer says %d); its first %d bytes equal the write-call log's: %v",
			len(mapped), w.Size(), len(plain), bytes.Equal(mapped[:min(len(plain), len(mapped))], plain))
	}
	res, err := checkLogs(AbsoluteConsistency, mappedPath)
	if err != nil || res.Logs[0].Records != len(recs)+1 || res.Logs[0].Reserved != 0 {
		t.Fatalf("closed mapped log, read strictly: %v %+v", err, res)
	}
}

// TestMappedLogCutShort: a mapped log truncated behind the writer's back
// makes the next store fault; Append returns an error (sticky) instead of
// crashing the process.
func TestMappedLogCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "000001.log")
	w := mappedWriter(t, path)
	rng := rand.New(rand.NewPCG(4, 4))
	if err := w.Append(sizedRec(rng, 1, 100), false); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err := w.Append(sizedRec(rng, 2, 100), false)
	if err == nil || !strings.Contains(err.Error(), "memory map") {
		t.Fatalf("append to a log cut short: %v, want a fault reported as an error", err)
	}
	if err2 := w.Append(sizedRec(rng, 3, 100), false); err2 == nil {
		t.Fatal("the error is not sticky")
	}
	_ = w.Close()
}

// TestMappedLogNotOnOtherFiles: files that cannot be mapped (the in-memory
// file system) are written with write calls, MapLog or not, and only
// write-through maps.
func TestMappedLogNotOnOtherFiles(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/a.log")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{Mode: ModeWriteThrough, MapLog: true})
	if w.mapped != nil {
		t.Fatal("an in-memory file was mapped")
	}
	if err := w.Append([]byte("x"), false); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, fs, "/a.log"); got != w.Size() {
		t.Fatalf("file %d bytes, writer %d", got, w.Size())
	}
	w.Close()
	for _, mode := range []Mode{ModeBuffered, ModeSync} {
		f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "b.log"))
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(f, WriterOptions{Mode: mode, MapLog: true})
		if w.mapped != nil {
			t.Fatalf("%s log was mapped", mode)
		}
		w.Close()
	}
}

// smallDisk is an OS file whose reservations fail past limit bytes, as on
// a nearly full disk.
type smallDisk struct {
	vfs.File
	limit int64
}

func (d smallDisk) Reserve(size int64) error {
	if size > d.limit {
		return syscall.ENOSPC
	}
	return d.File.(vfs.WritableMapper).Reserve(size)
}

func (d smallDisk) MapWritable(off, n int64) ([]byte, func() error, error) {
	return d.File.(vfs.WritableMapper).MapWritable(off, n)
}

func (d smallDisk) Truncate(size int64) error { return d.File.(vfs.WritableMapper).Truncate(size) }

// TestMappedLogNearlyFullDisk: when a window cannot be reserved whole, a
// smaller one is tried, so the log fills the space there is (to within the
// smallest window) before Append fails; the failure is an error, and the
// records before it read back.
func TestMappedLogNearlyFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "000001.log")
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(vfs.WritableMapper); !ok {
		f.Close()
		t.Skip("logs are not memory-mapped on this system")
	}
	const limit = 700 << 10 // 256 KiB, then 512 KiB does not fit
	w := NewWriter(smallDisk{f, limit}, WriterOptions{Mode: ModeWriteThrough, MapLog: true, WritebackBytes: -1})
	if w.mapped == nil {
		w.Close()
		t.Skip("logs are not memory-mapped on this system (32-bit)")
	}
	rng := rand.New(rand.NewPCG(6, 6))
	var n int
	for ; ; n++ {
		if err := w.Append(sizedRec(rng, uint64(n+1), 1000), false); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append %d: %v, want ENOSPC", n, err)
			}
			break
		}
	}
	if used := w.Size(); used < limit-mapWindowLeast || used > limit {
		t.Fatalf("log stopped at %d bytes with %d reservable: want within %d of it", used, limit, mapWindowLeast)
	}
	_ = w.Close()
	res, err := checkLogs(AbsoluteConsistency, path)
	if err != nil {
		t.Fatalf("after the failure: %v", err)
	}
	if res.Logs[0].Records != n {
		t.Fatalf("after the failure: %v; %d records read, %d appended", err, res.Logs[0].Records, n)
	}
}
