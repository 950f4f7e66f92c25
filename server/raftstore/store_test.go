package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// store is what the conformance tests need of an implementation.
type store interface {
	raft.LogStore
	raft.StableStore
}

// impl is one implementation under test. open opens (or reopens) the store
// in dir; persistent says whether a reopen sees what was written.
type impl struct {
	name       string
	open       func(t testing.TB, dir string) (store, func())
	persistent bool
}

var impls = []impl{
	{name: "bloomkv", persistent: true, open: func(t testing.TB, dir string) (store, func()) {
		s, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s, func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}},
	// The reference implementations: the suite must pass on them too, so
	// that it tests what raft relies on rather than this package's choices.
	{name: "boltdb", persistent: true, open: func(t testing.TB, dir string) (store, func()) {
		s, err := raftboltdb.NewBoltStore(filepath.Join(dir, "bolt"))
		if err != nil {
			t.Fatal(err)
		}
		return s, func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}},
	{name: "inmem", open: func(t testing.TB, dir string) (store, func()) {
		return raft.NewInmemStore(), func() {}
	}},
}

// conformance is the suite every implementation runs.
var conformance = []struct {
	name string
	fn   func(t *testing.T, im impl)
}{
	{"Empty", testEmpty},
	{"RoundTrip", testRoundTrip},
	{"Order", testOrder},
	{"DeleteRange", testDeleteRange},
	{"Overwrite", testOverwrite},
	{"Stable", testStable},
	{"Reopen", testReopen},
	{"Concurrent", testConcurrent},
	{"IndexZero", testIndexZero},
}

func TestConformance(t *testing.T) {
	for _, im := range impls {
		for _, c := range conformance {
			t.Run(im.name+"/"+c.name, func(t *testing.T) { c.fn(t, im) })
		}
	}
}

func mkLog(i uint64) *raft.Log {
	return &raft.Log{
		Index:      i,
		Term:       i/10 + 1,
		Type:       raft.LogType(i % 6),
		Data:       fmt.Appendf(nil, "data-%d", i),
		Extensions: fmt.Appendf(nil, "ext-%d", i%3),
		AppendedAt: time.Unix(1700000000, int64(i)).UTC(),
	}
}

func mkLogs(lo, hi uint64) []*raft.Log {
	var logs []*raft.Log
	for i := lo; i <= hi; i++ {
		logs = append(logs, mkLog(i))
	}
	return logs
}

func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

func checkBounds(t *testing.T, s raft.LogStore, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("first, last = %d, %d; want %d, %d", f, l, first, last)
	}
}

// checkLogs checks that exactly [lo, hi] of mkLog are present, probing one
// index beyond each side.
func checkLogs(t *testing.T, s raft.LogStore, lo, hi uint64) {
	t.Helper()
	var l raft.Log
	for i := max(lo, 2) - 1; i <= hi+1; i++ {
		err := s.GetLog(i, &l)
		if i < lo || i > hi || lo == 0 {
			if !errors.Is(err, raft.ErrLogNotFound) {
				t.Fatalf("GetLog(%d) = %v, want ErrLogNotFound", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if want := mkLog(i); !sameLog(&l, want) {
			t.Fatalf("GetLog(%d) = %+v, want %+v", i, l, want)
		}
	}
}

func testEmpty(t *testing.T, im impl) {
	s, done := im.open(t, t.TempDir())
	defer done()
	checkBounds(t, s, 0, 0)
	var l raft.Log
	for _, i := range []uint64{0, 1, 1 << 63} {
		if err := s.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("GetLog(%d) on an empty store = %v", i, err)
		}
	}
	if err := s.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
}

func testRoundTrip(t *testing.T, im impl) {
	s, done := im.open(t, t.TempDir())
	defer done()
	if err := s.StoreLog(mkLog(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(mkLogs(2, 100)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 100)
	checkLogs(t, s, 1, 100)

	// Edge values: empty data and extensions, the zero time, a big entry.
	big := &raft.Log{Index: 101, Term: 1<<64 - 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte("x"), 1<<20)}
	if err := s.StoreLog(big); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(101, &l); err != nil {
		t.Fatal(err)
	}
	if !sameLog(&l, big) || !l.AppendedAt.IsZero() || len(l.Extensions) != 0 {
		t.Fatalf("big entry: term %d type %v data %d bytes ext %q at %v", l.Term, l.Type, len(l.Data), l.Extensions, l.AppendedAt)
	}
}

// testOrder stores runs of indexes whose big-endian bytes carry across
// byte boundaries (255/256, 65535/65536, 2^24-1/2^24): little-endian keys
// would sort 256 before 255.
func testOrder(t *testing.T, im impl) {
	s, done := im.open(t, t.TempDir())
	defer done()
	for _, lo := range []uint64{250, 65530, 1<<24 - 5} {
		if err := s.StoreLogs(mkLogs(lo, lo+10)); err != nil {
			t.Fatal(err)
		}
	}
	checkBounds(t, s, 250, 1<<24+5)
	checkLogs(t, s, 250, 260)
	if err := s.DeleteRange(250, 65535); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 65536, 1<<24+5)
	checkLogs(t, s, 65536, 65540)
	if err := s.DeleteRange(65536, 1<<24-1); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1<<24, 1<<24+5)
	checkLogs(t, s, 1<<24, 1<<24+5)
}

func testDeleteRange(t *testing.T, im impl) {
	s, done := im.open(t, t.TempDir())
	defer done()
	if err := s.StoreLogs(mkLogs(1, 10000)); err != nil {
		t.Fatal(err)
	}
	// A prefix of 5000 entries, as raft compacts after a snapshot.
	if err := s.DeleteRange(1, 5000); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 5001, 10000)
	// A suffix, as a follower truncates a conflicting tail.
	if err := s.DeleteRange(9001, 10000); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 5001, 9000)
	checkLogs(t, s, 5001, 9000)
	// Everything, as raft does after restoring a snapshot.
	if err := s.DeleteRange(5001, 9000); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
	// And the log starts again past a gap.
	if err := s.StoreLogs(mkLogs(20000, 20010)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 20000, 20010)
	checkLogs(t, s, 20000, 20010)
}

