package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/hashicorp/raft"
)

// machine drives an FSM as raft does, numbering entries from 1.
type machine struct {
	t    testing.TB
	dir  string
	f    *FSM
	next uint64
}

func newMachine(t testing.TB) *machine {
	m := &machine{t: t, dir: t.TempDir(), next: 1}
	m.open()
	t.Cleanup(func() {
		if m.f != nil {
			m.f.Close()
		}
	})
	return m
}

func (m *machine) open() {
	f, err := Open(m.dir, nil)
	if err != nil {
		m.t.Fatal(err)
	}
	m.f = f
}

func (m *machine) reopen() {
	if err := m.f.Close(); err != nil {
		m.t.Fatal(err)
	}
	m.open()
}

func logsOf(first uint64, cmds []Command) []*raft.Log {
	logs := make([]*raft.Log, len(cmds))
	for i := range cmds {
		logs[i] = &raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: cmds[i].Encode()}
	}
	return logs
}

// apply applies cmds as one batch of entries and returns their results.
func (m *machine) apply(cmds ...Command) []*Result {
	m.t.Helper()
	out := m.f.ApplyBatch(logsOf(m.next, cmds))
	m.next += uint64(len(cmds))
	res := make([]*Result, len(out))
	for i, r := range out {
		res[i] = r.(*Result)
	}
	return res
}

func (m *machine) one(c Command) *Result { return m.apply(c)[0] }

func (m *machine) get(key string) (Kind, string) {
	m.t.Helper()
	k, v, err := m.f.Get([]byte(key))
	if err != nil {
		m.t.Fatal(err)
	}
	return k, string(v)
}

func put(k, v string) Command { return Command{Op: OpPut, Key: []byte(k), Value: []byte(v)} }
func del(k string) Command    { return Command{Op: OpDelete, Key: []byte(k)} }
func bfAdd(k string, items ...string) Command {
	c := Command{Op: OpBFAdd, Key: []byte(k), ErrorRate: 0.01, Capacity: 100, Expansion: 2}
	for _, it := range items {
		c.Items = append(c.Items, []byte(it))
	}
	return c
}
func cfAdd(k string, items ...string) Command {
	c := Command{Op: OpCFAdd, Key: []byte(k), Capacity: 1024}
	for _, it := range items {
		c.Items = append(c.Items, []byte(it))
	}
	return c
}

func TestPutGetDelete(t *testing.T) {
	m := newMachine(t)
	if r := m.one(put("a", "1")); r.Err != nil || r.N != 1 {
		t.Fatalf("put: %+v", r)
	}
	if k, v := m.get("a"); k != KindString || v != "1" {
		t.Fatalf("get a = %v %q", k, v)
	}
	// NX, XX and GET.
	if r := m.one(Command{Op: OpPut, Flags: PutNX, Key: []byte("a"), Value: []byte("2")}); r.N != 0 {
		t.Fatalf("NX on a present key set it: %+v", r)
	}
	if r := m.one(Command{Op: OpPut, Flags: PutXX, Key: []byte("b"), Value: []byte("2")}); r.N != 0 {
		t.Fatalf("XX on an absent key set it: %+v", r)
	}
	if r := m.one(Command{Op: OpPut, Flags: PutGet, Key: []byte("a"), Value: []byte("3")}); r.N != 1 || !r.OldFound || string(r.Old) != "1" {
		t.Fatalf("GET: %+v", r)
	}
	if k, _ := m.get("b"); k != KindNone {
		t.Fatal("b exists")
	}
	if r := m.one(del("a")); r.N != 1 {
		t.Fatalf("delete a: %+v", r)
	}
	if r := m.one(del("a")); r.N != 0 || r.Err != nil {
		t.Fatalf("delete absent a: %+v", r)
	}
	// Bad keys are errors that change nothing.
	if r := m.one(put("", "x")); r.Err == nil {
		t.Fatal("empty key accepted")
	}
	if r := m.one(Command{Op: OpPut, Key: make([]byte, MaxKeySize+1)}); r.Err == nil {
		t.Fatal("oversize key accepted")
	}
	// A malformed entry is an error result, and the index still moves on.
	out := m.f.ApplyBatch([]*raft.Log{{Index: m.next, Type: raft.LogCommand, Data: []byte{1, 99}}})
	m.next++
	if r := out[0].(*Result); r.Err == nil {
		t.Fatal("malformed command applied")
	}
	if m.f.Applied() != m.next-1 {
		t.Fatalf("applied %d, want %d", m.f.Applied(), m.next-1)
	}
}

