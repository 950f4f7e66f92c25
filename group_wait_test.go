package bloomkv

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// A lone synced writer finds itself back in the queue when it leads again,
// so it never waits for anyone (its latency is one fsync, as before).
func TestGroupWaitLoneWriterNeverWaits(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.NewMem())
	efs.SetSyncLatency(100 * time.Microsecond)
	db := mustOpen(t, "/db", &Options{FS: efs, WALMode: WALSync})
	defer db.Close()
	for i := range 50 {
		if err := db.Put(fmt.Appendf(nil, "k%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.Lock()
	waits := db.mu.groupWait.waits
	db.mu.Unlock()
	if waits != 0 {
		t.Fatalf("a lone synced writer waited %d times for others", waits)
	}
}

// Concurrent synced writers: leaders wait for the writers of the previous
// group to come back, every write is acknowledged and readable, and each
// fsync carries more than one write. (How many is timing; the cohort
// effect this works against gives about half the writers per fsync.)
func TestGroupWaitConcurrentSyncedWriters(t *testing.T) {
	const writers, perWriter = 8, 100
	efs := vfs.NewErrorFS(vfs.NewMem())
	efs.SetSyncLatency(300 * time.Microsecond)
	db := mustOpen(t, "/db", &Options{FS: efs, WALMode: WALSync})
	defer db.Close()
	before := db.Metrics()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := db.Put(fmt.Appendf(nil, "w%d-%03d", w, i), []byte("v")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	d := db.Metrics().Sub(before)
	for w := range writers {
		for i := range perWriter {
			if _, err := db.Get(fmt.Appendf(nil, "w%d-%03d", w, i)); err != nil {
				t.Fatalf("w%d-%03d: %v", w, i, err)
			}
		}
	}
	if d.WALSyncs == 0 || d.WALSyncs >= writers*perWriter {
		t.Fatalf("%d fsyncs for %d synced writes: no grouping", d.WALSyncs, writers*perWriter)
	}
	db.mu.Lock()
	waits := db.mu.groupWait.waits
	db.mu.Unlock()
	t.Logf("%d writes, %d fsyncs (%.2f per fsync), %d leader waits",
		writers*perWriter, d.WALSyncs, float64(writers*perWriter)/float64(d.WALSyncs), waits)
}
