package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sync"
	"testing"
)

// mustWriteFile creates name with data, syncing the file when sync is set.
func mustWriteFile(t testing.TB, fs FS, name, data string, sync bool) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustSyncDir(t testing.TB, fs FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFile returns the file's contents, or "<absent>" if it does not exist.
func readFile(t testing.TB, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// contents maps every file below dir to its contents.
func contents(t testing.TB, fs FS, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			p := fs.PathJoin(dir, n)
			st, err := fs.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.IsDir() {
				out[p+"/"] = ""
				walk(p)
				continue
			}
			out[p] = readFile(t, fs, p)
			if st.Size() != int64(len(out[p])) {
				t.Fatalf("%s: Stat size %d, read %d bytes", p, st.Size(), len(out[p]))
			}
		}
	}
	walk(dir)
	return out
}

func TestMemBasicOperations(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("/db/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, fs, "/db/b", "hello world", false)
	mustWriteFile(t, fs, "db/a", "", false)

	// Different spellings of one path name one file.
	for _, p := range []string{"/db/b", "db/b", "db/./b", "/db/sub/../b", "../db/b"} {
		if got := readFile(t, fs, p); got != "hello world" {
			t.Errorf("read %q = %q", p, got)
		}
	}
	names, err := fs.List("/db")
	if err != nil || !slices.Equal(names, []string{"a", "b", "sub"}) {
		t.Fatalf("List = %v, %v", names, err)
	}

	f, err := fs.Open("/db/b")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt = %d %v %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF {
		t.Fatalf("short ReadAt = %d %v, want 3 EOF", n, err)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("Write to a file opened read-only succeeded")
	}
	if st, err := f.Stat(); err != nil || st.Size() != 11 || st.Name() != "b" || st.IsDir() {
		t.Fatalf("Stat = %+v %v", st, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("ReadAt after Close = %v, want ErrClosed", err)
	}

	// A created file can be read back through its own handle.
	w, _ := fs.Create("/db/c")
	w.Write([]byte("abc"))
	if n, err := w.ReadAt(buf[:3], 0); n != 3 || err != nil || string(buf[:3]) != "abc" {
		t.Fatalf("ReadAt on created file = %d %v %q", n, err, buf[:3])
	}
	w.Close()

	for name, err := range map[string]error{
		"open missing":       func() error { _, err := fs.Open("/db/nope"); return err }(),
		"create in missing":  func() error { _, err := fs.Create("/nodir/x"); return err }(),
		"stat missing":       func() error { _, err := fs.Stat("/db/nope"); return err }(),
		"remove missing":     fs.Remove("/db/nope"),
		"rename missing":     fs.Rename("/db/nope", "/db/x"),
		"list missing":       func() error { _, err := fs.List("/nodir"); return err }(),
		"opendir missing":    func() error { _, err := fs.OpenDir("/nodir"); return err }(),
		"rename to bad path": fs.Rename("/db/a", "/nodir/a"),
	} {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: err = %v, want ErrNotExist", name, err)
		}
	}
	if err := fs.Remove("/db"); err == nil {
		t.Error("Remove of a non-empty directory succeeded")
	}
	if err := fs.MkdirAll("/db/b/c", 0o755); err == nil {
		t.Error("MkdirAll through a file succeeded")
	}
	if _, err := fs.Create("/db/sub"); err == nil {
		t.Error("Create over a directory succeeded")
	}
	if err := fs.Rename("/db/sub", "/db/sub2"); err == nil {
		t.Error("Rename of a directory succeeded")
	}
	if _, err := fs.OpenDir("/db/b"); err == nil {
		t.Error("OpenDir of a file succeeded")
	}

	if err := fs.Rename("/db/b", "/db/a"); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, fs, "/db"); !equalMaps(got, map[string]string{"/db/a": "hello world", "/db/c": "abc", "/db/sub/": ""}) {
		t.Fatalf("after rename: %v", got)
	}
	if err := fs.Remove("/db/sub"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove("/db/a"); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, fs, "/"); !equalMaps(got, map[string]string{"/db/": "", "/db/c": "abc"}) {
		t.Fatalf("after removes: %v", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestCrashCloneDropsUnsyncedAppends(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	f, _ := fs.Create("/db/000001.log")
	mustSyncDir(t, fs, "/db")
	f.Write([]byte("abc"))
	f.Sync()
	f.Write([]byte("def"))

	if got := readFile(t, fs.CrashClone(), "/db/000001.log"); got != "abc" {
		t.Errorf("after power loss: %q, want the synced %q", got, "abc")
	}
	if got := readFile(t, fs.ProcessCrashClone(), "/db/000001.log"); got != "abcdef" {
		t.Errorf("after kill -9: %q, want everything written", got)
	}
	f.Sync()
	if got := readFile(t, fs.CrashClone(), "/db/000001.log"); got != "abcdef" {
		t.Errorf("after a second sync and power loss: %q", got)
	}
}

func TestCrashCloneNeedsDirectorySyncForNewFiles(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	mustWriteFile(t, fs, "/db/000002.sst", "table", true) // file synced, directory not
	if got := readFile(t, fs.CrashClone(), "/db/000002.sst"); got != "<absent>" {
		t.Fatalf("file whose directory was never synced survived power loss: %q", got)
	}
	mustSyncDir(t, fs, "/db")
	if got := readFile(t, fs.CrashClone(), "/db/000002.sst"); got != "table" {
		t.Fatalf("after directory sync: %q", got)
	}
	// Directory sync without file sync: the name survives, the bytes do not.
	mustWriteFile(t, fs, "/db/000003.sst", "unsynced", false)
	mustSyncDir(t, fs, "/db")
	if got := readFile(t, fs.CrashClone(), "/db/000003.sst"); got != "" {
		t.Fatalf("unsynced file contents survived: %q", got)
	}
}

// TestCrashCloneUndoesUnsyncedRename is the CURRENT-file pattern: write a
// temporary file, sync it, rename it over CURRENT, sync the directory.
func TestCrashCloneUndoesUnsyncedRename(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	mustWriteFile(t, fs, "/db/CURRENT", "MANIFEST-000001\n", true)
	mustSyncDir(t, fs, "/db")

	mustWriteFile(t, fs, "/db/CURRENT.tmp", "MANIFEST-000002\n", true)
	mustSyncDir(t, fs, "/db")
	if err := fs.Rename("/db/CURRENT.tmp", "/db/CURRENT"); err != nil {
		t.Fatal(err)
	}
	c := fs.CrashClone()
	if got := readFile(t, c, "/db/CURRENT"); got != "MANIFEST-000001\n" {
		t.Errorf("unsynced rename: CURRENT = %q, want the old one", got)
	}
	if got := readFile(t, c, "/db/CURRENT.tmp"); got != "MANIFEST-000002\n" {
		t.Errorf("unsynced rename: CURRENT.tmp = %q, want it back", got)
	}
	if got := readFile(t, fs, "/db/CURRENT"); got != "MANIFEST-000002\n" {
		t.Errorf("live view: CURRENT = %q", got)
	}

	mustSyncDir(t, fs, "/db")
	c = fs.CrashClone()
	if got := contents(t, c, "/db"); !equalMaps(got, map[string]string{"/db/CURRENT": "MANIFEST-000002\n"}) {
		t.Errorf("synced rename: %v", got)
	}
}

func TestCrashCloneUndoesUnsyncedRemove(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	mustWriteFile(t, fs, "/db/000004.log", "wal", true)
	mustSyncDir(t, fs, "/db")
	fs.Remove("/db/000004.log")
	if got := readFile(t, fs.CrashClone(), "/db/000004.log"); got != "wal" {
		t.Errorf("unsynced remove not undone: %q", got)
	}
	mustSyncDir(t, fs, "/db")
	if got := readFile(t, fs.CrashClone(), "/db/000004.log"); got != "<absent>" {
		t.Errorf("synced remove undone: %q", got)
	}
}

func TestCrashCloneOfRecreatedFileKeepsOldInode(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	mustWriteFile(t, fs, "/db/f", "old", true)
	mustSyncDir(t, fs, "/db")
	mustWriteFile(t, fs, "/db/f", "new", true) // Create over it: a new inode
	if got := readFile(t, fs.CrashClone(), "/db/f"); got != "old" {
		t.Errorf("re-created file, directory unsynced: %q, want old", got)
	}
	mustSyncDir(t, fs, "/db")
	if got := readFile(t, fs.CrashClone(), "/db/f"); got != "new" {
		t.Errorf("re-created file, directory synced: %q, want new", got)
	}
}

func TestProcessCrashCloneIsIndependent(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	f, _ := fs.Create("/db/log")
	f.Write([]byte("one"))
	mustSyncDir(t, fs, "/db")
	f.Sync()
	f.Write([]byte("two"))
	mustWriteFile(t, fs, "/db/unlisted", "x", true)

	c := fs.ProcessCrashClone()
	f.Write([]byte("three")) // the original keeps running
	fs.Remove("/db/unlisted")
	if got := contents(t, c, "/db"); !equalMaps(got, map[string]string{"/db/log": "onetwo", "/db/unlisted": "x"}) {
		t.Fatalf("process-crash clone: %v", got)
	}
	mustWriteFile(t, c, "/db/log2", "clone only", false)
	if got := readFile(t, fs, "/db/log2"); got != "<absent>" {
		t.Fatalf("write to the clone reached the original: %q", got)
	}
	// The clone kept the durable state: losing power after kill -9 drops
	// what was never synced.
	if got := contents(t, c.CrashClone(), "/db"); !equalMaps(got, map[string]string{"/db/log": "one"}) {
		t.Fatalf("power loss after kill -9: %v", got)
	}
}

func TestMemLockIsExclusive(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	l, err := fs.Lock("/db/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Lock("/db/LOCK"); err == nil {
		t.Fatal("second Lock of a held lock succeeded")
	}
	if _, err := fs.Lock("db/./LOCK"); err == nil {
		t.Fatal("Lock by another spelling of the path succeeded")
	}
	l2, err := fs.Lock("/db/OTHER")
	if err != nil {
		t.Fatalf("lock on another file: %v", err)
	}
	if _, err := fs.Stat("/db/LOCK"); err != nil {
		t.Fatalf("Lock did not create its file: %v", err)
	}
	// A crashed process holds no locks.
	if l3, err := fs.ProcessCrashClone().Lock("/db/LOCK"); err != nil {
		t.Fatalf("lock in a crash clone: %v", err)
	} else {
		l3.Close()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("second unlock succeeded")
	}
	l, err = fs.Lock("/db/LOCK")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	l.Close()
	l2.Close()
	if _, err := fs.Lock("/nodir/LOCK"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lock in a missing directory: %v", err)
	}
}

func TestMemConcurrentReadAtDuringAppends(t *testing.T) {
	fs := NewMem()
	w, _ := fs.Create("/f")
	const chunk, chunks = 64, 2000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range chunks {
			w.Write(bytes.Repeat([]byte{byte(i)}, chunk))
			if i%100 == 0 {
				w.Sync()
			}
		}
	}()
	r, err := fs.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, chunk)
			for i := 0; i < chunks; i++ {
				st, err := r.Stat()
				if err != nil {
					t.Error(err)
					return
				}
				whole := int(st.Size()) / chunk
				if whole == 0 {
					continue
				}
				idx := (i*7 + g) % whole
				if n, err := r.ReadAt(buf, int64(idx*chunk)); n != chunk || err != nil {
					t.Errorf("ReadAt chunk %d: %d %v", idx, n, err)
					return
				}
				if !bytes.Equal(buf, bytes.Repeat([]byte{byte(idx)}, chunk)) {
					t.Errorf("chunk %d holds %v", idx, buf[:4])
					return
				}
				if i%50 == 0 {
					fs.CrashClone() // cloning reads files while they grow
				}
			}
		}()
	}
	wg.Wait()
	if st, _ := r.Stat(); st.Size() != chunk*chunks {
		t.Fatalf("final size %d", st.Size())
	}
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed*31+7)) }