func TestBatch(t *testing.T) {
	m := newMachine(t)
	m.apply(put("a", "1"), put("b", "2"), put("c", "3"), put("d", "4"))
	r := m.one(Command{Op: OpBatch, Ops: []Command{del("a"), del("zz"), put("e", "5"), {Op: OpDeleteRange, Key: []byte("c"), Value: []byte("e")}}})
	if r.Err != nil || r.N != 3 { // a, c, d
		t.Fatalf("batch: %+v", r)
	}
	for key, want := range map[string]string{"a": "", "b": "2", "c": "", "d": "", "e": "5"} {
		if _, v := m.get(key); v != want {
			t.Errorf("%s = %q, want %q", key, v, want)
		}
	}
	// One bad op refuses the whole batch.
	r = m.one(Command{Op: OpBatch, Ops: []Command{put("x", "1"), put("", "2")}})
	if r.Err == nil {
		t.Fatal("batch with an empty key applied")
	}
	if k, _ := m.get("x"); k != KindNone {
		t.Fatal("half of a refused batch was applied")
	}
}

func TestDeleteRangeSeesTheBatch(t *testing.T) {
	m := newMachine(t)
	m.apply(put("k1", "x"), put("k3", "x"))
	// In one raft batch: a pending put inside the range, then the range.
	res := m.apply(put("k2", "x"), Command{Op: OpDeleteRange, Key: []byte("k"), Value: []byte("l")}, put("k4", "x"))
	if res[1].N != 3 {
		t.Fatalf("DeleteRange deleted %d keys, want 3", res[1].N)
	}
	var keys []string
	m.f.Scan(nil, func(k []byte, _ Kind) bool { keys = append(keys, string(k)); return true })
	if fmt.Sprint(keys) != "[k4]" {
		t.Fatalf("keys after: %v", keys)
	}
}

