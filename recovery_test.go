package bloomkv

// Recovery of the write-ahead logs: the strict rules (every log but the
// newest reads cleanly; sequences continue without a gap; writes recorded as
// synced must be found), the three WALRecoveryModes, and every byte of
// every log of a small database flipped in turn.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/record"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// multiLogDB writes perLog batches into each of logs write-ahead logs (the
// flusher is held off, so every log stays live) and returns the image: a
// kill -9 image when crashed, else the directory after Close. The log
// names come back oldest first.
func multiLogDB(t *testing.T, logs, perLog int, crashed bool) (*vfs.MemFS, []string, int) {
	t.Helper()
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs})
	db.mu.Lock()
	db.mu.flushPaused = true
	db.mu.Unlock()
	id := 0
	for l := 0; l < logs; l++ {
		if l > 0 {
			if err := db.enqueue(nil); err != nil { // a new log, as a full memtable makes
				t.Fatal(err)
			}
		}
		for i := 0; i < perLog; i++ {
			id++
			if err := db.Write(genBatch(id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	img := fs
	if crashed {
		img = fs.ProcessCrashClone()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names := filesOfType(t, img, base.FileTypeLog)
	slices.Sort(names)
	if len(names) != logs {
		t.Fatalf("logs %v, want %d", names, logs)
	}
	return img, names, id
}

// openImage opens a copy of img with mode.
func openImage(img *vfs.MemFS, mode WALRecoveryMode) (*DB, error) {
	return Open("/db", &Options{FS: img.ProcessCrashClone(), WALRecovery: mode})
}

func TestRecoveryOlderLogMustReadCleanly(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		img, logs, _ := multiLogDB(t, 2, 20, crashed)
		data := readMemFile(t, img, "/db/"+logs[0])
		for _, damage := range []struct {
			name string
			fn   func([]byte) []byte
		}{
			{"flip mid-file", flipAt(len(data) / 2)},
			{"flip in last record", flipAt(len(data) - 3)},
			{"cut short", truncateTo(len(data) - 5)},
			{"zeros appended", func(b []byte) []byte { return append(b, make([]byte, 10)...) }},
			{"first 32 bytes 0xff", func(b []byte) []byte { copy(b, bytes.Repeat([]byte{0xff}, 32)); return b }},
		} {
			what := fmt.Sprintf("crashed=%v: older log %s", crashed, damage.name)
			_, err := openImage(withDamage(t, img, logs[0], damage.fn), WALRecoverTolerateTornTail)
			expectCorruption(t, err, logs[0], what)
		}
	}
}

func TestRecoveryNewestLogDamage(t *testing.T) {
	img, logs, n := multiLogDB(t, 2, 20, true)
	newest := logs[1]
	data := readMemFile(t, img, "/db/"+newest)
	// Damage before the last record, with intact records after it.
	for _, off := range []int{0, 7, len(data) / 3, len(data) / 2} {
		_, err := openImage(withDamage(t, img, newest, flipAt(off)), WALRecoverTolerateTornTail)
		expectCorruption(t, err, newest, fmt.Sprintf("newest log flip@%d", off))
	}
	_, err := openImage(withDamage(t, img, newest, func(b []byte) []byte {
		copy(b, bytes.Repeat([]byte{0xff}, 32))
		return b
	}), WALRecoverTolerateTornTail)
	expectCorruption(t, err, newest, "newest log: first 32 bytes overwritten")
	// A cut end is a torn tail after a crash: a prefix, counted as dropped.
	db, err := openImage(withDamage(t, img, newest, truncateTo(len(data)-4)), WALRecoverTolerateTornTail)
	if err != nil {
		t.Fatal(err)
	}
	if p := verifyPrefix(t, db, n-1, n); p != n-1 {
		t.Fatalf("recovered %d of %d batches; a cut end drops just the last", p, n)
	}
	if m := db.Metrics(); m.WALRecoveryDroppedBytes == 0 {
		t.Fatal("the torn tail was not counted in WALRecoveryDroppedBytes")
	}
	db.Close()
}

func TestRecoveryCleanCloseLeavesNothingTorn(t *testing.T) {
	img, logs, n := multiLogDB(t, 2, 20, false)
	// Absolute consistency accepts what a clean Close leaves.
	db, err := openImage(img, WALRecoverAbsoluteConsistency)
	if err != nil {
		t.Fatalf("absolute consistency after a clean Close: %v", err)
	}
	verifyPrefix(t, db, n, n)
	db.Close()
	// Close recorded every write as durable: losing the newest log, or its
	// end, is an error, not a torn tail.
	for _, c := range []struct {
		name string
		img  *vfs.MemFS
	}{
		{"newest log deleted", func() *vfs.MemFS {
			c := img.ProcessCrashClone()
			if err := c.Remove("/db/" + logs[1]); err != nil {
				t.Fatal(err)
			}
			return c
		}()},
		{"newest log emptied", withDamage(t, img, logs[1], truncateTo(0))},
		{"newest log cut short", withDamage(t, img, logs[1], func(b []byte) []byte { return b[:len(b)-1] })},
	} {
		_, err := openImage(c.img, WALRecoverTolerateTornTail)
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "durable") {
			t.Fatalf("%s after a clean Close: %v; want corruption", c.name, err)
		}
	}
}

func TestRecoverySequenceGap(t *testing.T) {
	img, logs, _ := multiLogDB(t, 3, 10, true)
	c := img.ProcessCrashClone()
	if err := c.Remove("/db/" + logs[1]); err != nil {
		t.Fatal(err)
	}
	_, err := openImage(c, WALRecoverTolerateTornTail)
	expectCorruption(t, err, logs[2], "middle log deleted")
	if !strings.Contains(err.Error(), "missing") {
		t.Fatalf("the gap is not explained: %v", err)
	}
	// Absolute consistency refuses it too; point in time keeps the first
	// log and drops the third.
	if _, err := openImage(c, WALRecoverAbsoluteConsistency); !errors.Is(err, ErrCorruption) {
		t.Fatalf("absolute consistency: %v", err)
	}
	db, err := openImage(c, WALRecoverPointInTime)
	if err != nil {
		t.Fatal(err)
	}
	if p := verifyPrefix(t, db, 10, 30); p != 10 {
		t.Fatalf("point in time kept %d batches, want the 10 before the gap", p)
	}
	db.Close()
}

func TestRecoveryAbsoluteConsistencyRefusesTornTail(t *testing.T) {
	img, logs, n := multiLogDB(t, 1, 20, true)
	torn := withDamage(t, img, logs[0], func(b []byte) []byte { return b[:len(b)-2] })
	if _, err := openImage(torn, WALRecoverAbsoluteConsistency); !errors.Is(err, ErrCorruption) {
		t.Fatalf("absolute consistency with a torn tail: %v", err)
	}
	db, err := openImage(torn, WALRecoverTolerateTornTail)
	if err != nil {
		t.Fatal(err)
	}
	verifyPrefix(t, db, n-1, n)
	db.Close()
}

func TestRecoveryPointInTime(t *testing.T) {
	img, logs, n := multiLogDB(t, 2, 20, false)
	data := readMemFile(t, img, "/db/"+logs[0])
	damaged := withDamage(t, img, logs[0], flipAt(len(data)/2))
	// The default refuses it...
	if _, err := openImage(damaged, WALRecoverTolerateTornTail); !errors.Is(err, ErrCorruption) {
		t.Fatalf("default mode: %v", err)
	}
	// ...point in time opens as of the damage, reports what it dropped and
	// keeps the damaged logs in lost/.
	fs := damaged.ProcessCrashClone()
	db, err := Open("/db", &Options{FS: fs, WALRecovery: WALRecoverPointInTime})
	if err != nil {
		t.Fatal(err)
	}
	p := verifyPrefix(t, db, 1, n)
	if p == 0 || p >= 20 {
		t.Fatalf("point in time kept %d batches; the damage is in the middle of the first log of 20", p)
	}
	m := db.Metrics()
	if m.WALRecoveryDroppedBytes == 0 {
		t.Fatal("dropped bytes not counted")
	}
	lost, err := fs.List("/db/" + lostDir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lost)
	if !slices.Equal(lost, logs) {
		t.Fatalf("lost/ holds %v, want %v", lost, logs)
	}
	// The database goes on from there and reopens cleanly in the default mode.
	for id := p + 1; id <= p+5; id++ {
		if err := db.Write(genBatch(id)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db, err = Open("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if got := verifyPrefix(t, db, p+5, p+5); got != p+5 {
		t.Fatalf("after reopen %d batches, want %d", got, p+5)
	}
	db.Close()
}

// TestFlipEveryByteOfEveryLog flips each byte of each log of a small
// database in turn. After a crash, the result is ErrCorruption naming the
// log, or exactly the torn-tail drop of the last write; after a clean Close
// it is always ErrCorruption. Never a silent loss of more.
func TestFlipEveryByteOfEveryLog(t *testing.T) {
	stride := 1
	if testing.Short() {
		stride = 5
	}
	for _, crashed := range []bool{true, false} {
		img, logs, n := multiLogDB(t, 2, 6, crashed)
		lastRecord := lastRecordOffset(t, img, logs[len(logs)-1])
		for li, name := range logs {
			data := readMemFile(t, img, "/db/"+name)
			for pos := 0; pos < len(data); pos += stride {
				what := fmt.Sprintf("crashed=%v: flip %s@%d", crashed, name, pos)
				db, err := openImage(withDamage(t, img, name, flipAt(pos)), WALRecoverTolerateTornTail)
				if err != nil {
					expectCorruption(t, err, "/db/", what)
					if !strings.Contains(err.Error(), name) && !strings.Contains(err.Error(), "durable") {
						t.Fatalf("%s: error names neither the log nor the lost writes: %v", what, err)
					}
					continue
				}
				if !crashed {
					t.Fatalf("%s: opened after a clean Close; the flipped byte went unnoticed", what)
				}
				if li != len(logs)-1 || int64(pos) < lastRecord {
					t.Fatalf("%s: opened, but only damage in the newest log's last record may be a torn tail", what)
				}
				if p := verifyPrefix(t, db, n-1, n); p != n-1 {
					t.Fatalf("%s: recovered %d of %d batches", what, p, n)
				}
				db.Close()
			}
		}
	}
}

// lastRecordOffset returns the offset of the last record of a log.
func lastRecordOffset(t *testing.T, fs vfs.FS, name string) int64 {
	t.Helper()
	f, err := fs.Open("/db/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := record.NewReader(f, name)
	var last int64 = -1
	for {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				t.Fatalf("reading %s: %v", name, err)
			}
			break
		}
		last = r.RecordOffset()
	}
	if last < 0 {
		t.Fatalf("%s holds no record", name)
	}
	return last
}

func TestRecoveryAfterCrash(t *testing.T) {
	fs := vfs.NewMem()
	opts := tinyOptions(fs)
	db := mustOpen(t, "/db", opts)
	m := model{}
	for i := 0; i < 2000; i++ {
		k, v := fmt.Sprintf("k%05d", i%700), fmt.Sprintf("v%d", i)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		m[k] = v
		if i%300 == 0 {
			db.Delete([]byte(fmt.Sprintf("k%05d", i/2)))
			delete(m, fmt.Sprintf("k%05d", i/2))
		}
	}
	// A kill -9: everything written to files survives, nothing else runs.
	crashed := fs.ProcessCrashClone()
	db.Close()
	db2 := mustOpen(t, "/db", tinyOptions(crashed))
	defer db2.Close()
	for k := range m {
		checkGet(t, db2.Get, m, k, "after crash")
	}
	n := 0
	it := db2.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	if n != len(m) {
		t.Fatalf("after crash: %d keys, want %d", n, len(m))
	}
}

func TestRecoveryAfterCloseAndReopenKeepsSequence(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	for i := 0; i < 100; i++ {
		db.Put([]byte(fmt.Sprintf("a%03d", i)), []byte("1"))
	}
	db.Close()
	db = mustOpen(t, dir, nil)
	// A write after reopen must shadow the older one, across a flush.
	db.Put([]byte("a005"), []byte("2"))
	db.Flush()
	db.Compact(nil, nil)
	db.Close()
	db = mustOpen(t, dir, nil)
	defer db.Close()
	if v, err := db.Get([]byte("a005")); err != nil || string(v) != "2" {
		t.Fatalf("Get = %q, %v; want 2", v, err)
	}
}