// memModel is an independent statement of the durability model for one
// directory: names map to inodes; Sync of the directory copies live to
// durable; power loss keeps durable names and synced bytes.
type memModel struct {
	live, durable map[string]*modelInode
}

type modelInode struct {
	data   []byte
	synced int
}

func (m *memModel) afterPowerLoss() map[string]string {
	out := map[string]string{}
	for name, ino := range m.durable {
		out["/d/"+name] = string(ino.data[:ino.synced])
	}
	return out
}

func (m *memModel) afterKill() map[string]string {
	out := map[string]string{}
	for name, ino := range m.live {
		out["/d/"+name] = string(ino.data)
	}
	return out
}

// TestCrashCloneMatchesModel runs random operations on a MemFS and on the
// model, comparing both crash clones with the model after every step.
func TestCrashCloneMatchesModel(t *testing.T) {
	rng := newTestRand(11)
	names := []string{"a", "b", "c", "d"}
	for round := range 40 {
		fs := NewMem()
		fs.MkdirAll("/d", 0o755)
		m := &memModel{live: map[string]*modelInode{}, durable: map[string]*modelInode{}}
		type handle struct {
			f   File
			ino *modelInode
		}
		var handles []handle
		var trace []string
		for step := range 60 {
			name := names[rng.IntN(len(names))]
			p := path.Join("/d", name)
			switch op := rng.IntN(7); op {
			case 0: // create
				f, err := fs.Create(p)
				if err != nil {
					t.Fatal(err)
				}
				ino := &modelInode{}
				m.live[name] = ino
				handles = append(handles, handle{f, ino})
				trace = append(trace, "create "+name)
			case 1, 2: // write through an open handle
				if len(handles) == 0 {
					continue
				}
				h := handles[rng.IntN(len(handles))]
				data := fmt.Sprintf("<%d>", step)
				h.f.Write([]byte(data))
				h.ino.data = append(h.ino.data, data...)
				trace = append(trace, "write "+data)
			case 3: // sync a file
				if len(handles) == 0 {
					continue
				}
				h := handles[rng.IntN(len(handles))]
				h.f.Sync()
				h.ino.synced = len(h.ino.data)
				trace = append(trace, "sync file")
			case 4: // sync the directory
				mustSyncDir(t, fs, "/d")
				m.durable = map[string]*modelInode{}
				for k, v := range m.live {
					m.durable[k] = v
				}
				trace = append(trace, "sync dir")
			case 5: // rename
				to := names[rng.IntN(len(names))]
				err := fs.Rename(p, path.Join("/d", to))
				if ino, ok := m.live[name]; ok != (err == nil) {
					t.Fatalf("rename %s: err %v, model has it: %v", name, err, ok)
				} else if ok {
					delete(m.live, name)
					m.live[to] = ino
				}
				trace = append(trace, "rename "+name+" "+to)
			case 6: // remove
				err := fs.Remove(p)
				if _, ok := m.live[name]; ok != (err == nil) {
					t.Fatalf("remove %s: err %v, model has it: %v", name, err, ok)
				}
				delete(m.live, name)
				trace = append(trace, "remove "+name)
			}
			if got, want := contents(t, fs.CrashClone(), "/d"), m.afterPowerLoss(); !equalMaps(got, want) {
				t.Fatalf("round %d, after %v:\npower loss: %v\nmodel:      %v", round, trace, got, want)
			}
			pc := fs.ProcessCrashClone()
			if got, want := contents(t, pc, "/d"), m.afterKill(); !equalMaps(got, want) {
				t.Fatalf("round %d, after %v:\nkill -9: %v\nmodel:   %v", round, trace, got, want)
			}
			if got, want := contents(t, pc.CrashClone(), "/d"), m.afterPowerLoss(); !equalMaps(got, want) {
				t.Fatalf("round %d, after %v:\nkill -9 then power loss: %v\nmodel: %v", round, trace, got, want)
			}
		}
	}
}