func TestBloom(t *testing.T) {
	m := newMachine(t)
	res := m.apply(
		Command{Op: OpBFReserve, Key: []byte("bf"), ErrorRate: 0.01, Capacity: 1000, Expansion: 2},
		Command{Op: OpBFReserve, Key: []byte("bf"), ErrorRate: 0.01, Capacity: 1000, Expansion: 2},
		bfAdd("bf", "a", "b", "a"),
	)
	if res[0].Err != nil || res[1].Err != ErrItemExists {
		t.Fatalf("reserve twice: %v, %v", res[0].Err, res[1].Err)
	}
	if fmt.Sprint(res[2].Ints) != "[1 1 0]" {
		t.Fatalf("adds: %v", res[2].Ints)
	}
	got, err := m.f.BFExists([]byte("bf"), [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	if err != nil || fmt.Sprint(got) != "[true true false]" {
		t.Fatalf("exists: %v %v", got, err)
	}
	info, err := m.f.BFInfo([]byte("bf"))
	if err != nil || info.Items != 2 || info.Capacity != 1000 || info.Filters != 1 || info.Expansion != 2 {
		t.Fatalf("info: %+v %v", info, err)
	}
	// Types.
	m.one(put("s", "x"))
	for _, c := range []Command{bfAdd("s", "a"), {Op: OpCFDel, Key: []byte("bf"), Items: [][]byte{nil}}, cfAdd("bf", "x")} {
		if r := m.one(c); r.Err != ErrWrongType {
			t.Fatalf("%v on the wrong type: %+v", c.Op, r)
		}
	}
	if _, err := m.f.BFExists([]byte("s"), [][]byte{[]byte("a")}); err != ErrWrongType {
		t.Fatalf("BFExists on a string: %v", err)
	}
	if k, _ := m.get("bf"); k != KindBloom {
		t.Fatalf("kind %v", k)
	}
	// NOCREATE on an absent key.
	if r := m.one(Command{Op: OpBFAdd, Key: []byte("none"), Flags: FlagNoCreate, Items: [][]byte{[]byte("a")}}); r.Err != ErrNotFound {
		t.Fatalf("NOCREATE: %+v", r)
	}
	// NONSCALING refuses new items past its capacity; the first refusal
	// ends the command, as in RedisBloom.
	c := bfAdd("ns")
	c.Capacity, c.Expansion = 3, 0
	for i := range 6 {
		c.Items = append(c.Items, fmt.Appendf(nil, "item%d", i))
	}
	r := m.one(c)
	if r.Err != nil || fmt.Sprint(r.Ints) != "[1 1 1 0]" || len(r.ItemErrs) != 4 || r.ItemErrs[3] != ErrNonScalingFull || r.ItemErrs[0] != nil {
		t.Fatalf("nonscaling: %+v", r)
	}
	// Scaling adds layers.
	c = bfAdd("sc")
	c.Capacity = 10
	for i := range 100 {
		c.Items = append(c.Items, fmt.Appendf(nil, "item%d", i))
	}
	m.one(c)
	if info, _ := m.f.BFInfo([]byte("sc")); info.Filters < 3 || info.Items < 95 {
		t.Fatalf("scaling: %+v", info)
	}
	// Too big to reserve.
	if r := m.one(Command{Op: OpBFReserve, Key: []byte("big"), ErrorRate: 1e-9, Capacity: 1 << 36, Expansion: 2}); r.Err == nil {
		t.Fatal("a huge filter was reserved")
	}
	for _, bad := range []Command{
		{Op: OpBFReserve, Key: []byte("x"), ErrorRate: 0, Capacity: 10},
		{Op: OpBFReserve, Key: []byte("x"), ErrorRate: 1, Capacity: 10},
		{Op: OpBFReserve, Key: []byte("x"), ErrorRate: 0.1, Capacity: 0},
	} {
		if r := m.one(bad); r.Err == nil {
			t.Fatalf("reserve %+v accepted", bad)
		}
	}
}

func TestCuckoo(t *testing.T) {
	m := newMachine(t)
	res := m.apply(Command{Op: OpCFReserve, Key: []byte("cf"), Capacity: 100}, cfAdd("cf", "a"), cfAdd("cf", "a"))
	if res[0].Err != nil || res[1].Ints[0] != 1 || res[2].Ints[0] != 1 {
		t.Fatalf("%+v %+v %+v", res[0], res[1], res[2])
	}
	if info, _ := m.f.CFInfo([]byte("cf")); info.Items != 2 {
		t.Fatalf("a added twice is stored twice: %+v", info)
	}
	nx := cfAdd("cf", "a", "b")
	nx.Flags = FlagNX
	if r := m.one(nx); fmt.Sprint(r.Ints) != "[0 1]" {
		t.Fatalf("NX: %+v", r)
	}
	del := Command{Op: OpCFDel, Key: []byte("cf"), Items: [][]byte{[]byte("a")}}
	for i, want := range []int64{1, 1, 0} {
		if r := m.one(del); r.N != want {
			t.Fatalf("del %d: %+v", i, r)
		}
	}
	if got, _ := m.f.CFExists([]byte("cf"), [][]byte{[]byte("a"), []byte("b")}); fmt.Sprint(got) != "[false true]" {
		t.Fatalf("exists: %v", got)
	}
	if r := m.one(Command{Op: OpCFDel, Key: []byte("none"), Items: [][]byte{[]byte("a")}}); r.Err == nil {
		t.Fatal("CF.DEL on an absent key")
	}
	// Filling: ErrCuckooFull per item, never a panic.
	fill := cfAdd("small")
	fill.Capacity = 8
	for i := range 64 {
		fill.Items = append(fill.Items, fmt.Appendf(nil, "item%d", i))
	}
	r := m.one(fill)
	full := 0
	for _, err := range r.ItemErrs {
		if err == ErrCuckooFull {
			full++
		}
	}
	if full == 0 {
		t.Fatalf("64 items fit in a filter for 8: %+v", r.Ints)
	}
}

// TestReplayIdempotent: entries at or below the recorded index are
// skipped, so a multiset add (CF.ADD) replayed after a restart is not
// counted twice, while the entries after it apply.
func TestReplayIdempotent(t *testing.T) {
	m := newMachine(t)
	cmds := []Command{cfAdd("cf", "x"), put("a", "1"), {Op: OpBatch, Ops: []Command{del("a"), put("b", "2")}}, cfAdd("cf", "y")}
	m.f.ApplyBatch(logsOf(1, cmds[:3]))
	m.reopen()
	if m.f.Applied() != 3 {
		t.Fatalf("applied after reopen = %d", m.f.Applied())
	}
	out := m.f.ApplyBatch(logsOf(1, cmds)) // raft replays from 1
	for i := range 3 {
		if out[i] != nil {
			t.Fatalf("replayed entry %d ran: %+v", i+1, out[i])
		}
	}
	if info, _ := m.f.CFInfo([]byte("cf")); info.Items != 2 {
		t.Fatalf("cuckoo items = %d, want 2 (x once, y once)", info.Items)
	}
	if k, _ := m.get("a"); k != KindNone {
		t.Fatal("a is back")
	}
	// Other entry types move the index but change nothing.
	m.f.ApplyBatch([]*raft.Log{{Index: 5, Type: raft.LogConfiguration, Data: []byte("not a command")}})
	if m.f.Applied() != 5 {
		t.Fatalf("applied = %d", m.f.Applied())
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

func TestSnapshotRestore(t *testing.T) {
	src := newMachine(t)
	src.apply(put("a", "1"), put("b", "2"), bfAdd("bf", "x", "y"), cfAdd("cf", "z"),
		Command{Op: OpSetNode, Key: []byte("n1"), Value: []byte("127.0.0.1:1")})
	snap := snapshotBytes(t, src.f)
	// Writes after the snapshot are not in it.
	src.apply(put("late", "x"))

	dst := newMachine(t)
	dst.apply(put("only-here", "x"), put("a", "old"))
	if err := dst.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if dst.f.Applied() != 5 {
		t.Fatalf("applied after restore = %d", dst.f.Applied())
	}
	if k, _ := dst.get("only-here"); k != KindNone {
		t.Fatal("restore kept a key the snapshot does not have")
	}
	if k, _ := dst.get("late"); k != KindNone {
		t.Fatal("the snapshot has a later write")
	}
	if _, v := dst.get("a"); v != "1" {
		t.Fatalf("a = %q", v)
	}
	if got, _ := dst.f.BFExists([]byte("bf"), [][]byte{[]byte("x"), []byte("y")}); fmt.Sprint(got) != "[true true]" {
		t.Fatalf("bloom after restore: %v", got)
	}
	if got, _ := dst.f.CFExists([]byte("cf"), [][]byte{[]byte("z")}); !got[0] {
		t.Fatal("cuckoo after restore")
	}
	if addr, _ := dst.f.Node("n1"); addr != "127.0.0.1:1" {
		t.Fatalf("node address %q", addr)
	}
	// The restored state survives a reopen, and the replaced one is gone.
	dst.reopen()
	if _, v := dst.get("a"); v != "1" || dst.f.Applied() != 5 {
		t.Fatalf("after reopen: a = %q, applied %d", v, dst.f.Applied())
	}
	ents, _ := os.ReadDir(dst.dir)
	if len(ents) != 2 { // CURRENT and one db-*
		t.Fatalf("state dir holds %d entries", len(ents))
	}
	// The same snapshot again is skipped: the state already includes it.
	if err := dst.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if mt := dst.f.Metrics(); mt.RestoresSkipped != 1 {
		t.Fatalf("metrics %+v", mt)
	}
	// A snapshot of the restored state has the same bytes.
	if again := snapshotBytes(t, dst.f); !bytes.Equal(again, snap) {
		t.Fatal("snapshot of the restored state differs")
	}
}

// TestRestoreCountedBeforeApplied: a reader that sees the restored applied
// index also sees the restore counted (a follower waiting to catch up, then
// asking whether it did so through a snapshot, must not see the index
// without the count). The watcher spins on the other core; each round is
// one chance to land between the two updates if they were in the wrong
// order.
func TestRestoreCountedBeforeApplied(t *testing.T) {
	src := newMachine(t)
	src.apply(put("a", "1"), put("b", "2"))
	snap := snapshotBytes(t, src.f)
	want := src.f.Applied()
	for round := range 20 {
		dst := newMachine(t)
		done := make(chan struct{})
		var bad error
		go func() {
			defer close(done)
			for {
				if dst.f.Applied() >= want {
					if m := dst.f.Metrics(); m.Restores == 0 {
						bad = fmt.Errorf("round %d: applied %d seen before the restore was counted: %+v", round, want, m)
					}
					return
				}
				runtime.Gosched()
			}
		}()
		if err := dst.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatal(err)
		}
		<-done
		if bad != nil {
			t.Fatal(bad)
		}
	}
}

// TestRestoreDamaged: a damaged stream is refused and changes nothing.
func TestRestoreDamaged(t *testing.T) {
	src := newMachine(t)
	src.apply(put("a", "1"), put("b", "2"), bfAdd("bf", "x"))
	snap := snapshotBytes(t, src.f)
	dst := newMachine(t)
	dst.apply(put("mine", "x"))
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]byte{"empty": nil, "header only": snap[:16], "truncated": snap[:len(snap)-1], "extra": append(bytes.Clone(snap), 0)}
	for i := range 20 {
		bad := bytes.Clone(snap)
		bad[16+rng.IntN(len(bad)-16)] ^= 1 << rng.IntN(8)
		cases[fmt.Sprint("flip", i)] = bad
	}
	for name, bad := range cases {
		err := dst.f.Restore(io.NopCloser(bytes.NewReader(bad)))
		if !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("%s: %v", name, err)
		}
		if _, v := dst.get("mine"); v != "x" || dst.f.Applied() != 1 {
			t.Fatalf("%s: state changed", name)
		}
	}
	ents, _ := filepath.Glob(filepath.Join(dst.dir, "db-*"))
	if len(ents) != 1 {
		t.Fatalf("leftover directories: %v", ents)
	}
}

// TestDeterminism applies the same random entries to two machines with
// different batch boundaries, one reopening between batches (so its
// filters are decoded afresh while the other's stay cached), and checks
// that results and snapshot bytes agree: every replica reaches the same
// state, cuckoo evictions included.
func TestDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cmds []Command
	for range 400 {
		key := fmt.Sprint("f", rng.IntN(3))
		item := fmt.Sprint("i", rng.IntN(500))
		switch rng.IntN(5) {
		case 0, 1:
			c := cfAdd("c"+key, item)
			c.Capacity = 200 // small: it fills, and evictions happen
			cmds = append(cmds, c)
		case 2:
			cmds = append(cmds, Command{Op: OpCFDel, Key: []byte("c" + key), Items: [][]byte{[]byte(item)}})
		case 3:
			c := bfAdd("b"+key, item)
			c.Capacity = 20
			cmds = append(cmds, c)
		case 4:
			cmds = append(cmds, put(key, item))
		}
	}
	a, b := newMachine(t), newMachine(t)
	var ra, rb []any
	for i := 0; i < len(cmds); {
		n := 1 + rng.IntN(30)
		n = min(n, len(cmds)-i)
		ra = append(ra, a.f.ApplyBatch(logsOf(uint64(i+1), cmds[i:i+n]))...)
		i += n
	}
	for i := 0; i < len(cmds); {
		n := min(1+rng.IntN(7), len(cmds)-i)
		rb = append(rb, b.f.ApplyBatch(logsOf(uint64(i+1), cmds[i:i+n]))...)
		i += n
		b.reopen()
	}
	for i := range ra {
		if fmt.Sprint(ra[i]) != fmt.Sprint(rb[i]) {
			t.Fatalf("entry %d (%v): %v vs %v", i+1, cmds[i].Op, ra[i], rb[i])
		}
	}
	if !bytes.Equal(snapshotBytes(t, a.f), snapshotBytes(t, b.f)) {
		t.Fatal("the two replicas' snapshots differ")
	}
}

