package raftstore

import (
	"flag"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	raftbench "github.com/hashicorp/raft/bench"
)

// hashicorp/raft's own store benchmarks (github.com/hashicorp/raft/bench,
// the suite raft-boltdb runs), unchanged, on every persistent
// implementation side by side:
//
//	go test -run '^$' -bench RaftBench -benchtime 2s ./raftstore
//
// TestRaftBench runs each of them at a few small counts in the normal
// tests, so that a store the suite fails on (this one refused index 0
// before issue 29) fails a test, not only a benchmark nobody runs.

var raftBenches = []struct {
	name   string
	log    func(*testing.B, raft.LogStore)
	stable func(*testing.B, raft.StableStore)
}{
	{name: "FirstIndex", log: raftbench.FirstIndex},
	{name: "LastIndex", log: raftbench.LastIndex},
	{name: "GetLog", log: raftbench.GetLog},
	{name: "StoreLog", log: raftbench.StoreLog},
	{name: "StoreLogs", log: raftbench.StoreLogs},
	{name: "DeleteRange", log: raftbench.DeleteRange},
	{name: "Set", stable: raftbench.Set},
	{name: "Get", stable: raftbench.Get},
}

func BenchmarkRaftBench(b *testing.B) {
	for _, rb := range raftBenches {
		for _, im := range impls {
			if !im.persistent {
				continue
			}
			b.Run(rb.name+"/"+im.name, func(b *testing.B) {
				s, done := im.open(b, b.TempDir())
				defer done()
				if rb.log != nil {
					rb.log(b, s)
				} else {
					rb.stable(b, s)
				}
			})
		}
	}
}

// TestRaftBench runs the suite at fixed iteration counts. The count is
// the -test.benchtime flag that testing.Benchmark reads, set for this
// test and restored after it; a benchmark's own output is discarded, so a
// recorder keeps the first error the store returned for the message.
func TestRaftBench(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	defer bt.Value.Set(old)
	for _, rb := range raftBenches {
		for _, im := range impls {
			t.Run(rb.name+"/"+im.name, func(t *testing.T) {
				// 1 and 2 iterations are what a store that refuses index 0
				// fails on (StoreLog's and DeleteRange's first entries);
				// 30 runs past DeleteRange's overlapping ranges.
				for _, n := range []int{1, 2, 30} {
					if err := bt.Value.Set(fmt.Sprintf("%dx", n)); err != nil {
						t.Fatal(err)
					}
					failed := false
					rec := &recorder{}
					testing.Benchmark(func(b *testing.B) {
						s, done := im.open(b, t.TempDir())
						defer done()
						rec.store = s
						defer func() { failed = failed || b.Failed() }()
						if rb.log != nil {
							rb.log(b, rec)
						} else {
							rb.stable(b, rec)
						}
					})
					if failed {
						t.Fatalf("%s on %s failed at b.N = %d: %v", rb.name, im.name, n, rec.err)
					}
				}
			})
		}
	}
}

// recorder passes every call to store and keeps the first error.
type recorder struct {
	store
	err error
}

func (r *recorder) note(err error) error {
	if err != nil && r.err == nil {
		r.err = err
	}
	return err
}

func (r *recorder) StoreLog(l *raft.Log) error      { return r.note(r.store.StoreLog(l)) }
func (r *recorder) StoreLogs(l []*raft.Log) error   { return r.note(r.store.StoreLogs(l)) }
func (r *recorder) DeleteRange(lo, hi uint64) error { return r.note(r.store.DeleteRange(lo, hi)) }
func (r *recorder) GetLog(i uint64, l *raft.Log) error {
	return r.note(r.store.GetLog(i, l))
}
func (r *recorder) Set(k, v []byte) error { return r.note(r.store.Set(k, v)) }
func (r *recorder) Get(k []byte) ([]byte, error) {
	v, err := r.store.Get(k)
	return v, r.note(err)
}
