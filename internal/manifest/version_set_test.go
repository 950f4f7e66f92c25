package manifest

import (
	"bytes"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// The VersionSet as the owner of the tree's state: references and live
// versions, file numbers and their reservation, sequence numbers, compact
// pointers.

// engineSet returns a set configured as the engine configures it, over a
// new database in an in-memory directory, with its opening snapshot
// written. released counts OnRelease calls.
func engineSet(t *testing.T, reserve uint64) (vs *VersionSet, fs vfs.FS, mu *sync.Mutex, released *int) {
	t.Helper()
	fs = vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	mu = new(sync.Mutex)
	released = new(int)
	vs = NewVersionSet(fs, "/db", &State{NextFileNum: 2, HasFlushedSeq: true}, Options{
		MaxManifestSize: 1 << 20, Mu: mu, FileNumReserve: reserve,
		OnRelease: func() { *released++ },
	})
	if err := vs.WriteSnapshot(nil); err != nil {
		t.Fatal(err)
	}
	return vs, fs, mu, released
}

// durable replays the manifest CURRENT names.
func durable(t *testing.T, fs vfs.FS) *State {
	t.Helper()
	name, err := ReadCurrent(fs, "/db")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadManifest(fs, "/db/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func liveFiles(vs *VersionSet) []uint64 {
	m := map[uint64]struct{}{}
	vs.AddLiveFiles(m)
	var nums []uint64
	for n := range m {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums
}

func TestVersionSetRefsKeepTablesLive(t *testing.T) {
	vs, _, mu, released := engineSet(t, 8)
	if _, err := vs.LogAndApply(adds(0, meta(3, "a", "c", 1)), Install{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	v1 := vs.Current()
	v1.Ref() // a reader
	mu.Unlock()
	if *released != 1 {
		t.Fatalf("the empty opening version was released %d times, want 1", *released)
	}
	move := &VersionEdit{
		DeletedFiles: []DeletedFileEntry{{Level: 0, FileNum: 3}},
		NewFiles:     []NewFileEntry{{Level: 1, Meta: meta(4, "a", "c", 1)}},
	}
	v2, err := vs.LogAndApply(move, Install{})
	if err != nil {
		t.Fatal(err)
	}
	if vs.Current() != v2 || v2.Refs() != 1 {
		t.Fatalf("current %p refs %d, want the new version %p with the set's one reference", vs.Current(), vs.Current().Refs(), v2)
	}
	if got := liveFiles(vs); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("live files %v while a reader holds the old version, want [3 4]", got)
	}
	if *released != 1 || vs.LiveVersions() != 2 {
		t.Fatalf("released %d, live %d: the held version must stay", *released, vs.LiveVersions())
	}
	v1.Unref()
	if got := liveFiles(vs); len(got) != 1 || got[0] != 4 {
		t.Fatalf("live files %v after the reader left, want [4]", got)
	}
	if *released != 2 || vs.LiveVersions() != 1 {
		t.Fatalf("released %d, live %d after the last reference went", *released, vs.LiveVersions())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Unref below zero did not panic")
		}
	}()
	v1.Unref()
}

func TestVersionSetInstallHooks(t *testing.T) {
	vs, _, mu, _ := engineSet(t, 8)
	before := vs.Current()
	var prepared, published *Version
	nv, err := vs.LogAndApply(adds(0, meta(3, "a", "c", 1)), Install{
		Prepare: func(nv *Version) {
			if vs.Current() == nv {
				t.Error("Prepare: the new version is already current")
			}
			nv.Attach("filter")
			prepared = nv
		},
		Publish: func() {
			if mu.TryLock() {
				mu.Unlock()
				t.Error("Publish called without the state lock")
			}
			published = vs.Current()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if prepared != nv || published != nv || nv.Attached() != "filter" {
		t.Fatalf("prepared %p, published %p, want %p with its attachment", prepared, published, nv)
	}
	// A failed edit installs nothing and calls no hook.
	_, err = vs.LogAndApply(adds(0, meta(3, "a", "c", 1)), Install{
		Prepare: func(*Version) { t.Error("Prepare called for a rejected edit") },
	})
	if err == nil || vs.Current() != nv || before.Refs() != 0 {
		t.Fatalf("rejected edit: err %v, current changed %v, old refs %d", err, vs.Current() != nv, before.Refs())
	}
}

func TestVersionSetFileNumbersStayReserved(t *testing.T) {
	const reserve = 8
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	mu := new(sync.Mutex)
	foreign := base.MakeFilename(base.FileTypeTable, 5)
	vs := NewVersionSet(fs, "/db", &State{NextFileNum: 2, ForeignFiles: []string{foreign}},
		Options{MaxManifestSize: 1 << 20, Mu: mu, FileNumReserve: reserve})
	mu.Lock()
	_, ok := vs.TakeFileNum()
	mu.Unlock()
	if ok {
		t.Fatal("a number was handed out before any reservation was durable")
	}
	if err := vs.WriteSnapshot(nil); err != nil {
		t.Fatal(err)
	}
	used := map[uint64]string{2: "manifest"}
	// apply writes an empty edit. A fresh manifest it starts must have a
	// number the manifest before it had reserved: a crash while writing it
	// must not leave a file that looks like no number the engine handed
	// out.
	apply := func() {
		t.Helper()
		before, prevNum := durable(t, fs).NextFileNum, vs.ManifestNum()
		if _, err := vs.LogAndApply(&VersionEdit{}, Install{}); err != nil {
			t.Fatal(err)
		}
		num := vs.ManifestNum()
		if num == prevNum {
			return
		}
		if prev, dup := used[num]; dup {
			t.Fatalf("manifest %d has the number of a %s", num, prev)
		}
		used[num] = "manifest"
		if num >= before {
			t.Fatalf("manifest %d written while the durable NextFileNum was %d", num, before)
		}
	}
	take := func(why string) {
		t.Helper()
		for {
			mu.Lock()
			n, ok := vs.TakeFileNum()
			mu.Unlock()
			if ok {
				if prev, dup := used[n]; dup {
					t.Fatalf("number %d handed out twice (%s, then %s)", n, prev, why)
				}
				used[n] = why
				// Crash safety: the durable manifest already covers it.
				if d := durable(t, fs); n >= d.NextFileNum {
					t.Fatalf("number %d handed out, but the durable NextFileNum is %d", n, d.NextFileNum)
				}
				return
			}
			apply() // as the engine does: an edit reserves more
		}
	}
	for range 3 * reserve {
		take("table")
	}
	if _, ok := used[5]; ok {
		t.Fatal("the foreign file's number was handed out")
	}
	// Use the reservation up, then roll over: the fresh manifest must
	// still get a reserved number.
	for {
		mu.Lock()
		n, ok := vs.TakeFileNum()
		mu.Unlock()
		if !ok {
			break
		}
		used[n] = "table"
	}
	vs.SetMaxSize(0)
	apply()
	// Roll over at every edit: each fresh manifest takes a number too.
	for range 3 * reserve {
		take("table")
		apply()
	}
	mu.Lock()
	next := vs.NextFileNum()
	mu.Unlock()
	for n := range used {
		if n >= next {
			t.Fatalf("number %d handed out, but NextFileNum says %d", n, next)
		}
	}
}

func TestVersionSetReservesOnlyWhenLow(t *testing.T) {
	vs, fs, mu, _ := engineSet(t, 8)
	first := durable(t, fs).NextFileNum // 2 for the manifest, then 8 ahead
	if first != 11 {
		t.Fatalf("opening snapshot reserves up to %d, want 11", first)
	}
	e := &VersionEdit{}
	if _, err := vs.LogAndApply(e, Install{}); err != nil {
		t.Fatal(err)
	}
	if e.HasNextFileNum { // 8 left of 8: nothing to record
		t.Fatalf("an edit with the reservation untouched records NextFileNum %d", e.NextFileNum)
	}
	mu.Lock()
	for range 5 { // 3..7: fewer than half of 8 left below 11
		if _, ok := vs.TakeFileNum(); !ok {
			t.Fatal("reservation ran out early")
		}
	}
	mu.Unlock()
	e = &VersionEdit{}
	if _, err := vs.LogAndApply(e, Install{}); err != nil {
		t.Fatal(err)
	}
	if !e.HasNextFileNum || e.NextFileNum != 8+8 {
		t.Fatalf("edit with 3 of 8 numbers left records NextFileNum %v %d, want 16", e.HasNextFileNum, e.NextFileNum)
	}
	if d := durable(t, fs).NextFileNum; d != 16 {
		t.Fatalf("durable NextFileNum %d, want 16", d)
	}
}

func TestVersionSetSequences(t *testing.T) {
	vs, fs, mu, _ := engineSet(t, 8)
	mu.Lock()
	first, last := vs.AssignSeqs(3)
	if first != 1 || last != 3 || vs.LastSeq() != 3 {
		t.Fatalf("AssignSeqs(3) = %d..%d, last %d", first, last, vs.LastSeq())
	}
	if first, last = vs.AssignSeqs(0); first != 4 || last != 3 {
		t.Fatalf("AssignSeqs(0) = %d..%d, want 4..3", first, last)
	}
	if vs.VisibleSeq() != 0 {
		t.Fatalf("visible %d before any publication", vs.VisibleSeq())
	}
	vs.PublishSeq(3)
	vs.MarkSynced(2)
	mu.Unlock()
	if vs.VisibleSeq() != 3 {
		t.Fatalf("visible %d, want 3", vs.VisibleSeq())
	}
	e := &VersionEdit{}
	if _, err := vs.LogAndApply(e, Install{}); err != nil {
		t.Fatal(err)
	}
	if !e.HasLastSeq || e.LastSeq != 3 || !e.HasSyncedSeq || e.SyncedSeq != 2 {
		t.Fatalf("edit records last %v %d, synced %v %d; want 3 and 2", e.HasLastSeq, e.LastSeq, e.HasSyncedSeq, e.SyncedSeq)
	}
	if d := durable(t, fs); d.LastSeq != 3 || d.SyncedSeq != 2 {
		t.Fatalf("durable last %d synced %d", d.LastSeq, d.SyncedSeq)
	}
	e = &VersionEdit{}
	if _, err := vs.LogAndApply(e, Install{}); err != nil {
		t.Fatal(err)
	}
	if e.HasLastSeq || e.HasSyncedSeq {
		t.Fatal("an edit records sequences that did not move")
	}
	// A table of recovered writes past what was assigned: never reused.
	if _, err := vs.LogAndApply(adds(0, meta(3, "a", "b", 9)), Install{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if first, _ := vs.AssignSeqs(1); first != 10 {
		t.Fatalf("after a table up to sequence 9, the next write gets %d", first)
	}
	vs.NoteSeq(5) // lower: no effect
	if vs.LastSeq() != 10 {
		t.Fatalf("NoteSeq lowered the last sequence to %d", vs.LastSeq())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("publishing a sequence not yet assigned did not panic")
		}
	}()
	vs.PublishSeq(11)
}

func TestVersionSetCompactPointers(t *testing.T) {
	vs, fs, mu, _ := engineSet(t, 8)
	mu.Lock()
	before := vs.CompactPointers()
	mu.Unlock()
	if len(before) != 0 {
		t.Fatalf("new set has pointers %v", before)
	}
	e := &VersionEdit{CompactPointers: []CompactPointer{{Level: 1, Key: []byte("m")}, {Level: 3, Key: []byte("x")}}}
	if _, err := vs.LogAndApply(e, Install{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vs.LogAndApply(&VersionEdit{CompactPointers: []CompactPointer{{Level: 1, Key: []byte("q")}}}, Install{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := vs.CompactPointers()
	mu.Unlock()
	if !bytes.Equal(got[1], []byte("q")) || !bytes.Equal(got[3], []byte("x")) || len(got) != 2 {
		t.Fatalf("pointers %v, want 1:q 3:x", got)
	}
	if len(before) != 0 {
		t.Fatal("a map handed out earlier was modified")
	}
	// They survive a reload, and a fresh manifest (snapshot).
	vs.SetMaxSize(0)
	if _, err := vs.LogAndApply(&VersionEdit{}, Install{}); err != nil {
		t.Fatal(err)
	}
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
	re, _, err := LoadVersionSet(fs, "/db", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := re.CompactPointers(); !bytes.Equal(p[1], []byte("q")) || !bytes.Equal(p[3], []byte("x")) {
		t.Fatalf("reloaded pointers %v", p)
	}
	if d := durable(t, fs); !bytes.Equal(d.CompactPointers[1], []byte("q")) {
		t.Fatalf("durable pointers %v", d.CompactPointers)
	}
}

// A set made from another set's version does not take it over: the
// checkpoint writes a manifest for the version the engine has pinned.
func TestNewVersionSetCopiesVersion(t *testing.T) {
	vs, _, _, released := engineSet(t, 8)
	if _, err := vs.LogAndApply(adds(0, meta(3, "a", "c", 1)), Install{}); err != nil {
		t.Fatal(err)
	}
	v := vs.Current()
	other := NewVersionSet(vfs.NewMem(), "/cp", &State{Version: v, NextFileNum: 9}, Options{})
	if other.Current() == v || v.Refs() != 1 {
		t.Fatalf("the new set shares the version (refs %d)", v.Refs())
	}
	if !reflect.DeepEqual(fileNums(other.Current()), fileNums(v)) {
		t.Fatal("the copy has other tables")
	}
	if *released != 1 {
		t.Fatalf("released %d", *released)
	}
}