// TestConcurrentReads reads filters and keys while batches apply and a
// restore swaps the database (run with -race).
func TestConcurrentReads(t *testing.T) {
	src := newMachine(t)
	src.apply(bfAdd("bf", "x"), put("k", "v"))
	src.next = 1000
	src.apply(put("z", "z"))
	snap := snapshotBytes(t, src.f) // at index 1000
	m := newMachine(t)
	m.apply(bfAdd("bf", "x"), put("k", "v"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := m.f.BFExists([]byte("bf"), [][]byte{[]byte("x")})
				if err != nil || !got[0] {
					t.Errorf("BFExists = %v, %v", got, err)
					return
				}
				if _, v, err := m.f.Get([]byte("k")); err != nil || string(v) != "v" {
					t.Errorf("Get = %q, %v", v, err)
					return
				}
			}
		})
	}
	for i := range 50 {
		m.apply(bfAdd("bf", fmt.Sprint(i)), put(fmt.Sprint("n", i), "x"))
		if i == 25 {
			if err := m.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
				t.Fatal(err)
			}
			m.next = 1001
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.f.WaitApplied(ctx, m.next-1); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
}

// TestSnapshotGolden pins the worked example of docs/server.md ("The snapshot stream").
func TestSnapshotGolden(t *testing.T) {
	m := newMachine(t)
	m.next = 7
	m.apply(put("a", "1"))
	want := []byte{
		'B', 'K', 'V', 'S', 1, 0, 0, 0, // magic, version, reserved
		7, 0, 0, 0, 0, 0, 0, 0, // applied index 7
		2, 0x01, 'a', 2, 's', '1', // key 0x01 'a', value 's' '1'
		0,                      // end
		1, 0, 0, 0, 0, 0, 0, 0, // one record
		0x61, 0xe6, 0xfa, 0x04, // CRC-32C of the 31 bytes before
	}
	if got := snapshotBytes(t, m.f); !bytes.Equal(got, want) {
		t.Fatalf("snapshot\n got %x\nwant %x", got, want)
	}
}

