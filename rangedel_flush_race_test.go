package bloomkv

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestDeleteRangeFlushRacingReaders flushes memtables whose newest range
// tombstone has not yet been fragmented while readers Get keys of that
// range, then reopens and checks every range deletion. The flush and the
// readers both ask the immutable memtable for its tombstones; if either got
// a list without the newest tombstone, the flushed table would lack it, the
// log would be obsolete, and the deleted keys would come back after reopen
// (run it with -race too).
func TestDeleteRangeFlushRacingReaders(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 20
	}
	fs := vfs.NewMem()
	o := tinyOptions(fs)
	o.MemtableSize = 1 << 20 // only the explicit flushes
	db := mustOpen(t, "/db", o)
	key := func(round, i int) []byte { return fmt.Appendf(nil, "r%03d/k%02d", round, i) }
	const keysPerRound, readers = 20, 2

	for round := range rounds {
		for i := range keysPerRound {
			if err := db.Put(key(round, i), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		// One tombstone fragmented by a read, then a second one unread.
		if err := db.DeleteRange(key(round, 0), key(round, 5)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Get(key(round, 1)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("round %d: Get after the first DeleteRange: %v", round, err)
		}
		if err := db.DeleteRange(key(round, 10), key(round, 15)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 10; i < 15; i++ {
					k := key(round, (i+r)%5+10)
					if _, err := db.Get(k); !errors.Is(err, ErrNotFound) {
						errs <- fmt.Errorf("round %d: Get(%s) during the flush: %v", round, k, err)
						return
					}
				}
			}()
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = mustOpen(t, "/db", o)
	defer db.Close()
	for round := range rounds {
		for i := range keysPerRound {
			_, err := db.Get(key(round, i))
			deleted := i < 5 || (i >= 10 && i < 15)
			switch {
			case deleted && !errors.Is(err, ErrNotFound):
				t.Errorf("after reopen: %s was range-deleted, Get = %v", key(round, i), err)
			case !deleted && err != nil:
				t.Errorf("after reopen: Get(%s) = %v", key(round, i), err)
			}
		}
	}
}
