package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// A replica's outcome may depend only on the log. These tests apply one
// log of every kind of command to replicas that differ in everything the
// log does not say: how entries are batched, restarts (a reopen drops the
// in-memory filters), snapshot restores (the state arrives as bytes), and
// a filter cache so small that every command decodes its filter afresh.
// Every replica must give the same result for every entry, answer the
// same reads, and end with byte-equal snapshots.

// replica is a machine that may restart, restore or run with a tiny cache.
type replica struct {
	name                       string
	t                          *testing.T
	m                          *machine
	opts                       *Options
	reopenP, restoreP, maxRuns float64 // chances per batch; maxRuns bounds a batch
	rng                        *rand.Rand
}

func newReplica(t *testing.T, name string, cacheBytes int, reopenP, restoreP float64, maxBatch int, seed uint64) *replica {
	r := &replica{name: name, t: t, opts: &Options{FilterCacheBytes: cacheBytes}, reopenP: reopenP, restoreP: restoreP,
		maxRuns: float64(maxBatch), rng: rand.New(rand.NewPCG(seed, 99))}
	r.m = r.fresh()
	return r
}

// fresh opens an empty machine with r's options.
func (r *replica) fresh() *machine {
	m := &machine{t: r.t, dir: r.t.TempDir(), next: 1}
	f, err := Open(m.dir, r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	m.f = f
	r.t.Cleanup(func() { m.f.Close() })
	return m
}

func (r *replica) reopen() {
	if err := r.m.f.Close(); err != nil {
		r.t.Fatal(err)
	}
	f, err := Open(r.m.dir, r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.m.f = f
}

// restore moves r to a new machine that receives r's state as a snapshot,
// as a follower that fell behind does.
func (r *replica) restore() {
	snap := snapshotBytes(r.t, r.m.f)
	m := r.fresh()
	if err := m.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		r.t.Fatal(err)
	}
	m.next = r.m.next
	r.m.f.Close()
	r.m = m
}

// run applies cmds in batches of r's sizes, restarting and restoring
// between them, and returns each entry's result.
func (r *replica) run(cmds []Command) []string {
	var out []string
	for i := 0; i < len(cmds); {
		n := min(1+r.rng.IntN(int(r.maxRuns)), len(cmds)-i)
		for _, res := range r.m.apply(cmds[i : i+n]...) {
			out = append(out, fmt.Sprint(res))
		}
		i += n
		if r.rng.Float64() < r.reopenP {
			r.reopen()
		}
		if r.rng.Float64() < r.restoreP {
			r.restore()
		}
	}
	return out
}

// reads answers every read of the fsm for keys and items.
func (r *replica) reads(keys []string, items [][]byte) string {
	var b strings.Builder
	f := r.m.f
	for _, k := range keys {
		key := []byte(k)
		kind, v, err := f.Get(key)
		fmt.Fprintf(&b, "%s: get %v %q %v\n", k, kind, v, err)
		ex, err := f.BFExists(key, items)
		fmt.Fprintf(&b, "  bf.mexists %v %v\n", ex, err)
		bi, err := f.BFInfo(key)
		fmt.Fprintf(&b, "  bf.info %+v %v\n", bi, err)
		card, err := f.BFCard(key)
		fmt.Fprintf(&b, "  bf.card %d %v\n", card, err)
		ex, err = f.CFExists(key, items)
		fmt.Fprintf(&b, "  cf.mexists %v %v\n", ex, err)
		ci, err := f.CFInfo(key)
		fmt.Fprintf(&b, "  cf.info %+v %v\n", ci, err)
	}
	f.Scan(nil, func(k []byte, kind Kind) bool {
		fmt.Fprintf(&b, "scan %q %v\n", k, kind)
		return true
	})
	addr, err := f.Node("n1")
	fmt.Fprintf(&b, "node n1 %q %v\n", addr, err)
	return b.String()
}

// mixedLog is a log of every op the state machine has, on a few keys so
// that commands meet each other's kinds, with filters that fill up: a
// NONSCALING bloom filter of capacity 4540 at rate 0.1 (the issue 32 case,
// where an estimate of the items counted would differ between a filter
// built item by item and one decoded), small scaling ones, and cuckoo
// filters that grow or refuse.
func mixedLog(rng *rand.Rand) []Command {
	var cmds []Command
	items := func(prefix string, n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = fmt.Appendf(nil, "%s%d", prefix, rng.IntN(6000))
		}
		return out
	}
	ns := Command{Op: OpBFAdd, Key: []byte("ns")}
	for i := range 4542 {
		ns.Items = append(ns.Items, fmt.Appendf(nil, "k%d", i))
	}
	cmds = append(cmds, Command{Op: OpBFReserve, Key: []byte("ns"), ErrorRate: 0.1, Capacity: 4540}, ns)
	keys := []string{"a", "b", "c", "d", "ns"}
	key := func() []byte { return []byte(keys[rng.IntN(len(keys))]) }
	for range 600 {
		k := key()
		var c Command
		switch rng.IntN(16) {
		case 0:
			c = Command{Op: OpPut, Key: k, Value: fmt.Appendf(nil, "v%d", rng.IntN(100)), Flags: byte(rng.IntN(8))}
		case 1:
			c = Command{Op: OpDelete, Key: k}
		case 2:
			c = Command{Op: OpBatch, Ops: []Command{
				{Op: OpPut, Key: key(), Value: []byte("batch")}, {Op: OpDelete, Key: key()},
				{Op: OpDeleteRange, Key: []byte("c"), Value: []byte("d")}}}
		case 3:
			if rng.IntN(4) == 0 {
				c = Command{Op: OpDeleteRange, Key: []byte("a"), Value: []byte("c")}
			} else {
				c = Command{Op: OpSetNode, Key: []byte("n1"), Value: fmt.Appendf(nil, "127.0.0.1:%d", rng.IntN(100))}
			}
		case 4:
			c = Command{Op: OpBFReserve, Key: k, ErrorRate: []float64{0.1, 0.01, 0.3}[rng.IntN(3)],
				Capacity: uint64(1 + rng.IntN(60)), Expansion: uint64(rng.IntN(3))}
		case 5, 6, 7:
			c = Command{Op: OpBFAdd, Key: k, ErrorRate: 0.2, Capacity: uint64(5 + rng.IntN(40)), Expansion: uint64(rng.IntN(3)),
				Items: items("i", 1+rng.IntN(40))}
			if rng.IntN(5) == 0 {
				c.Flags = FlagNoCreate
			}
			if string(k) == "ns" {
				c.Items = items("k", 1+rng.IntN(5)) // mostly old items: the full filter's answers
			}
		case 8:
			c = Command{Op: OpCFReserve, Key: k, Capacity: uint64(8 + rng.IntN(60)), Expansion: uint64(rng.IntN(3))}
		case 9, 10, 11:
			c = Command{Op: OpCFAdd, Key: k, Capacity: uint64(8 + rng.IntN(60)), Expansion: uint64(rng.IntN(3)),
				Items: items("i", 1+rng.IntN(20)), Flags: byte(rng.IntN(4))}
		case 12:
			c = Command{Op: OpCFDel, Key: k, Items: items("i", 1)}
		case 13:
			c = Command{Op: OpBFAdd, Key: []byte("ns"), Items: items("new", 1)}
		case 14:
			c = Command{Op: OpIncr, Key: k, Delta: int64(rng.IntN(200) - 100)}
		case 15:
			c = Command{Op: OpGetDel, Key: k}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// TestDeterminismEveryCommand: replicas applying one log under every mix
// of restart, snapshot restore and cache size agree on each result, each
// read and their snapshots' bytes.
func TestDeterminismEveryCommand(t *testing.T) {
	cmds := mixedLog(rand.New(rand.NewPCG(32, 1)))
	replicas := []*replica{
		newReplica(t, "steady", 0, 0, 0, 64, 1),
		newReplica(t, "restarts", 0, 0.5, 0, 7, 2),
		newReplica(t, "restores", 0, 0, 0.3, 11, 3),
		newReplica(t, "1-byte cache", 1, 0, 0, 5, 4),
		newReplica(t, "all at once", 1, 0.3, 0.2, 9, 5),
	}
	keys := []string{"a", "b", "c", "d", "ns", "none"}
	var probe [][]byte
	for i := range 50 {
		probe = append(probe, fmt.Appendf(nil, "k%d", 4520+i), fmt.Appendf(nil, "i%d", i), fmt.Appendf(nil, "new%d", i))
	}
	var want []string
	var wantReads string
	var wantSnap []byte
	for i, r := range replicas {
		got := r.run(cmds)
		reads := r.reads(keys, probe)
		snap := snapshotBytes(t, r.m.f)
		if i == 0 {
			want, wantReads, wantSnap = got, reads, snap
			continue
		}
		for j := range want {
			if got[j] != want[j] {
				t.Errorf("%s: entry %d (%v %q): %s, %s has %s", r.name, j+1, cmds[j].Op, cmds[j].Key, got[j], replicas[0].name, want[j])
				break
			}
		}
		if reads != wantReads {
			t.Errorf("%s answers reads differently:\n%s\n%s:\n%s", r.name, reads, replicas[0].name, wantReads)
		}
		if !bytes.Equal(snap, wantSnap) {
			t.Errorf("%s's snapshot differs from %s's", r.name, replicas[0].name)
		}
	}
}

// TestNonScalingFullExact: a NONSCALING filter refuses new items at
// exactly its capacity in accepted items, as RedisBloom does, and BF.CARD
// and BF.INFO count accepted items, whether the filter was built in
// memory or decoded after a restart.
func TestNonScalingFullExact(t *testing.T) {
	for _, restart := range []bool{false, true} {
		m := newMachine(t)
		m.one(Command{Op: OpBFReserve, Key: []byte("bf"), ErrorRate: 0.1, Capacity: 4540})
		var items [][]byte
		for i := range 6000 {
			items = append(items, fmt.Appendf(nil, "k%d", i))
		}
		var res []*Result
		if restart {
			res = append(res, m.one(Command{Op: OpBFAdd, Key: []byte("bf"), Items: items[:3000]}))
			m.reopen()
			items = items[3000:]
		}
		res = append(res, m.one(Command{Op: OpBFAdd, Key: []byte("bf"), Items: items}))
		accepted, refused := 0, 0
		for _, r := range res {
			for i, n := range r.Ints {
				accepted += int(n)
				if r.ItemErrs != nil && r.ItemErrs[i] != nil {
					if r.ItemErrs[i] != ErrNonScalingFull {
						t.Fatalf("item %d: %v", i, r.ItemErrs[i])
					}
					refused++
				}
			}
		}
		card, _ := m.f.BFCard([]byte("bf"))
		info, _ := m.f.BFInfo([]byte("bf"))
		if accepted != 4540 || refused == 0 || card != 4540 || info.Items != 4540 || info.Capacity != 4540 {
			t.Fatalf("restart %v: %d accepted, %d refused, card %d, info %+v", restart, accepted, refused, card, info)
		}
	}
}

// TestMultiSameAsEntries: commands gathered into Multi entries (as the
// server gathers the writes of many clients, issue 29) decide exactly
// what the same commands one entry each decide: the same result for
// each, the same reads, the same state record for record. Some replicas
// restart or restore snapshots between the entries.
func TestMultiSameAsEntries(t *testing.T) {
	cmds := mixedLog(rand.New(rand.NewPCG(29, 1)))
	single := newReplica(t, "one entry each", 0, 0, 0, 1, 1)
	want := single.run(cmds)
	keys := []string{"a", "b", "c", "d", "ns", "none"}
	var probe [][]byte
	for i := range 50 {
		probe = append(probe, fmt.Appendf(nil, "k%d", 4520+i), fmt.Appendf(nil, "i%d", i))
	}
	wantReads := single.reads(keys, probe)
	wantSnap := snapshotBytes(t, single.m.f)[16:] // past the header and its applied index

	for _, r := range []*replica{
		newReplica(t, "multi", 0, 0, 0, 4, 7),
		newReplica(t, "multi, restarts and restores", 1, 0.3, 0.2, 3, 8),
	} {
		rng := rand.New(rand.NewPCG(29, 2))
		var entries []Command
		var sizes []int
		for i := 0; i < len(cmds); {
			n := min(1+rng.IntN(20), len(cmds)-i)
			if n == 1 {
				entries = append(entries, cmds[i]) // a lone command stays as it is
			} else {
				entries = append(entries, Command{Op: OpMulti, Ops: cmds[i : i+n]})
			}
			sizes = append(sizes, n)
			i += n
		}
		var got []string
		for i := 0; i < len(entries); {
			n := min(1+r.rng.IntN(int(r.maxRuns)), len(entries)-i)
			for k, res := range r.m.apply(entries[i : i+n]...) {
				if sizes[i+k] == 1 {
					got = append(got, fmt.Sprint(res))
					continue
				}
				if len(res.Multi) != sizes[i+k] {
					t.Fatalf("%s: a Multi of %d gave %d results", r.name, sizes[i+k], len(res.Multi))
				}
				for _, sub := range res.Multi {
					got = append(got, fmt.Sprint(sub))
				}
			}
			i += n
			if r.rng.Float64() < r.reopenP {
				r.reopen()
			}
			if r.rng.Float64() < r.restoreP {
				r.restore()
			}
		}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("%s: command %d (%v %q): %s; one entry each: %s", r.name, k+1, cmds[k].Op, cmds[k].Key, got[k], want[k])
			}
		}
		if reads := r.reads(keys, probe); reads != wantReads {
			t.Errorf("%s answers reads differently:\n%s\none entry each:\n%s", r.name, reads, wantReads)
		}
		if snap := snapshotBytes(t, r.m.f)[16:]; !bytes.Equal(snap[:len(snap)-12], wantSnap[:len(wantSnap)-12]) {
			t.Errorf("%s's state differs from one entry each", r.name)
		}
	}
}
