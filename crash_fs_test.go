package bloomkv

// Power-loss tests on the in-memory file system.
//
// A single writer runs the batch workload of workload_test.go against a DB
// with tiny memtables, tables and manifest (so flushes, compactions and
// manifest rewrites happen all the time) on an ErrorFS over a MemFS. A hook
// takes MemFS.CrashClone() -- what a power loss would leave -- just before
// the n-th file operation of a chosen engine region: appending to the log,
// switching memtables, inside a flush, inside a compaction, inside a
// manifest rewrite, while deleting obsolete files, or anywhere. The clone is
// then opened and must hold exactly the batches 1..P for some P:
//
//   - with Options.Sync, P >= every batch acknowledged before the clone;
//   - without it, any P (a prefix of what was written), never more than
//     was started;
//
// and the tree must pass checkInvariants and keep working after recovery.
// A second crash during the recovery of a crashed image is checked too.

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// crashFSBatches bounds the workload; the writer stops once the clone is
// taken.
const crashFSBatches = 1200

func crashFSOptions(fs vfs.FS, syncWrites bool) *Options {
	o := tinyOptions(fs)
	o.Sync = syncWrites
	// The smallest manifest allowed: a rewrite every dozen edits or so.
	o.MaxManifestFileSize = 1 << 10
	return o
}

// crashPoint says where to take the crash image: before the n-th write-type
// operation (create, write, sync, rename, remove) made from region ("" for
// any region).
type crashPoint struct {
	region region
	n      int
}

func (cp crashPoint) String() string {
	r := string(cp.region)
	if r == "" {
		r = "anywhere"
	}
	return fmt.Sprintf("%s#%d", r, cp.n)
}

// crashImage is a power-loss image and what the writer knew when it was
// taken.
type crashImage struct {
	fs      *vfs.MemFS
	acked   int // batches acknowledged before the image was taken
	started int // batches started by the time the image was complete
	hit     bool
}

// runToCrashPoint runs the workload and returns the image taken at cp, or
// one taken at the end if the workload never reached cp.
func runToCrashPoint(t *testing.T, syncWrites bool, cp crashPoint) crashImage {
	t.Helper()
	mem := vfs.NewMem()
	efs := vfs.NewErrorFS(mem)
	regions := newRegionTracker()
	opts := crashFSOptions(efs, syncWrites)
	opts.testHooks = regions.hooks()
	db := mustOpen(t, "/db", opts)

	var acked, started atomic.Int64
	var mu sync.Mutex // guards img and seen
	var img crashImage
	seen := 0
	var stopped atomic.Bool // the workload is over: hooks do nothing
	addHook(efs, writeOps, func(op vfs.Op, path string) {
		if stopped.Load() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if img.fs != nil || !regions.in(cp.region, op, path) {
			return
		}
		if seen++; seen == cp.n {
			// Hooks run under the ErrorFS's mutex: no other operation
			// can slip in while the image is taken.
			a := acked.Load()
			c := mem.CrashClone()
			img = crashImage{fs: c, acked: int(a), started: int(started.Load()), hit: true}
		}
	})
	taken := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return img.fs != nil
	}
	for id := 1; id <= crashFSBatches && !taken(); id++ {
		started.Store(int64(id))
		if err := db.Write(genBatch(id)); err != nil {
			t.Fatalf("batch %d: %v", id, err)
		}
		acked.Store(int64(id))
	}
	if !taken() {
		if err := db.WaitForCompactions(); err != nil {
			t.Fatal(err)
		}
	}
	stopped.Store(true)
	if !taken() {
		// Not under mu: a hook holding the ErrorFS's mutex may be waiting
		// for it.
		n := int(acked.Load())
		c := cloneAtomically(efs, mem, true)
		mu.Lock()
		if img.fs == nil {
			img = crashImage{fs: c, acked: n, started: n}
		}
		mu.Unlock()
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return img
}

