package bloomkv

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// slowSyncFS makes every file sync take a millisecond.
type slowSyncFS struct{ vfs.FS }

type slowSyncFile struct{ vfs.File }

func (fs slowSyncFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return slowSyncFile{f}, nil
}

func (f slowSyncFile) Sync() error {
	time.Sleep(time.Millisecond)
	return f.File.Sync()
}

// TestGroupCommit runs concurrent synced writers and checks that log
// records (and fsyncs) are shared between writes, and that every write is
// readable afterwards.
func TestGroupCommit(t *testing.T) {
	// A sync that takes a millisecond, as on a real disk (t.TempDir may be
	// a tmpfs where fsync is free), so that writers queue behind it.
	db := mustOpen(t, t.TempDir(), &Options{Sync: true, FS: slowSyncFS{vfs.Default}})
	defer db.Close()
	const writers, perWriter = 8, 100
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if err := db.Put([]byte(fmt.Sprintf("w%d-%03d", w, i)), []byte("v")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	m := db.Metrics()
	t.Logf("%d writes in %d log records, %d syncs", writers*perWriter, m.WALRecords, m.WALSyncs)
	if m.WALRecords >= writers*perWriter || m.WALSyncs != m.WALRecords {
		t.Fatalf("no group commit: %d writes, %d records, %d syncs", writers*perWriter, m.WALRecords, m.WALSyncs)
	}
	for w := 0; w < writers; w++ {
		for i := 0; i < perWriter; i++ {
			if _, err := db.Get([]byte(fmt.Sprintf("w%d-%03d", w, i))); err != nil {
				t.Fatalf("w%d-%03d: %v", w, i, err)
			}
		}
	}
}

func TestCallerSlicesNotRetained(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem()})
	defer db.Close()
	k, v := []byte("key"), []byte("value")
	db.Put(k, v)
	k[0], v[0] = 'X', 'X'
	got, err := db.Get([]byte("key"))
	if err != nil || string(got) != "value" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	got[0] = 'Y'
	if again, _ := db.Get([]byte("key")); string(again) != "value" {
		t.Fatalf("returned value aliases the engine: %q", again)
	}
}