func testOverwrite(t *testing.T, im impl) {
	s, done := im.open(t, t.TempDir())
	defer done()
	if err := s.StoreLogs(mkLogs(1, 20)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(15, 20); err != nil {
		t.Fatal(err)
	}
	l := mkLog(15)
	l.Term, l.Data = 99, []byte("new leader")
	if err := s.StoreLog(l); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	if err := s.GetLog(15, &got); err != nil || !sameLog(&got, l) {
		t.Fatalf("GetLog(15) = %+v, %v", got, err)
	}
	checkBounds(t, s, 1, 15)
}

func testStable(t *testing.T, im impl) {
	s, done := im.open(t, t.TempDir())
	defer done()
	// Absent keys: either raft's documented answer (empty, 0) or the
	// "not found" error it tolerates.
	if v, err := s.Get([]byte("CurrentTerm")); len(v) != 0 || (err != nil && err.Error() != "not found") {
		t.Fatalf("Get(absent) = %q, %v", v, err)
	}
	if v, err := s.GetUint64([]byte("LastVoteTerm")); v != 0 || (err != nil && err.Error() != "not found") {
		t.Fatalf("GetUint64(absent) = %d, %v", v, err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	for _, want := range []uint64{0, 1, 1 << 40, 1<<64 - 1} {
		if err := s.SetUint64([]byte("CurrentTerm"), want); err != nil {
			t.Fatal(err)
		}
		if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != want {
			t.Fatalf("GetUint64 = %d, %v; want %d", v, err, want)
		}
	}
	// Stable keys and log entries do not see each other.
	if err := s.StoreLogs(mkLogs(1, 3)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 3)
}

func testReopen(t *testing.T, im impl) {
	if !im.persistent {
		t.Skip("not persistent")
	}
	dir := t.TempDir()
	s, done := im.open(t, dir)
	if err := s.StoreLogs(mkLogs(1, 300)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	done()
	s, done = im.open(t, dir)
	defer done()
	checkBounds(t, s, 101, 300)
	checkLogs(t, s, 101, 300)
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("GetUint64 after reopen = %d, %v", v, err)
	}
}

// testConcurrent reads entries while others are appended and the front is
// truncated, as raft's replication goroutines do (run it with -race).
func testConcurrent(t *testing.T, im impl) {
	s, done := im.open(t, t.TempDir())
	defer done()
	if err := s.StoreLogs(mkLogs(1, 100)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			var l raft.Log
			for {
				select {
				case <-stop:
					return
				default:
				}
				last, _ := s.LastIndex()
				err := s.GetLog(last, &l)
				if err != nil && !errors.Is(err, raft.ErrLogNotFound) {
					t.Error(err)
					return
				}
				if err == nil && !sameLog(&l, mkLog(last)) {
					t.Errorf("GetLog(%d) = %+v", last, l)
					return
				}
			}
		})
	}
	for i := uint64(101); i <= 400; i += 10 {
		if err := s.StoreLogs(mkLogs(i, i+9)); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteRange(i-100, i-91); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	checkBounds(t, s, 301, 400)
}

// TestCorruptValue: a damaged entry is an error that wraps ErrCorruption
// and names the index, never a wrong entry.
func TestCorruptValue(t *testing.T) {
	db, err := bloomkv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := New(db, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(mkLogs(1, 3)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, {2, 0}, append([]byte{1, 0}, make([]byte, 16)...), append(append([]byte{1, 0}, make([]byte, 16)...), 9)} {
		if err := db.Put(logKey(nil, 2), bad); err != nil {
			t.Fatal(err)
		}
		var l raft.Log
		err := s.GetLog(2, &l)
		if !errors.Is(err, bloomkv.ErrCorruption) || !bytes.Contains([]byte(err.Error()), []byte("entry 2")) {
			t.Fatalf("GetLog of %x = %v", bad, err)
		}
	}
}

// TestGoldenValue pins the value layout of doc.go.
func TestGoldenValue(t *testing.T) {
	l := &raft.Log{Index: 5, Term: 3, Type: raft.LogCommand, Data: []byte("hi"), Extensions: []byte{0xee}, AppendedAt: time.Unix(0, 0x0102)}
	got := encodeLog(nil, l)
	want := []byte{
		1,                      // version
		0,                      // LogCommand
		3, 0, 0, 0, 0, 0, 0, 0, // term
		2, 1, 0, 0, 0, 0, 0, 0, // AppendedAt: 0x0102 ns
		1, 0xee, // extensions
		'h', 'i', // data
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeLog = %x\nwant       %x", got, want)
	}
	if k := logKey(nil, 0x0102); !bytes.Equal(k, []byte{'L', 0, 0, 0, 0, 0, 0, 1, 2}) {
		t.Fatalf("logKey = %x", k)
	}
}

// testIndexZero: an entry at index 0 is stored, read back, counted in the
// bounds and deleted like any other. raft never writes one, but the other
// stores take it and raft's bench suite writes it (StoreLog's first entry,
// DeleteRange's first range); this store refused it until issue 29.
func testIndexZero(t *testing.T, im impl) {
	// InmemStore takes index 0 for "no entry yet" in its bounds (storing 0
	// then 1 gives first 1; deleting from 0 wraps its last index), so the
	// bounds are checked on the durable stores, raft-boltdb the reference.
	dir := t.TempDir()
	s, done := im.open(t, dir)
	bounds := func(first, last uint64) {
		t.Helper()
		if im.persistent {
			checkBounds(t, s, first, last)
		}
	}
	if err := s.StoreLog(mkLog(0)); err != nil {
		t.Fatalf("StoreLog(index 0): %v", err)
	}
	var l raft.Log
	if err := s.GetLog(0, &l); err != nil || !sameLog(&l, mkLog(0)) {
		t.Fatalf("GetLog(0) = %+v, %v", l, err)
	}
	if err := s.StoreLogs(mkLogs(1, 5)); err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i <= 5; i++ {
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
	}
	bounds(0, 5)
	if im.persistent {
		done()
		s, done = im.open(t, dir)
		bounds(0, 5)
	}
	defer func() { done() }()
	if err := s.DeleteRange(0, 2); err != nil {
		t.Fatal(err)
	}
	bounds(3, 5)
	if err := s.GetLog(0, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(0) after deleting it = %v", err)
	}
	checkLogs(t, s, 3, 5)
	if err := s.DeleteRange(0, 5); err != nil {
		t.Fatal(err)
	}
	bounds(0, 0)
	if err := s.GetLog(0, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(0) on an emptied store = %v", err)
	}
	// Alone, entry 0 makes first = last = 0, as on an empty store, but it
	// is there to read, and deleting it leaves the store empty.
	if err := s.StoreLog(mkLog(0)); err != nil {
		t.Fatal(err)
	}
	bounds(0, 0)
	if err := s.GetLog(0, &l); err != nil {
		t.Fatalf("GetLog(0) = %v", err)
	}
	if err := s.DeleteRange(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.GetLog(0, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(0) after deleting the only entry = %v", err)
	}
}