// TestDeterminismFullCuckoo: an add that fails on a full cuckoo filter
// walks an eviction chain (and undoes it), drawing from the filter's
// eviction generator. A replica that restarts right after it decodes the
// filter with a fresh generator; the next adds must still evict alike.
// b restarts after every failed add, a never does.
func TestDeterminismFullCuckoo(t *testing.T) {
	var cmds []Command
	fill := func(prefix string, n int) {
		for i := range n {
			c := cfAdd("cf", fmt.Sprint(prefix, i))
			c.Capacity = 64
			cmds = append(cmds, c)
		}
	}
	fill("a", 130) // past the capacity: the last adds fail
	// Free one slot at a time and add: a full table, so the add usually
	// needs an eviction chain to reach the free slot.
	for i := range 15 {
		cmds = append(cmds, Command{Op: OpCFDel, Key: []byte("cf"), Items: [][]byte{fmt.Appendf(nil, "a%d", i)}})
		fill(fmt.Sprint("b", i, "-"), 3)
	}
	a, b := newMachine(t), newMachine(t)
	var ra, rb []any
	failed := false
	for i := range cmds {
		ra = append(ra, a.f.ApplyBatch(logsOf(uint64(i+1), cmds[i:i+1]))...)
		rb = append(rb, b.f.ApplyBatch(logsOf(uint64(i+1), cmds[i:i+1]))...)
		if r := rb[i].(*Result); r.ItemErrs != nil && r.ItemErrs[0] == ErrCuckooFull {
			failed = true
			b.reopen()
		}
	}
	if !failed {
		t.Fatal("the filter never filled up: the test tests nothing")
	}
	for i := range ra {
		if fmt.Sprint(ra[i]) != fmt.Sprint(rb[i]) {
			t.Fatalf("entry %d (%v): %v vs %v", i+1, cmds[i].Op, ra[i], rb[i])
		}
	}
	if !bytes.Equal(snapshotBytes(t, a.f), snapshotBytes(t, b.f)) {
		t.Fatal("the two replicas' snapshots differ")
	}
}

