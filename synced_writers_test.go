package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

func syncedWriterKey(writer, i int) []byte { return fmt.Appendf(nil, "w%02d-%06d", writer, i) }

// TestSyncedWritersConcurrent runs concurrent writers, some synced and
// some not, through group commit with memtable switches in between, and takes crash images while they write. Each writer must read
// its own write as soon as it is acknowledged; a power-loss image must
// hold every synced write acknowledged before it was taken, and each
// writer's writes must form a prefix (never a hole); a kill -9 image must
// hold every acknowledged write (write-through).
func TestSyncedWritersConcurrent(t *testing.T) {
	for _, mode := range []WALMode{WALSync, WALWriteThrough, WALBuffered} {
		t.Run(mode.String(), func(t *testing.T) {
			testSyncedWritersConcurrent(t, mode)
		})
	}
}

func testSyncedWritersConcurrent(t *testing.T, mode WALMode) {
	const writers, perWriter = 8, 300
	fs := vfs.NewMem()
	// An fsync that takes a while lets writers pile up behind it, as on a
	// disk; the data it covers is what was written when it began.
	efs := vfs.NewErrorFS(fs)
	efs.SetSyncLatency(200 * time.Microsecond)
	db := mustOpen(t, "/db", &Options{FS: efs, WALMode: mode, MemtableSize: 16 << 10})
	defer db.Close()

	// synced[w]: writes 0..synced[w]-1 of writer w were acknowledged as
	// durable against a power loss; acked[w]: acknowledged at all.
	var synced, acked [writers]atomic.Int64
	syncedWriter := func(w int) bool { return mode == WALSync || w%2 == 0 }
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			val := bytes.Repeat([]byte{byte('a' + w)}, 40)
			opts := &WriteOptions{Sync: syncedWriter(w) && mode != WALSync}
			for i := range perWriter {
				b := new(Batch)
				b.Put(syncedWriterKey(w, i), val)
				if err := db.Apply(b, opts); err != nil {
					errc <- err
					return
				}
				acked[w].Store(int64(i + 1))
				if syncedWriter(w) {
					synced[w].Store(int64(i + 1))
				}
				if got, err := db.Get(syncedWriterKey(w, i)); err != nil || !bytes.Equal(got, val) {
					errc <- fmt.Errorf("writer %d: own write %d not visible after its ack: %q, %v", w, i, got, err)
					return
				}
			}
		})
	}

	check := func(img *vfs.MemFS, need *[writers]int64, what string) {
		t.Helper()
		db2, err := Open("/db", &Options{FS: img})
		if err != nil {
			t.Fatalf("%s: open: %v", what, err)
		}
		defer db2.Close()
		for w := range writers {
			n := 0 // writer w's writes present: they must be 0..n-1
			for ; n < perWriter; n++ {
				if _, err := db2.Get(syncedWriterKey(w, n)); errors.Is(err, ErrNotFound) {
					break
				} else if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			for i := n + 1; i < perWriter; i++ {
				if _, err := db2.Get(syncedWriterKey(w, i)); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: writer %d: write %d present but %d missing (a hole)", what, w, i, n)
				}
			}
			if int64(n) < need[w] {
				t.Fatalf("%s: writer %d: %d writes recovered, %d were acknowledged", what, w, n, need[w])
			}
		}
	}

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for round := 0; ; round++ {
		var needSynced, needAcked [writers]int64
		for w := range writers {
			needSynced[w] = synced[w].Load()
			needAcked[w] = acked[w].Load()
		}
		powerLoss := fs.CrashClone()
		killed := fs.ProcessCrashClone()
		check(powerLoss, &needSynced, fmt.Sprintf("round %d, power loss", round))
		if mode != WALBuffered {
			check(killed, &needAcked, fmt.Sprintf("round %d, kill -9", round))
		}
		select {
		case <-done:
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			m := db.Metrics()
			t.Logf("%d writes, %d log records, %d fsyncs, %d crash rounds", writers*perWriter, m.WALRecords, m.WALSyncs, round+1)
			if mode == WALSync && m.WALSyncs > writers*perWriter/2 {
				// With 8 writers and a slow fsync, each fsync should cover
				// several writes; one per write means no grouping at all.
				t.Errorf("%d fsyncs for %d synced writes from %d writers: writes are not grouped", m.WALSyncs, writers*perWriter, writers)
			}
			return
		default:
		}
	}
}

// TestSyncedWritersClose: Close returns only after every synced writer
// in flight got its answer, and each answer is either success (the write
// is then durable) or ErrClosed.
func TestSyncedWritersClose(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs, WALMode: WALSync})
	var wg sync.WaitGroup
	var ok [4]atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				err := db.Put(syncedWriterKey(w, i), []byte("v"))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				ok[w].Store(int64(i + 1))
			}
		})
	}
	for ok[0].Load() < 20 {
		runtime.Gosched()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	db2 := mustOpen(t, "/db", &Options{FS: fs.CrashClone()})
	defer db2.Close()
	for w := range 4 {
		for i := range int(ok[w].Load()) {
			if _, err := db2.Get(syncedWriterKey(w, i)); err != nil {
				t.Fatalf("writer %d write %d acknowledged before Close, then: %v", w, i, err)
			}
		}
	}
}

// BenchmarkSyncWriters8 runs 8 concurrent writers in WALSync mode on the
// real file system (t.TempDir: a disk here, not a tmpfs) and reports how
// many writes each fsync covered.
func BenchmarkSyncWriters8(b *testing.B) {
	const writers = 8
	db, err := Open(b.TempDir(), &Options{WALMode: WALSync})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	before := db.Metrics()
	var next atomic.Int64
	val := make([]byte, 100)
	b.ResetTimer()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			k := make([]byte, 16)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := db.Put(benchKey(k, uint64(i)), val); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	d := db.Metrics().Sub(before)
	b.ReportMetric(float64(b.N)/float64(max(d.WALSyncs, 1)), "writes/fsync")
}