// checkCrashImage opens a crash image, checks that it holds batches 1..P
// with P in the range the durability promise allows, that the tree is
// sound, and that the database goes on working. It returns P.
func checkCrashImage(t *testing.T, img crashImage, syncWrites bool) int {
	t.Helper()
	opts := crashFSOptions(img.fs, syncWrites)
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatalf("Open after crash (acked %d, started %d): %v", img.acked, img.started, err)
	}
	minP := 0
	if syncWrites {
		minP = img.acked
	}
	p := verifyPrefix(t, db, minP, img.started)
	checkInvariants(t, db)
	// Recovery must leave a working database whose new writes shadow the
	// recovered ones, across a flush and a reopen.
	const more = 25
	for id := p + 1; id <= p+more; id++ {
		if err := db.Write(genBatch(id)); err != nil {
			t.Fatalf("write after recovery: %v", err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatalf("Flush after recovery: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, "/db", opts)
	verifyPrefix(t, db, p+more, p+more)
	checkInvariants(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// crashRegions are the regions crashed in, with the operation counts n to
// crash at. The counts reach past the first few operations of a region
// (its first flush, first compaction...) into later ones.
var crashRegions = []struct {
	region region
	ns     []int
}{
	{regionLogWrite, []int{1, 7, 150, 600, 1100}},
	{regionSwitchMemtable, []int{1, 2, 9, 60}},
	{regionFlush, []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 40, 97, 250, 600}},
	{regionCompaction, []int{1, 2, 3, 4, 5, 6, 7, 9, 17, 33, 70, 150, 260}},
	{regionManifestWrite, []int{1, 2, 3, 4, 5, 6, 7, 8, 15, 26, 50, 85}},
	{regionObsolete, []int{1, 3, 10, 30, 100, 250}},
	{"", []int{1, 10, 100, 400, 1000, 1700, 2600}},
}

func TestCrashFSAtManyPoints(t *testing.T) {
	hits, total := 0, 0
	regionHits := map[region]int{}
	for _, r := range crashRegions {
		for i, n := range r.ns {
			cp := crashPoint{r.region, n}
			if testing.Short() && i%2 == 1 {
				continue
			}
			for _, syncWrites := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/sync=%v", cp, syncWrites), func(t *testing.T) {
					img := runToCrashPoint(t, syncWrites, cp)
					total++
					if img.hit {
						hits++
						regionHits[cp.region]++
					}
					p := checkCrashImage(t, img, syncWrites)
					t.Logf("hit=%v acked=%d started=%d recovered=1..%d", img.hit, img.acked, img.started, p)
				})
			}
		}
	}
	// Each region must really have been crashed in: a renamed function or
	// a workload too small would otherwise make these tests vacuous.
	if hits < total*3/4 {
		t.Fatalf("only %d of %d crash points were reached", hits, total)
	}
	for _, r := range crashRegions {
		if regionHits[r.region] == 0 {
			t.Fatalf("no crash point in region %q was reached", r.region)
		}
	}
	t.Logf("%d of %d crash points reached", hits, total)
}

// TestCrashFSDuringRecovery loses power a second time while Open recovers
// a crashed image (replaying logs into tables, writing a fresh manifest,
// deleting old files). The first image comes from a Sync workload, so its
// logs hold every acknowledged batch and recovery has real work to do; the
// second image must still hold every one of them.
func TestCrashFSDuringRecovery(t *testing.T) {
	firsts := []crashPoint{{regionLogWrite, 200}, {regionFlush, 2}, {regionCompaction, 3}, {regionManifestWrite, 2}, {"", 1500}}
	for _, first := range firsts {
		img := runToCrashPoint(t, true, first)
		for _, n := range []int{1, 2, 3, 5, 8, 13, 21} {
			t.Run(fmt.Sprintf("%s/recover#%d", first, n), func(t *testing.T) {
				// Work on a copy: the first image is reused for every n.
				base := img.fs.ProcessCrashClone()
				efs := vfs.NewErrorFS(base)
				var second *vfs.MemFS
				seen := 0
				var mu sync.Mutex
				var opening atomic.Bool // Open has not returned yet
				opening.Store(true)
				addHook(efs, writeOps, func(vfs.Op, string) {
					mu.Lock()
					defer mu.Unlock()
					if second == nil && opening.Load() {
						if seen++; seen == n {
							second = base.CrashClone()
						}
					}
				})
				db, err := Open("/db", crashFSOptions(efs, true))
				opening.Store(false)
				if err != nil {
					t.Fatalf("first recovery: %v", err)
				}
				p1 := verifyPrefix(t, db, img.acked, img.started)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if second == nil {
					t.Skipf("recovery made fewer than %d write operations", n)
				}
				p2 := checkCrashImage(t, crashImage{fs: second, acked: img.acked, started: img.started}, true)
				// Both recoveries read the same synced log bytes.
				if p2 != p1 {
					t.Fatalf("second recovery holds batches 1..%d, the first 1..%d", p2, p1)
				}
			})
		}
	}
}

// TestCrashFSDuringCreation kills (and powers off) the process at every
// write operation of the very first Open of a directory. No write was ever
// acknowledged, so every image must open as an empty, working database --
// in particular a manifest left without CURRENT must not brick it.
func TestCrashFSDuringCreation(t *testing.T) {
	for n := 1; ; n++ {
		mem := vfs.NewMem()
		efs := vfs.NewErrorFS(mem)
		var images []*vfs.MemFS
		seen := 0
		addHook(efs, writeOps, func(vfs.Op, string) {
			if seen++; seen == n {
				images = append(images, mem.ProcessCrashClone(), mem.CrashClone())
			}
		})
		db := mustOpen(t, "/db", crashFSOptions(efs, true))
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if images == nil {
			if n < 4 {
				t.Fatalf("creating a database made only %d write operations", n-1)
			}
			break
		}
		for i, img := range images {
			db, err := Open("/db", crashFSOptions(img, true))
			if err != nil {
				t.Fatalf("crash at operation %d of creation (image %d): Open: %v", n, i, err)
			}
			verifyPrefix(t, db, 0, 0)
			if err := db.Write(genBatch(1)); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCrashFSRegionCounts logs how many write operations each region makes
// in one run of the workload (run with -v to tune crashRegions).
func TestCrashFSRegionCounts(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("diagnostic; run with -v")
	}
	for _, syncWrites := range []bool{true, false} {
		mem := vfs.NewMem()
		efs := vfs.NewErrorFS(mem)
		regions := newRegionTracker()
		opts := crashFSOptions(efs, syncWrites)
		opts.testHooks = regions.hooks()
		db := mustOpen(t, "/db", opts)
		var mu sync.Mutex
		counts := map[region]int{}
		addHook(efs, writeOps, func(op vfs.Op, path string) {
			mu.Lock()
			defer mu.Unlock()
			counts["anywhere"]++
			for _, r := range crashRegions {
				if r.region != "" && regions.in(r.region, op, path) {
					counts[r.region]++
				}
			}
		})
		for id := 1; id <= crashFSBatches; id++ {
			if err := db.Write(genBatch(id)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("sync=%v: %v", syncWrites, counts)
	}
}

// BenchmarkRecoverAfterKill measures Open after a kill -9 that left 2000
// batches (about 250 KB) in the write-ahead log: replaying them, writing
// the level-0 table, a fresh manifest and log.
func BenchmarkRecoverAfterKill(b *testing.B) {
	defer func(old bool) { invariantChecks = old }(invariantChecks)
	invariantChecks = false
	mem := vfs.NewMem()
	db := mustOpen(b, "/db", &Options{FS: mem})
	for id := 1; id <= 2000; id++ {
		if err := db.Write(genBatch(id)); err != nil {
			b.Fatal(err)
		}
	}
	img := mem.ProcessCrashClone()
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for _, name := range walFiles(b, img) {
		if fi, err := img.Stat("/db/" + name); err == nil {
			b.SetBytes(fi.Size())
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		db, err := Open("/db", &Options{FS: img.ProcessCrashClone()})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// walFiles lists the write-ahead logs of /db.
func walFiles(b *testing.B, fs vfs.FS) []string {
	names, err := fs.List("/db")
	if err != nil {
		b.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			logs = append(logs, n)
		}
	}
	return logs
}
