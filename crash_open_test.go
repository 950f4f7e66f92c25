package bloomkv

// Crash points inside Open, in every WAL mode.
//
// A database is written with the batch workload of workload_test.go and
// "killed": its directory is copied while it is still open, with its logs
// unsealed (a memory-mapped log still ends in reserved zeros), which is what
// a kill -9 leaves. That image is then recovered again and again, and the
// recovery is cut at each of its file operations in turn -- log replay's
// table writes, the manifest snapshot, the new log (and its reserved
// space), the version edit, obsolete-file removal -- by copying the
// directory just before the operation (kill -9) or, on the in-memory file
// system, by taking what a power loss would leave. Every such image must
// open in the default recovery mode (and read-only, without changing a
// byte) and hold exactly the batches the first image held: recovery loses
// nothing it found and invents nothing. A power-loss image may hold fewer,
// but never fewer than what was durable before the first recovery began.
//
// On 64-bit Linux the write-through log is written through a shared memory
// map, which only the operating system's file system has; the kill -9
// sweep therefore runs on a real directory, through hookFS, which forwards
// the mapping interfaces so that the engine maps its log as usual.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

// crashOpenWAL is one WAL configuration the sweeps run in.
type crashOpenWAL struct {
	name string
	mode WALMode
	mmap bool // write-through logs memory-mapped (where the system can)
}

var crashOpenWALs = []crashOpenWAL{
	{"write-through-mapped", WALWriteThrough, true},
	{"write-through", WALWriteThrough, false},
	{"buffered", WALBuffered, false},
	{"sync", WALSync, false},
	{"disabled", WALDisabled, false},
}

// crashOpenBatches is how many batches the first image's writer wrote: a
// few memtables' worth, so that the image has tables, several logs and a
// memtable's worth of writes only a log holds.
const crashOpenBatches = 140

func crashOpenOptions(fs vfs.FS, w crashOpenWAL) *Options {
	o := tinyOptions(fs)
	o.WALMode = w.mode
	o.DisableMmap = !w.mmap
	o.MaxManifestFileSize = 1 << 10
	// Nothing may write behind the test's back while an image is copied.
	o.IdleCompactionDelay = -1
	o.DisableReadCompactions = true
	return o
}

