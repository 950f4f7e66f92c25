package memtable

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestConcurrentReadersOneWriter runs one writer against readers doing Get
// and full scans (run it with -race). The writer adds sequence numbers
// 1..n in order, each entry's value naming its key and sequence, so a
// reader can check that what it sees is a consistent prefix of the writes:
// a scan sees exactly the entries with seq <= its largest seq, in order.
func TestConcurrentReadersOneWriter(t *testing.T) {
	const n, nkeys, readers = 4000, 300, 4
	keyOf := func(seq uint64) []byte { return fmt.Appendf(nil, "k%04d", (seq*7919)%nkeys) }
	valueOf := func(ukey []byte, seq uint64) []byte {
		return binary.LittleEndian.AppendUint64(append([]byte(nil), ukey...), seq)
	}

	m := New()
	var written atomic.Uint64 // the writer's progress: every seq <= written is in m
	var wg sync.WaitGroup
	errs := make(chan error, readers*2)
	done := make(chan struct{})

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for seq := uint64(1); seq <= n; seq++ {
			k := keyOf(seq)
			if seq%13 == 0 {
				m.Add(seq, kv.KindDelete, k, nil)
			} else {
				m.Add(seq, kv.KindSet, k, valueOf(k, seq))
			}
			written.Store(seq)
		}
	}()

	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if r%2 == 0 {
					if err := checkScan(m); err != nil {
						errs <- err
						return
					}
					continue
				}
				// Get at the writer's current progress must see the
				// newest version at or below it.
				w := written.Load()
				seq := uint64(i%n) + 1
				if seq > w {
					continue
				}
				k := keyOf(seq)
				v, kind, ok := m.Get(k, w)
				if !ok {
					errs <- fmt.Errorf("Get(%s, %d) not found though seq %d was written", k, w, seq)
					return
				}
				if kind == kv.KindSet {
					got := binary.LittleEndian.Uint64(v[len(k):])
					if string(v[:len(k)]) != string(k) || got < seq || got > w {
						errs <- fmt.Errorf("Get(%s, %d) = seq %d, want in [%d, %d]", k, w, got, seq, w)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := checkScan(m); err != nil {
		t.Fatal(err)
	}
	if m.Len() != n {
		t.Fatalf("Len = %d, want %d", m.Len(), n)
	}
}

// checkScan verifies that one iterator sees a prefix of the writer's
// sequence numbers, in order, with values matching their keys.
func checkScan(m *Memtable) error {
	it := m.NewIter()
	defer it.Close()
	var prev []byte
	var count, maxSeq uint64
	for ok := it.First(); ok; ok = it.Next() {
		ukey, seq, kind, valid := kv.ParseInternalKey(it.Key())
		if !valid {
			return fmt.Errorf("bad key %q", it.Key())
		}
		if prev != nil && kv.CompareInternal(prev, it.Key()) >= 0 {
			return fmt.Errorf("out of order: %s then %s", kv.FormatInternalKey(prev), kv.FormatInternalKey(it.Key()))
		}
		if kind == kv.KindSet {
			v := it.Value()
			if string(v[:len(ukey)]) != string(ukey) || binary.LittleEndian.Uint64(v[len(ukey):]) != seq {
				return fmt.Errorf("value %q does not match %s", v, kv.FormatInternalKey(it.Key()))
			}
		}
		prev = it.Key()
		count++
		maxSeq = max(maxSeq, seq)
	}
	if count != maxSeq {
		return fmt.Errorf("scan saw %d entries but sequence numbers up to %d: not a point-in-time view", count, maxSeq)
	}
	return nil
}
