package bloomkv

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// removeCountingFS counts every Remove by path and, for tables and logs,
// pauses before removing: two collections running at once would then both
// list a file the other is about to remove (issue 34 saw that as WARNs and
// TableDeleted events carrying "no such file").
type removeCountingFS struct {
	vfs.FS
	pause time.Duration

	mu      sync.Mutex
	removes map[string]int
}

func (fs *removeCountingFS) Remove(name string) error {
	fs.mu.Lock()
	fs.removes[name]++
	fs.mu.Unlock()
	if t, _, ok := base.ParseFilename(filepath.Base(name)); ok && (t == base.FileTypeTable || t == base.FileTypeLog) {
		time.Sleep(fs.pause)
	}
	return fs.FS.Remove(name)
}

// TestObsoleteFilesDeletedOnce: a write-heavy run with background and
// manual compactions and flushes removes each obsolete file once -- one
// Remove, one TableDeleted or WALDeleted event without an error -- and
// logs nothing.
func TestObsoleteFilesDeletedOnce(t *testing.T) {
	fs := &removeCountingFS{FS: vfs.NewMem(), pause: 200 * time.Microsecond, removes: map[string]int{}}
	var logs bytes.Buffer
	var mu sync.Mutex
	created := map[string]bool{}
	tableDeleted := map[string][]error{}
	walDeleted := map[string][]error{}
	o := tinyOptions(fs)
	o.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o.EventListener = &EventListener{
		TableCreated: func(i TableCreateInfo) {
			mu.Lock()
			created[i.Path] = true
			mu.Unlock()
		},
		TableDeleted: func(i TableDeleteInfo) {
			mu.Lock()
			tableDeleted[i.Path] = append(tableDeleted[i.Path], i.Err)
			mu.Unlock()
		},
		WALDeleted: func(i WALDeleteInfo) {
			mu.Lock()
			walDeleted[i.Path] = append(walDeleted[i.Path], i.Err)
			mu.Unlock()
		},
	}
	db := mustOpen(t, "/db", o)
	const writers, perWriter = 4, 1500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				k := fmt.Appendf(nil, "k%05d", (i*7919+w*131)%4000)
				if err := db.Put(k, make([]byte, 40)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Manual compactions and flushes collect files too, beside the
	// background loop's collection.
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			var err error
			if i%2 == 0 {
				err = db.Compact(fmt.Appendf(nil, "k%05d", i*97%4000), nil)
			} else {
				err = db.Flush()
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	for db.Metrics().Compactions < 20 {
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// What Close left obsolete, the next Open collects.
	db = mustOpen(t, "/db", o)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[fs.PathJoin("/db", n)] = true
	}
	mu.Lock()
	defer mu.Unlock()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	twice := 0
	for path, n := range fs.removes {
		if n > 1 {
			twice++
			if twice <= 5 {
				t.Errorf("%s: removed %d times", path, n)
			}
		}
	}
	if twice > 0 {
		t.Errorf("%d files removed more than once", twice)
	}
	deleted := 0
	for path := range created {
		if present[path] {
			continue
		}
		deleted++
		if errs := tableDeleted[path]; len(errs) != 1 || errs[0] != nil || fs.removes[path] != 1 {
			t.Errorf("table %s: TableDeleted errors %v, %d removes; want one event without an error, one remove", path, errs, fs.removes[path])
		}
	}
	for path, errs := range tableDeleted {
		if !created[path] && len(errs) > 0 {
			t.Errorf("TableDeleted for %s, never created", path)
		}
	}
	for path, errs := range walDeleted {
		if len(errs) != 1 || errs[0] != nil || fs.removes[path] != 1 {
			t.Errorf("log %s: WALDeleted errors %v, %d removes; want one event without an error, one remove", path, errs, fs.removes[path])
		}
	}
	t.Logf("%d tables created, %d deleted, %d logs deleted", len(created), deleted, len(walDeleted))
	if deleted < 20 {
		t.Fatalf("only %d tables deleted: the run did not exercise collection", deleted)
	}
	if logs.Len() > 0 {
		t.Errorf("happy path logged:\n%.2000s", logs.String())
	}
}