// TestRestoreCrash: a crash during a restore leaves either the old state
// (before CURRENT is switched: the half-built database is removed at
// Open) or the new one (after: the replaced database is removed).
func TestRestoreCrash(t *testing.T) {
	src := newMachine(t)
	src.apply(put("a", "new"), put("b", "new"))
	snap := snapshotBytes(t, src.f)

	// Before the switch: a half-built db-000002 and a CURRENT.tmp.
	m := newMachine(t)
	m.apply(put("a", "old"))
	m.f.Close()
	half := filepath.Join(m.dir, dbDirName(2))
	if err := os.MkdirAll(half, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(half, "000001.log"), []byte("torn"), 0o644)
	os.WriteFile(filepath.Join(m.dir, currentFile+".tmp"), []byte("db-0000"), 0o644)
	m.open()
	if _, v := m.get("a"); v != "old" || m.f.Applied() != 1 {
		t.Fatalf("after a crash before the switch: a = %q, applied %d", v, m.f.Applied())
	}
	if _, err := os.Stat(half); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the half-built database is still there: %v", err)
	}
	// The restore then runs again (raft retries it) and succeeds.
	if err := m.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}

	// After the switch, before the old database was removed.
	m2 := newMachine(t)
	m2.apply(put("a", "old"))
	if err := m2.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	m2.f.Close()
	old := filepath.Join(m2.dir, dbDirName(1))
	os.MkdirAll(old, 0o755) // as if the crash came before its removal
	os.WriteFile(filepath.Join(old, "junk"), []byte("x"), 0o644)
	m2.open()
	if _, v := m2.get("a"); v != "new" || m2.f.Applied() != 2 {
		t.Fatalf("after a crash after the switch: a = %q, applied %d", v, m2.f.Applied())
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the replaced database is still there: %v", err)
	}
}

// TestCuckooGrows: a cuckoo filter with an expansion adds a filter when
// the newest is full, as RedisBloom's does, keeps every item through a
// reopen, deletes across its filters, and grows alike on a replica that
// restarts between every command.
func TestCuckooGrows(t *testing.T) {
	var cmds []Command
	cmds = append(cmds, Command{Op: OpCFReserve, Key: []byte("cf"), Capacity: 8, Expansion: 2})
	for i := range 300 {
		cmds = append(cmds, cfAdd("cf", fmt.Sprint("i", i)))
	}
	for i := range 50 {
		cmds = append(cmds, Command{Op: OpCFDel, Key: []byte("cf"), Items: [][]byte{fmt.Appendf(nil, "i%d", i*3)}})
	}
	a, b := newMachine(t), newMachine(t)
	missed := 0 // deletes that found no copy (see below)
	for i := range cmds {
		ra := a.f.ApplyBatch(logsOf(uint64(i+1), cmds[i:i+1]))[0].(*Result)
		rb := b.f.ApplyBatch(logsOf(uint64(i+1), cmds[i:i+1]))[0].(*Result)
		if fmt.Sprint(ra) != fmt.Sprint(rb) {
			t.Fatalf("entry %d: %v vs %v", i+1, ra, rb)
		}
		if ra.Err != nil || ra.ItemErrs != nil || (cmds[i].Op == OpCFAdd && ra.Ints[0] != 1) {
			t.Fatalf("entry %d (%v): %+v", i+1, cmds[i].Op, ra)
		}
		if cmds[i].Op == OpCFDel && ra.N != 1 {
			missed++
		}
		if i%10 == 0 {
			b.reopen()
		}
	}
	if !bytes.Equal(snapshotBytes(t, a.f), snapshotBytes(t, b.f)) {
		t.Fatal("the two replicas' snapshots differ")
	}
	a.reopen()
	info, err := a.f.CFInfo([]byte("cf"))
	if err != nil || info.Filters < 3 || info.Items != 300-50+missed || info.Expansion != 2 {
		t.Fatalf("CFInfo = %+v, %v", info, err)
	}
	var items [][]byte
	for i := range 300 {
		items = append(items, fmt.Appendf(nil, "i%d", i))
	}
	// A delete removes a matching fingerprint from the newest filter that
	// has one in the item's buckets; in a chain that can be another item's
	// (10-bit fingerprints, a few filters: a few percent of deletes), which
	// that item then loses. RedisBloom's chains share this.
	got, _ := a.f.CFExists([]byte("cf"), items)
	lost := 0
	for i, ok := range got {
		if !ok && (i%3 != 0 || i >= 150) {
			lost++
		}
	}
	if missed > 5 || lost > 5 {
		t.Fatalf("%d of 50 deletes found nothing, %d of 250 kept items lost", missed, lost)
	}
	t.Logf("%d of 50 deletes found nothing, %d of 250 kept items lost", missed, lost)
	// Expansion 0 never grows.
	m := newMachine(t)
	m.one(Command{Op: OpCFReserve, Key: []byte("fixed"), Capacity: 8})
	fill := cfAdd("fixed")
	for i := range 64 {
		fill.Items = append(fill.Items, fmt.Appendf(nil, "x%d", i))
	}
	if r := m.one(fill); r.ItemErrs == nil {
		t.Fatal("a filter with expansion 0 took 64 items for 8")
	}
	if info, _ := m.f.CFInfo([]byte("fixed")); info.Filters != 1 {
		t.Fatalf("expansion 0 grew: %+v", info)
	}
}