// writeKilledImage writes batches 1..crashOpenBatches with w's WAL and
// returns what a kill -9 at the end leaves: every write reached the
// operating system (a buffered log is written out with SyncWAL), nothing
// was sealed or cleaned up. snapshot copies the database's files as they
// are.
func writeKilledImage(t *testing.T, fs vfs.FS, dir string, w crashOpenWAL, snapshot func()) {
	t.Helper()
	db := mustOpen(t, dir, crashOpenOptions(fs, w))
	for id := 1; id <= crashOpenBatches; id++ {
		if err := db.Write(genBatch(id)); err != nil {
			t.Fatalf("batch %d: %v", id, err)
		}
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	if w.mode == WALBuffered {
		if err := db.SyncWAL(); err != nil {
			t.Fatal(err)
		}
	}
	snapshot()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCrashOpenKillEveryOperation kills a recovery (on the operating
// system's file system) at every one of its file operations, in every WAL
// mode. Before the fix of issue 24 the mapped mode failed: a kill after the
// new log had reserved its space, before the manifest named it, left a log
// of zeros after the replayed log -- whose own reserved zeros the next
// Open then read as corruption.
func TestCrashOpenKillEveryOperation(t *testing.T) {
	for _, w := range crashOpenWALs {
		t.Run(w.name, func(t *testing.T) {
			root := t.TempDir()
			live, first := filepath.Join(root, "live"), filepath.Join(root, "first")
			writeKilledImage(t, vfs.Default, live, w, func() { waitDirQuiet(t, live); copyDir(t, live, first) })
			if w.mode == WALWriteThrough && w.mmap && logsMapped && !newestLogReserved(t, first) {
				t.Fatal("the first image's log is not memory-mapped: the sweep would not test reserved space")
			}
			// What the first image holds, from a recovery of a copy.
			p0 := recoverCopy(t, first, filepath.Join(root, "p0"), w, 0, crashOpenBatches)
			if w.mode != WALDisabled && p0 != crashOpenBatches {
				t.Fatalf("the first image holds batches 1..%d of %d acknowledged", p0, crashOpenBatches)
			}

			ops := 0
			for n := 1; ; n++ {
				work, img := filepath.Join(root, fmt.Sprintf("work%d", n)), filepath.Join(root, fmt.Sprintf("img%d", n))
				copyDir(t, first, work)
				hfs := newHookFS(vfs.Default)
				seen := 0
				var taken string
				hfs.before = func(op, path string) {
					if seen++; seen == n {
						copyDir(t, work, img)
						taken = op + " " + filepath.Base(path)
					}
				}
				db, err := Open(work, crashOpenOptions(hfs, w))
				if err != nil {
					t.Fatalf("recovering the first image: %v", err)
				}
				hfs.stop()
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if taken == "" {
					ops = n - 1
					break
				}
				checkOpenImage(t, fmt.Sprintf("killed before operation %d (%s)", n, taken), img, w, p0, p0)
				mustRemoveAll(t, work, img)
			}
			if ops < 5 {
				t.Fatalf("recovery made only %d file operations: the sweep tested nothing", ops)
			}
			t.Logf("killed recovery at each of its %d file operations; every image held batches 1..%d", ops, p0)
		})
	}
}

// TestCrashOpenKillRepeatedly kills recoveries of recoveries: each image is
// the previous image's recovery cut at a random operation, so leftovers of
// several interrupted recoveries (several logs of zeros, several unlisted
// tables) pile up. Each must still open with the first image's batches.
func TestCrashOpenKillRepeatedly(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	rng := rand.New(rand.NewPCG(1, 24))
	for _, w := range crashOpenWALs {
		t.Run(w.name, func(t *testing.T) {
			root := t.TempDir()
			live, img := filepath.Join(root, "live"), filepath.Join(root, "img0")
			writeKilledImage(t, vfs.Default, live, w, func() { waitDirQuiet(t, live); copyDir(t, live, img) })
			p0 := recoverCopy(t, img, filepath.Join(root, "p0"), w, 0, crashOpenBatches)
			for round := 1; round <= rounds; round++ {
				// Operations 1-6 are where the new log and the manifest
				// are written; beyond them the recovery is mostly done.
				n := 1 + rng.IntN(8)
				work, next := filepath.Join(root, fmt.Sprintf("work%d", round)), filepath.Join(root, fmt.Sprintf("img%d", round))
				copyDir(t, img, work)
				hfs := newHookFS(vfs.Default)
				seen := 0
				hfs.before = func(op, path string) {
					if seen++; seen == n {
						copyDir(t, work, next)
					}
				}
				db, err := Open(work, crashOpenOptions(hfs, w))
				if err != nil {
					t.Fatalf("round %d: recovering: %v", round, err)
				}
				hfs.stop()
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(next); err != nil {
					copyDir(t, img, next) // fewer than n operations: the same image again
				}
				checkImageNoWrite(t, fmt.Sprintf("round %d", round), next, w, p0)
				img = next
			}
			checkOpenImage(t, "after every round", img, w, p0, p0)
		})
	}
}

// TestCrashOpenPowerLossEveryOperation is the sweep on the in-memory file
// system, where both a kill -9 (ProcessCrashClone) and a power loss
// (CrashClone) can be taken at every operation of the recovery. A power
// loss may take writes the first image held only in unsynced log bytes,
// never more than that: the lower bound is what a power loss right at the
// first image would have kept.
func TestCrashOpenPowerLossEveryOperation(t *testing.T) {
	for _, w := range crashOpenWALs {
		if w.mmap {
			continue // the in-memory file system maps nothing
		}
		t.Run(w.name, func(t *testing.T) {
			var first *vfs.MemFS
			mem := vfs.NewMem()
			writeKilledImage(t, mem, "/db", w, func() { first = mem.ProcessCrashClone() })
			p0 := recoverMem(t, first.ProcessCrashClone(), w, 0, crashOpenBatches)
			durable := recoverMem(t, first.CrashClone(), w, 0, p0)
			if w.mode == WALSync && durable != crashOpenBatches {
				t.Fatalf("sync mode: a power loss keeps batches 1..%d of %d acknowledged", durable, crashOpenBatches)
			}
			ops := 0
			for n := 1; ; n++ {
				base := first.ProcessCrashClone()
				efs := vfs.NewErrorFS(base)
				var kill, power *vfs.MemFS
				seen := 0
				var mu sync.Mutex
				opening := true
				addHook(efs, writeOps, func(vfs.Op, string) {
					mu.Lock()
					defer mu.Unlock()
					if opening {
						if seen++; seen == n {
							kill, power = base.ProcessCrashClone(), base.CrashClone()
						}
					}
				})
				db, err := Open("/db", crashOpenOptions(efs, w))
				mu.Lock()
				opening = false
				mu.Unlock()
				if err != nil {
					t.Fatalf("recovering the first image: %v", err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if kill == nil {
					ops = n - 1
					break
				}
				checkMemImage(t, fmt.Sprintf("kill -9 at operation %d", n), kill, w, p0, p0)
				checkMemImage(t, fmt.Sprintf("power loss at operation %d", n), power, w, durable, p0)
			}
			if ops < 5 {
				t.Fatalf("recovery made only %d file operations", ops)
			}
			t.Logf("%d operations; kill -9 images hold 1..%d, power-loss images %d..%d", ops, p0, durable, p0)
		})
	}
}

// recoverCopy opens a copy of the image in dir (at scratch) and returns
// the prefix of batches it holds, which must lie in [minP, maxP].
func recoverCopy(t *testing.T, dir, scratch string, w crashOpenWAL, minP, maxP int) int {
	t.Helper()
	copyDir(t, dir, scratch)
	defer mustRemoveAll(t, scratch)
	db, err := Open(scratch, crashOpenOptions(vfs.Default, w))
	if err != nil {
		t.Fatalf("recovering %s: %v", dir, err)
	}
	defer db.Close()
	return verifyPrefix(t, db, minP, maxP)
}

func recoverMem(t *testing.T, fs *vfs.MemFS, w crashOpenWAL, minP, maxP int) int {
	t.Helper()
	db, err := Open("/db", crashOpenOptions(fs, w))
	if err != nil {
		t.Fatalf("recovering: %v", err)
	}
	defer db.Close()
	return verifyPrefix(t, db, minP, maxP)
}

// checkOpenImage checks a kill -9 image on the operating system's file
// system: a read-only open changes nothing and sees batches 1..P with
// minP <= P <= maxP; then checkImageWritable.
func checkOpenImage(t *testing.T, what, dir string, w crashOpenWAL, minP, maxP int) {
	t.Helper()
	p := checkImageNoWrite(t, what, dir, w, minP)
	if p > maxP {
		t.Fatalf("%s: holds batches 1..%d, more than the %d written", what, p, maxP)
	}
	checkImageWritable(t, what, vfs.Default, dir, w, p)
}

// checkImageNoWrite opens the image read-only, checks that it holds batches
// 1..P with P >= minP, and that the open changed no byte of the directory.
func checkImageNoWrite(t *testing.T, what, dir string, w crashOpenWAL, minP int) int {
	t.Helper()
	before := dirDigest(t, dir)
	o := crashOpenOptions(vfs.Default, w)
	o.ReadOnly = true
	db, err := Open(dir, o)
	if err != nil {
		t.Fatalf("%s: read-only Open: %v", what, err)
	}
	p := verifyPrefix(t, db, minP, crashOpenBatches)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirDigest(t, dir); after != before {
		t.Fatalf("%s: a read-only open changed the directory:\nbefore %s\nafter  %s", what, before, after)
	}
	return p
}

// checkMemImage is checkOpenImage on the in-memory file system.
func checkMemImage(t *testing.T, what string, fs *vfs.MemFS, w crashOpenWAL, minP, maxP int) {
	t.Helper()
	o := crashOpenOptions(fs, w)
	o.ReadOnly = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatalf("%s: read-only Open: %v", what, err)
	}
	p := verifyPrefix(t, db, minP, maxP)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkImageWritable(t, what, fs, "/db", w, p)
}

// checkImageWritable opens an image that holds batches 1..p read-write in
// the default recovery mode: it must hold the same, keep working, and
// survive a reopen.
func checkImageWritable(t *testing.T, what string, fs vfs.FS, dir string, w crashOpenWAL, p int) {
	t.Helper()
	db, err := Open(dir, crashOpenOptions(fs, w))
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	if got := verifyPrefix(t, db, p, p); got != p {
		t.Fatalf("%s: read-write open holds 1..%d, read-only 1..%d", what, got, p)
	}
	checkInvariants(t, db)
	if err := db.Write(genBatch(p + 1)); err != nil {
		t.Fatalf("%s: write after recovery: %v", what, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, crashOpenOptions(fs, w))
	if err != nil {
		t.Fatalf("%s: second Open: %v", what, err)
	}
	verifyPrefix(t, db, p+1, p+1)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the regular files of src (and of its subdirectories) to
// dst, which must not exist. Reading a file gives what the operating system
// holds, stores through a shared memory map included: what a kill -9 would
// leave.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// waitDirQuiet waits until dir stops changing: the first image is copied
// from an open database, and WaitForCompactions does not wait for the
// removal of the files the last compaction made obsolete. A copy taken
// while they go could list a file and then miss it.
func waitDirQuiet(t *testing.T, dir string) {
	t.Helper()
	prev, _ := tryDirDigest(dir)
	for range 200 {
		time.Sleep(20 * time.Millisecond)
		cur, err := tryDirDigest(dir) // a file removed mid-walk: not quiet yet
		if err == nil && cur == prev {
			return
		}
		prev = cur
	}
	t.Fatalf("%s kept changing for 4 s after the writes stopped", dir)
}

func mustRemoveAll(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
}

// dirDigest describes every file under dir by name, size and content.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	d, err := tryDirDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func tryDirDigest(dir string) (string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		lines = append(lines, fmt.Sprintf("%s:%d:%x", rel, len(b), crcOf(b)))
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(lines)
	return fmt.Sprint(lines), nil
}

func crcOf(b []byte) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// hookFS wraps a file system and calls before(op, path) ahead of every
// operation that changes something: creating, writing, syncing, reserving,
// truncating, renaming, linking and removing files, and making directories.
// Operations run one at a time, so what before copies is the state between
// two operations. Files keep the optional interfaces of the files they
// wrap (memory maps for reading and writing, writeback hints), so the
// engine takes the same paths as on the wrapped system.
type hookFS struct {
	vfs.FS
	mu      sync.Mutex
	before  func(op, path string)
	stopped bool
}

func newHookFS(fs vfs.FS) *hookFS { return &hookFS{FS: fs} }

// stop ends the hooks: later operations run without them.
func (h *hookFS) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
}

// do runs fn after the hook, with every other operation held off.
func (h *hookFS) do(op, path string, fn func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped && h.before != nil {
		h.before(op, path)
	}
	return fn()
}

func (h *hookFS) wrap(f vfs.File, path string) vfs.File {
	hf := &hookFile{File: f, h: h, path: path}
	m, _ := f.(vfs.Mapper)
	wb, _ := f.(vfs.WritebackStarter)
	if wm, ok := f.(vfs.WritableMapper); ok {
		return &hookMappedFile{hookReadMappedFile: hookReadMappedFile{hookFile: hf, m: m}, wm: wm, wb: wb}
	}
	if m != nil {
		return &hookReadMappedFile{hookFile: hf, m: m}
	}
	return hf
}

func (h *hookFS) Create(name string) (vfs.File, error) {
	var f vfs.File
	err := h.do("create", name, func() (err error) { f, err = h.FS.Create(name); return err })
	if err != nil {
		return nil, err
	}
	return h.wrap(f, name), nil
}

func (h *hookFS) Open(name string) (vfs.File, error) {
	f, err := h.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return h.wrap(f, name), nil
}

func (h *hookFS) OpenDir(name string) (vfs.File, error) {
	f, err := h.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, h: h, path: name}, nil
}

func (h *hookFS) Remove(name string) error {
	return h.do("remove", name, func() error { return h.FS.Remove(name) })
}

func (h *hookFS) Rename(oldname, newname string) error {
	return h.do("rename", newname, func() error { return h.FS.Rename(oldname, newname) })
}

func (h *hookFS) Link(oldname, newname string) error {
	return h.do("link", newname, func() error { return h.FS.Link(oldname, newname) })
}

func (h *hookFS) MkdirAll(dir string, perm os.FileMode) error {
	return h.do("mkdir", dir, func() error { return h.FS.MkdirAll(dir, perm) })
}

type hookFile struct {
	vfs.File
	h    *hookFS
	path string
}

func (f *hookFile) Write(p []byte) (n int, err error) {
	err = f.h.do("write", f.path, func() (err error) { n, err = f.File.Write(p); return err })
	return n, err
}

func (f *hookFile) Sync() error {
	return f.h.do("sync", f.path, f.File.Sync)
}

// hookReadMappedFile keeps a file's read-only memory map (tables).
type hookReadMappedFile struct {
	*hookFile
	m vfs.Mapper
}

func (f *hookReadMappedFile) Map(size int64) ([]byte, func() error, error) {
	if f.m == nil {
		return nil, nil, errors.ErrUnsupported
	}
	return f.m.Map(size)
}

// hookMappedFile keeps a log's writable memory map and writeback hints.
type hookMappedFile struct {
	hookReadMappedFile
	wm vfs.WritableMapper
	wb vfs.WritebackStarter
}

func (f *hookMappedFile) Reserve(size int64) error {
	return f.h.do("reserve", f.path, func() error { return f.wm.Reserve(size) })
}

func (f *hookMappedFile) Truncate(size int64) error {
	return f.h.do("truncate", f.path, func() error { return f.wm.Truncate(size) })
}

// MapWritable is no operation of its own: stores into the map are the log's
// writes, which happen after Open has returned.
func (f *hookMappedFile) MapWritable(off, n int64) ([]byte, func() error, error) {
	return f.wm.MapWritable(off, n)
}

func (f *hookMappedFile) StartWriteback(off, n int64) error {
	if f.wb == nil {
		return nil
	}
	return f.wb.StartWriteback(off, n)
}
