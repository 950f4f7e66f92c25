package memtable

import (
	"fmt"
	"github.com/bloomkv/bloomkv/kv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRangeDelsConcurrentFresh checks the lazily rebuilt tombstone list
// under concurrent readers (run it with -race): one writer adds disjoint
// tombstones and publishes how many AddRangeDel calls have returned; readers
// load that count, then call RangeDels, and the list they get must cover
// every one of those tombstones. A reader that returned a list another
// reader had just replaced would miss the newest tombstone: a Get would
// show a range-deleted key, and a flush racing the reader would write its
// table without the tombstone, losing the deletion for good.
func TestRangeDelsConcurrentFresh(t *testing.T) {
	const readers = 3
	budget := 3 * time.Second
	if testing.Short() {
		budget = time.Second
	}
	keyOf := func(i int) []byte { return fmt.Appendf(nil, "k%07d", i) }

	// Many memtables of a few tombstones each keep every rebuild short, so
	// that readers race each other's rebuilds often.
	const perMemtable = 8
	var (
		cur      atomic.Pointer[Memtable]
		returned atomic.Int64 // AddRangeDel calls returned on cur
		failed   atomic.Bool
		done     = make(chan struct{})
		wg       sync.WaitGroup
		errs     = make(chan error, readers)
	)
	cur.Store(New())

	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				m := cur.Load()
				want := returned.Load()
				if cur.Load() != m {
					continue // the writer moved on between the two loads
				}
				l := m.RangeDels()
				got := int64(0)
				if l != nil {
					got = int64(len(l.Tombstones()))
				}
				if got < want {
					failed.Store(true)
					errs <- fmt.Errorf("RangeDels returned %d tombstones after %d AddRangeDel calls had returned", got, want)
					return
				}
			}
		}()
	}

	deadline := time.Now().Add(budget)
	seq := uint64(1)
	for i := 0; !failed.Load() && time.Now().Before(deadline); i++ {
		if i%perMemtable == 0 {
			// Publish the new memtable before resetting the count, and the
			// count before any add: a reader may see a count lower than
			// the truth, never higher.
			returned.Store(0)
			cur.Store(New())
		}
		m := cur.Load()
		m.AddRangeDel(seq, keyOf(2*i), keyOf(2*i+1))
		seq++
		returned.Add(1)
		// Give the readers a turn to fragment between adds.
		for j := 0; j < 50 && m.RangeDels() != nil; j++ {
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRangeDelsRebuiltWhileJudged places the race deterministically: a
// reader has loaded the list covering one tombstone when another reader
// rebuilds it for the second. The first must still return both.
func TestRangeDelsRebuiltWhileJudged(t *testing.T) {
	m := New()
	m.AddRangeDel(1, []byte("a"), []byte("b"))
	if l := m.RangeDels(); l == nil || len(l.Tombstones()) != 1 {
		t.Fatalf("after one AddRangeDel: %v", l)
	}
	m.AddRangeDel(2, []byte("c"), []byte("d"))

	nested := false
	testHookRangeDelsLoaded = func(hm *Memtable) {
		if hm != m || nested {
			return
		}
		nested = true
		if l := m.RangeDels(); l == nil || len(l.Tombstones()) != 2 {
			t.Errorf("the rebuilding reader got %v", l)
		}
	}
	defer func() { testHookRangeDelsLoaded = nil }()

	l := m.RangeDels()
	if !nested {
		t.Fatal("the hook did not run")
	}
	if l == nil || len(l.Tombstones()) != 2 {
		t.Fatalf("the reader whose list was replaced got %d tombstones, want 2", len(l.Tombstones()))
	}
	if !l.Covers([]byte("c"), 1, 10) {
		t.Fatal("the returned list does not cover c, deleted at seq 2")
	}
}

// TestSnapshotTreeConcurrentFresh checks the other lazily rebuilt state, the
// tree clone that iterators share (run it with -race): an iterator opened
// after an Add returned sees that entry, whichever reader cloned the tree.
func TestSnapshotTreeConcurrentFresh(t *testing.T) {
	const readers = 3
	budget := 2 * time.Second
	if testing.Short() {
		budget = 500 * time.Millisecond
	}
	m := New()
	var (
		returned atomic.Int64
		done     = make(chan struct{})
		wg       sync.WaitGroup
		errs     = make(chan error, readers)
	)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				want := returned.Load()
				it := m.NewIter()
				got := int64(0)
				for it.First(); it.Valid(); it.Next() {
					got++
				}
				it.Close()
				if got < want {
					errs <- fmt.Errorf("iterator saw %d entries after %d Adds had returned", got, want)
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(budget)
	for i := 0; time.Now().Before(deadline) && i < 200000; i++ {
		m.Add(uint64(i+1), kv.KindSet, fmt.Appendf(nil, "k%07d", i), nil)
		returned.Add(1)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