// TestStringCacheFresh: Get through the string cache never goes back in
// time. One key is overwritten with increasing numbers, deleted, turned
// into a filter and back, one batch at a time, while readers Get it: each
// reader's values never decrease, and once a batch's index is applied
// every reader sees it or something newer. A cache of a few entries (with
// other keys written beside, to evict it) and one with the cache off must
// both hold. A reader that put back a value it read before a batch
// committed would fail here.
func TestStringCacheFresh(t *testing.T) {
	for _, limit := range []int{-1, 300, 1 << 20} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			f, err := Open(t.TempDir(), &Options{StringCacheBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			const n = 2000
			var published atomic.Int64 // the newest number whose batch has been applied
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					last := int64(-1)
					for {
						select {
						case <-stop:
							return
						default:
						}
						floor := published.Load()
						kind, v, err := f.Get([]byte("k"))
						if err != nil {
							t.Error(err)
							return
						}
						if kind != KindString {
							continue // deleted or a filter: the steps between numbers
						}
						got, err := strconv.ParseInt(string(v), 10, 64)
						if err != nil {
							t.Errorf("Get(k) = %q", v)
							return
						}
						if got < last || got < floor {
							t.Errorf("Get(k) = %d after %d was read and %d applied", got, last, floor)
							return
						}
						last = got
					}
				})
			}
			idx := uint64(1)
			apply := func(cmds ...Command) {
				f.ApplyBatch(logsOf(idx, cmds))
				idx += uint64(len(cmds))
			}
			for i := range int64(n) {
				apply(put("k", strconv.FormatInt(i, 10)), put(fmt.Sprint("other", i%7), "x"))
				published.Store(i)
				switch i % 100 {
				case 50:
					apply(del("k"))
				case 70:
					apply(del("k"), bfAdd("k", "a"))
				}
			}
			close(stop)
			wg.Wait()
			if _, v, _ := f.Get([]byte("k")); string(v) != strconv.Itoa(n-1) {
				t.Fatalf("Get(k) at the end = %q", v)
			}
			if nc, _ := f.strings.stats(); limit < 0 && nc != 0 {
				t.Fatalf("%d strings cached with the cache off", nc)
			}
		})
	}
}

// TestStringCacheAbsentFresh: a key GET found absent is remembered as
// absent (a negative entry), and that never outlives a write of the key:
// while the key exists for the whole of a Get (no delete begun before it
// ended), the Get finds it, however the readers' fills interleave with
// the writer's deletes and puts.
func TestStringCacheAbsentFresh(t *testing.T) {
	f, err := Open(t.TempDir(), &Options{StringCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// gen is even while the key exists: made odd before each delete is
	// applied, even again after the put that follows it is applied.
	var gen atomic.Int64
	gen.Store(1) // absent until the first put
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var absentSeen atomic.Int64
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				g1 := gen.Load()
				kind, _, err := f.Get([]byte("k"))
				g2 := gen.Load()
				if err != nil {
					t.Error(err)
					return
				}
				if kind == KindNone {
					absentSeen.Add(1)
					if g1 == g2 && g1%2 == 0 {
						t.Errorf("Get(k) found it absent while it existed (gen %d)", g1)
						return
					}
				}
			}
		})
	}
	idx := uint64(1)
	for i := range 3000 {
		if i%10 == 5 {
			gen.Add(1)
			f.ApplyBatch(logsOf(idx, []Command{del("k")}))
			idx++
			time.Sleep(50 * time.Microsecond) // let readers find it absent and fill
			continue
		}
		f.ApplyBatch(logsOf(idx, []Command{put("k", strconv.Itoa(i))}))
		idx++
		if gen.Load()%2 == 1 {
			gen.Add(1)
		}
	}
	close(stop)
	wg.Wait()
	if absentSeen.Load() == 0 {
		t.Fatal("no reader ever found the key absent: the test did not test")
	}
}

