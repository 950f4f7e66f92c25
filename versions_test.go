package bloomkv

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/vfs"
)

// newTestReadState returns a published read state over a fresh version,
// and a function reporting how many times the version was released.
func newTestReadState() (*readState, func() int) {
	var released atomic.Int32
	set := manifest.NewVersionSet(vfs.NewMem(), "/db", &manifest.State{},
		manifest.Options{OnRelease: func() { released.Add(1) }})
	// The state takes over the set's reference to its current version, as
	// if a newer version had been installed.
	s := &readState{v: set.Current()}
	s.refs.Init()
	return s, func() int { return int(released.Load()) }
}

func TestReadStateReleasesOnceAfterRetire(t *testing.T) {
	s, released := newTestReadState()
	if !s.ref(0) || !s.ref(pslot.N-1) {
		t.Fatal("ref of a published state failed")
	}
	s.retire()
	if s.ref(0) {
		t.Fatal("ref of a retired state succeeded")
	}
	s.unref(0)
	if released() != 0 {
		t.Fatal("released with a holder left")
	}
	s.unref(pslot.N - 1)
	if released() != 1 {
		t.Fatalf("released %d times after the last holder left, want 1", released())
	}
	s.retire() // a second sum that sees zero must not release again
	if released() != 1 {
		t.Fatalf("released %d times", released())
	}

	s, released = newTestReadState()
	s.retire()
	if released() != 1 {
		t.Fatalf("a retired state nobody holds released %d times, want 1", released())
	}
}

// TestReadStateRefRacesRetire: goroutines take and drop references in
// arbitrary slots (as goroutines moving between Ps do) while the state is
// retired. A reference that succeeds must find the version not yet
// released, for as long as it is held; the version is released exactly
// once. Run it with -race.
func TestReadStateRefRacesRetire(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	for range rounds {
		s, released := newTestReadState()
		var wg sync.WaitGroup
		var bad atomic.Int32
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					slot := (g + i) % (2 * pslot.N)
					if !s.ref(slot) {
						return
					}
					if s.released.Load() {
						bad.Add(1)
					}
					s.unref(slot)
				}
			}()
		}
		s.retire()
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("%d references held a released state", bad.Load())
		}
		if released() != 1 {
			t.Fatalf("released %d times, want 1", released())
		}
	}
}

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
	// The writers go on past perWriter until 20 compactions have run (how
	// many writes that takes depends on the tree's shape rule).
	const writers, perWriter = 4, 1500
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i >= perWriter {
					select {
					case <-done:
						return
					default:
					}
				}
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
	for deadline := time.Now().Add(time.Minute); db.Metrics().Compactions < 20; {
		if time.Now().After(deadline) {
			close(done)
			wg.Wait()
			t.Fatalf("%d compactions in a minute, want 20", db.Metrics().Compactions)
		}
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
