package bloomkv

// Soak tests from the second review: Close racing every other call, and
// random manifest, CURRENT and directory faults (uncertain manifests) with
// kill -9 and power-loss images. They passed; they are long, so they run
// only with BLOOMKV_SOAK=1 (add -race for the first).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

func skipUnlessSoak(t *testing.T) {
	t.Helper()
	if os.Getenv("BLOOMKV_SOAK") != "1" {
		t.Skip("soak test; set BLOOMKV_SOAK=1 to run")
	}
}

func TestSoakCloseRaces(t *testing.T) {
	skipUnlessSoak(t)
	for iter := 0; iter < 80; iter++ {
		mem := vfs.NewMem()
		opts := tinyOptions(mem)
		opts.MaxManifestFileSize = 1 << 10
		db := mustOpen(t, "/db", opts)
		for i := 0; i < 300; i++ {
			_ = db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("v"))
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(iter), uint64(g)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					var err error
					switch g {
					case 0:
						err = db.Compact(nil, nil)
					case 1:
						lo := fmt.Sprintf("k%05d", rng.IntN(300))
						err = db.Compact([]byte(lo), []byte(lo+"z"))
					case 2, 3:
						err = db.Put([]byte(fmt.Sprintf("k%05d", rng.IntN(2000))), []byte("vv"))
					case 4:
						it := db.NewIterator(nil)
						for ok := it.First(); ok; ok = it.Next() {
						}
						err = it.Error()
						it.Close()
						_, gerr := db.Get([]byte("k00001"))
						if gerr != nil && !errors.Is(gerr, ErrClosed) && !errors.Is(gerr, ErrNotFound) {
							err = gerr
						}
					case 5:
						s := db.NewSnapshot()
						_, _ = s.Get([]byte("k00002"))
						_ = db.Metrics()
						s.Close()
					}
					if err != nil && !errors.Is(err, ErrClosed) {
						t.Errorf("g%d: %v", g, err)
						return
					}
					if errors.Is(err, ErrClosed) {
						return
					}
				}
			}(g)
		}
		time.Sleep(time.Duration(20+iter*3) * time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- db.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Close hung")
		}
		close(stop)
		wg.Wait()
		db2, err := Open("/db", opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if err := db2.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		db2.Close()
	}
}

func TestSoakRandomManifestFaults(t *testing.T) {
	skipUnlessSoak(t)
	for seed := uint64(1); seed <= 40; seed++ {
		mem := vfs.NewMem()
		efs := vfs.NewErrorFS(mem)
		rng := rand.New(rand.NewPCG(seed, 7))
		var on sync.Mutex
		enabled := true
		efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpCreate, vfs.OpRename, vfs.OpOpenDir}, Sticky: true, Match: func(p string) bool {
			on.Lock()
			defer on.Unlock()
			if !enabled {
				return false
			}
			if !(isManifestPath(p) || p == "/db" || strings.Contains(p, "CURRENT") || strings.Contains(p, ".tmp")) {
				return false
			}
			return rng.IntN(1000) < 25
		}})
		setEnabled := func(b bool) { on.Lock(); enabled = b; on.Unlock() }
		opts := tinyOptions(efs)
		opts.Sync = true
		opts.MaxManifestFileSize = 1 << 10
		setEnabled(false)
		db := mustOpen(t, "/db", opts)
		setEnabled(true)
		acked := map[int]bool{}
		maxStarted := 0
		id := 0
		for round := 0; round < 6; round++ {
			for n := 0; n < 400; n++ {
				id++
				maxStarted = id
				if err := db.Write(genBatch(id)); err == nil {
					acked[id] = true
				} else {
					break
				}
				if n%97 == 0 {
					_ = db.Compact(nil, nil)
				}
			}
			_ = db.WaitForCompactions()
			imgs := map[string]*vfs.MemFS{
				"kill":  cloneAtomically(efs, mem, false),
				"power": cloneAtomically(efs, mem, true),
			}
			_ = db.Close()
			for name, fs := range imgs {
				o := *opts
				o.FS = fs
				d, err := Open("/db", &o)
				if err != nil {
					t.Fatalf("seed %d round %d %s: reopen: %v", seed, round, name, err)
				}
				verifyBatches(t, d, maxStarted, func(i int) bool { return acked[i] })
				if err := d.checkInvariants(); err != nil {
					t.Fatal(err)
				}
				d.Close()
			}
			setEnabled(false)
			var err error
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatalf("seed %d round %d: healed reopen: %v", seed, round, err)
			}
			verifyBatches(t, db, maxStarted, func(i int) bool { return acked[i] })
			setEnabled(true)
		}
		t.Logf("seed %d: injected %d, acked %d of %d", seed, efs.Injected(), len(acked), maxStarted)
		db.Close()
	}
}

func TestSoakFaultsWithPowerLossImages(t *testing.T) {
	skipUnlessSoak(t)
	for seed := uint64(1); seed <= 30; seed++ {
		mem := vfs.NewMem()
		efs := vfs.NewErrorFS(mem)
		rng := rand.New(rand.NewPCG(seed, 9))
		var mu sync.Mutex
		enabled := false
		type img struct {
			fs    *vfs.MemFS
			acked int
		}
		var imgs []img
		var ackedN int
		efs.Inject(vfs.Rule{Sticky: true, Match: func(p string) bool {
			mu.Lock()
			defer mu.Unlock()
			if !enabled {
				return false
			}
			if rng.IntN(150) == 0 && len(imgs) < 12 {
				imgs = append(imgs, img{mem.CrashClone(), ackedN})
			}
			if !(isManifestPath(p) || p == "/db" || strings.Contains(p, "CURRENT") || strings.Contains(p, ".tmp") || isTablePath(p)) {
				return false
			}
			return rng.IntN(1000) < 20
		}})
		opts := tinyOptions(efs)
		opts.Sync = true
		opts.MaxManifestFileSize = 1 << 10
		db := mustOpen(t, "/db", opts)
		mu.Lock()
		enabled = true
		mu.Unlock()
		maxStarted := 0
		for id := 1; id <= 1500; id++ {
			maxStarted = id
			if err := db.Write(genBatch(id)); err != nil {
				break
			}
			mu.Lock()
			ackedN = id
			mu.Unlock()
			if id%300 == 0 {
				_ = db.Compact(nil, nil)
			}
		}
		mu.Lock()
		enabled = false
		got := imgs
		mu.Unlock()
		_ = db.Close()
		for i, im := range got {
			o := *opts
			o.FS = im.fs
			d, err := Open("/db", &o)
			if err != nil {
				t.Fatalf("seed %d image %d: reopen: %v", seed, i, err)
			}
			verifyBatches(t, d, maxStarted, func(id int) bool { return id <= im.acked })
			if err := d.checkInvariants(); err != nil {
				t.Fatal(err)
			}
			d.Close()
		}
		t.Logf("seed %d: %d images, injected %d, started %d", seed, len(got), efs.Injected(), maxStarted)
	}
}