// TestStringCacheWriteThrough: a batch's strings are in the string cache
// once it is applied, without a Get to fill them, with the value the
// batch wrote; deleted keys and filters are not; the cache stays within
// its limit when writes alone fill it.
func TestStringCacheWriteThrough(t *testing.T) {
	f, err := Open(t.TempDir(), &Options{StringCacheBytes: 20 * entrySize(4, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.ApplyBatch(logsOf(1, []Command{put("s1", "v1"), put("s2", "v2"), put("s1", "v3"), del("s2"), bfAdd("bf", "a")}))
	cached := func(k string) (string, bool) {
		v, hit, _ := f.strings.get([]byte(k))
		return string(v), hit == cacheString
	}
	if v, ok := cached("s1"); !ok || v != "v3" {
		t.Fatalf("s1 in the cache: %q, %v; want v3", v, ok)
	}
	for _, k := range []string{"s2", "bf"} {
		if _, ok := cached(k); ok {
			t.Fatalf("%s is in the string cache", k)
		}
	}
	for i := range 100 {
		f.ApplyBatch(logsOf(uint64(2+i), []Command{put(fmt.Sprintf("k%03d", i), "xx")}))
	}
	if n, b := f.strings.stats(); n == 0 || b > 20*entrySize(4, 2) {
		t.Fatalf("after 100 writes: %d strings, %d bytes, limit %d", n, b, 20*entrySize(4, 2))
	}
	for i := range 100 {
		if v, ok := cached(fmt.Sprintf("k%03d", i)); ok && v != "xx" {
			t.Fatalf("k%03d cached as %q", i, v)
		}
	}
}

// TestCrashReplay: the state database's write-ahead log is never synced
// (the raft log is the durable record), so after an operating-system
// crash it holds what its flushes and the page cache happened to keep;
// after a kill -9, everything written. Whatever the moment and kind of
// the crash, the state reopened from what the disk holds (vfs.MemFS's
// CrashClone: synced bytes only; ProcessCrashClone: all written bytes)
// records an applied index no later than what was applied, holds exactly
// the entries up to it, and replaying the whole log from index 1, as
// raft does, reaches the state of a replica that never crashed, results
// included.
func TestCrashReplay(t *testing.T) {
	for _, kind := range []string{"os", "process"} {
		t.Run(kind, func(t *testing.T) { testCrashReplay(t, kind == "os") })
	}
}

func testCrashReplay(t *testing.T, osCrash bool) {
	var cmds []Command
	for i := range 400 {
		k := fmt.Sprint("k", i%37)
		switch i % 5 {
		case 0, 1:
			cmds = append(cmds, put(k, fmt.Sprint(i)))
		case 2:
			cmds = append(cmds, Command{Op: OpIncr, Key: []byte(fmt.Sprint("n", i%3)), Delta: int64(i)})
		case 3:
			cmds = append(cmds, cfAdd("cf", fmt.Sprint(i%50)))
		default:
			cmds = append(cmds, del(fmt.Sprint("k", (i*7)%37)))
		}
	}
	want := newMachine(t)
	wantRes := want.apply(cmds...)

	for _, crashAt := range []int{0, 1, 57, 200, 333, len(cmds)} {
		mem := vfs.NewMem()
		dir := t.TempDir()
		opts := &Options{DB: &bloomkv.Options{FS: mem, MemtableSize: 4 << 10}}
		f, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < crashAt; i += 7 { // batches of up to 7 entries
			f.ApplyBatch(logsOf(uint64(i+1), cmds[i:min(i+7, crashAt)]))
		}
		crashed := mem.ProcessCrashClone() // kill -9: the writes stay, memory does not
		if osCrash {
			crashed = mem.CrashClone() // what was fsynced
		}
		opts.DB.FS = crashed
		g, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("crash after %d entries: %v", crashAt, err)
		}
		a := g.Applied()
		if a > uint64(crashAt) {
			t.Fatalf("crash after %d entries: applied index %d is ahead", crashAt, a)
		}
		out := g.ApplyBatch(logsOf(1, cmds))
		for i, r := range out {
			switch {
			case uint64(i) < a && r != nil:
				t.Fatalf("crash after %d (recorded %d): entry %d ran again", crashAt, a, i+1)
			case uint64(i) >= a && fmt.Sprint(r) != fmt.Sprint(wantRes[i]):
				t.Fatalf("crash after %d (recorded %d): entry %d = %v, want %v", crashAt, a, i+1, r, wantRes[i])
			}
		}
		for _, k := range append(keysOf(37, "k"), "n0", "n1", "n2") {
			gk, gv, _ := g.Get([]byte(k))
			wk, wv, _ := want.f.Get([]byte(k))
			if gk != wk || string(gv) != string(wv) {
				t.Fatalf("crash after %d (recorded %d): %s = %c %q, want %c %q", crashAt, a, k, gk, gv, wk, wv)
			}
		}
		gi, _ := g.CFInfo([]byte("cf"))
		wi, _ := want.f.CFInfo([]byte("cf"))
		if fmt.Sprint(gi) != fmt.Sprint(wi) {
			t.Fatalf("crash after %d: CF.INFO %+v, want %+v", crashAt, gi, wi)
		}
		t.Logf("crash after %d entries: %d recovered from the disk, %d replayed", crashAt, a, uint64(len(cmds))-a)
		g.Close()
		f.Close()
	}
}

func keysOf(n int, prefix string) []string {
	var ks []string
	for i := range n {
		ks = append(ks, fmt.Sprint(prefix, i))
	}
	return ks
}