func BenchmarkMemWrite(b *testing.B) {
	fs := NewMem()
	f, _ := fs.Create("/f")
	p := make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%4096 == 0 { // keep the file from growing without bound
			f, _ = fs.Create("/f")
		}
		f.Write(p)
	}
}

func BenchmarkMemReadAtParallel(b *testing.B) {
	fs := NewMem()
	w, _ := fs.Create("/f")
	w.Write(make([]byte, 1<<20))
	r, _ := fs.Open("/f")
	b.SetBytes(4096)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 4096)
		off := int64(0)
		for pb.Next() {
			r.ReadAt(buf, off)
			off = (off + 4096) % (1 << 20)
		}
	})
}

// TestProcessCrashCloneKeepsInodeIdentity: a file's live and durable names
// must lead to one inode in the copy, so that syncing it there (recovery
// may) makes its bytes durable under every name it is durable under.
func TestProcessCrashCloneKeepsInodeIdentity(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/db", 0o755)
	f, _ := fs.Create("/db/log")
	mustSyncDir(t, fs, "/db")
	f.Write([]byte("one"))
	f.Sync()
	f.Write([]byte("two"))

	c := fs.ProcessCrashClone()
	g, err := c.Open("/db/log")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	g.Close()
	if got := readFile(t, c.CrashClone(), "/db/log"); got != "onetwo" {
		t.Fatalf("synced in the clone, then power loss: %q, want onetwo", got)
	}
}
