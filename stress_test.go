package bloomkv

// Concurrency stress: writers, point readers, iterators and snapshots run
// at once against a DB with tiny memtables and tables, so flushes,
// compactions and manifest rewrites run under them all the time, while a
// maintenance goroutine adds Flush and Compact calls. Run it with -race.
//
// Every value names its key and a version: "s0042|17|ppp". Each key belongs
// to one writer, which numbers its versions 1, 2, 3, ...; some versions are
// deletions (a fixed function of key and version). For each key the test
// keeps the last version started (bumped before Write) and the last
// acknowledged (after Write returned). A read that starts after version a
// was acknowledged and ends before version s+1 is started must see a
// version in [a, s] -- so readers only ever see values that were written,
// and never miss an acknowledged one. An absent key must have a deletion
// (or "never written", version 0) in that window. Snapshots must read the
// same thing every time, however the database changes under them.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/vfs"
)

const (
	stressKeys    = 256
	stressWriters = 3
)

func stressKey(k int) []byte { return fmt.Appendf(nil, "s%04d", k) }

// stressIsDelete says whether version v of key k is a deletion.
func stressIsDelete(k int, v uint64) bool { return v > 0 && v%7 == uint64(k%7) }

func stressValue(k int, v uint64) []byte {
	b := fmt.Appendf(nil, "s%04d|%d|", k, v)
	return append(b, bytes.Repeat([]byte{'p'}, int(v*13+uint64(k))%50)...)
}

// stressVersions tracks, per key, the last version started and the last
// acknowledged.
type stressVersions struct {
	started, acked [stressKeys]atomic.Uint64
}

func (s *stressVersions) ackedAll() []uint64 {
	out := make([]uint64, stressKeys)
	for k := range out {
		out[k] = s.acked[k].Load()
	}
	return out
}

func (s *stressVersions) startedAll() []uint64 {
	out := make([]uint64, stressKeys)
	for k := range out {
		out[k] = s.started[k].Load()
	}
	return out
}

// checkSeen validates value for key k read in the version window [lo, hi].
// It returns the version seen.
func checkSeen(k int, value []byte, lo, hi uint64) (uint64, error) {
	var v uint64
	parts := bytes.SplitN(value, []byte("|"), 3)
	if len(parts) == 3 && string(parts[0]) == string(stressKey(k)) {
		v, _ = strconv.ParseUint(string(parts[1]), 10, 64)
	}
	switch {
	case v == 0:
		return 0, fmt.Errorf("key %s: value %q was never written to it", stressKey(k), value)
	case !bytes.Equal(value, stressValue(k, v)):
		return 0, fmt.Errorf("key %s: value %q is a damaged version %d", stressKey(k), value, v)
	case stressIsDelete(k, v):
		return 0, fmt.Errorf("key %s: version %d is a deletion, read as %q", stressKey(k), v, value)
	case v < lo || v > hi:
		return 0, fmt.Errorf("key %s: read version %d outside [%d acknowledged before, %d started after]", stressKey(k), v, lo, hi)
	}
	return v, nil
}

// checkAbsent validates that key k may be absent in the window [lo, hi].
func checkAbsent(k int, lo, hi uint64) error {
	for v := lo; v <= hi; v++ {
		if v == 0 || stressIsDelete(k, v) {
			return nil
		}
	}
	return fmt.Errorf("key %s: absent, but versions %d..%d are all values", stressKey(k), lo, hi)
}

// checkScan validates one pass of an iterator over [from, to) of the key
// indexes: seen maps key index to value; lo and hi are the windows.
func checkScan(seen map[int][]byte, from, to int, lo, hi []uint64) error {
	for k := from; k < to; k++ {
		if v, ok := seen[k]; ok {
			if _, err := checkSeen(k, v, lo[k], hi[k]); err != nil {
				return err
			}
		} else if err := checkAbsent(k, lo[k], hi[k]); err != nil {
			return err
		}
	}
	return nil
}

// scanKeys walks it forward (or backward) and returns what it holds, by
// key index, checking order and bounds.
func scanKeys(it *Iterator, from, to int, backward bool) (map[int][]byte, error) {
	seen := map[int][]byte{}
	var prev []byte
	ok := it.First()
	if backward {
		ok = it.Last()
	}
	for ; ok; ok = func() bool {
		if backward {
			return it.Prev()
		}
		return it.Next()
	}() {
		key := it.Key()
		k, err := strconv.Atoi(string(key[1:]))
		if err != nil || key[0] != 's' || k < from || k >= to {
			return nil, fmt.Errorf("iterator over [%d,%d) returned key %q", from, to, key)
		}
		if prev != nil && (bytes.Compare(prev, key) >= 0) != backward {
			return nil, fmt.Errorf("iterator order: %q then %q (backward=%v)", prev, key, backward)
		}
		prev = append(prev[:0], key...)
		seen[k] = append([]byte(nil), it.Value()...)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("iterator: %v", err)
	}
	return seen, nil
}

func stressDuration() time.Duration {
	if s := os.Getenv("BLOOMKV_STRESS_DURATION"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	if testing.Short() {
		return time.Second
	}
	return 3 * time.Second
}

func TestStressConcurrentReadersWritersSnapshots(t *testing.T) {
	fs := vfs.NewMem()
	opts := tinyOptions(fs)
	opts.MaxManifestFileSize = 1 << 10
	opts.IdleCompactionDelay = time.Millisecond // whenever the writers pause
	db := mustOpen(t, "/db", opts)
	var vers stressVersions

	var stop atomic.Bool
	var failOnce sync.Once
	fail := func(format string, args ...any) {
		failOnce.Do(func() { t.Errorf(format, args...) })
		stop.Store(true)
	}
	var wg sync.WaitGroup
	spawn := func(name string, seed uint64, fn func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(rand.New(rand.NewPCG(seed, uint64(len(name)))))
		}()
	}
	var writes, gets, scans, snapReads atomic.Int64

	for w := 0; w < stressWriters; w++ {
		spawn("writer", uint64(w), func(rng *rand.Rand) {
			b := NewBatch()
			for !stop.Load() {
				b.Reset()
				var ks []int
				for n := 1 + rng.IntN(4); len(ks) < n; {
					k := rng.IntN(stressKeys/stressWriters)*stressWriters + w
					if k < stressKeys && !containsInt(ks, k) {
						ks = append(ks, k)
					}
				}
				vs := make([]uint64, len(ks))
				for i, k := range ks {
					v := vers.started[k].Load() + 1
					vs[i] = v
					vers.started[k].Store(v) // before Write: a reader's upper bound
					if stressIsDelete(k, v) {
						b.Delete(stressKey(k))
					} else {
						b.Put(stressKey(k), stressValue(k, v))
					}
				}
				if err := db.Write(b); err != nil {
					fail("Write: %v", err)
					return
				}
				for i, k := range ks {
					vers.acked[k].Store(vs[i])
				}
				writes.Add(1)
			}
		})
	}

	for r := 0; r < 2; r++ {
		spawn("reader", uint64(r), func(rng *rand.Rand) {
			var last [stressKeys]uint64 // reads are monotonic in time
			for !stop.Load() {
				k := rng.IntN(stressKeys)
				lo := vers.acked[k].Load()
				v, err := db.Get(stressKey(k))
				hi := vers.started[k].Load()
				gets.Add(1)
				switch {
				case errors.Is(err, ErrNotFound):
					if err := checkAbsent(k, max(lo, last[k]), hi); err != nil {
						fail("Get: %v", err)
						return
					}
				case err != nil:
					fail("Get(%s): %v", stressKey(k), err)
					return
				default:
					seen, err := checkSeen(k, v, max(lo, last[k]), hi)
					if err != nil {
						fail("Get: %v", err)
						return
					}
					last[k] = seen
				}
			}
		})
	}

	spawn("iterator", 1, func(rng *rand.Rand) {
		for !stop.Load() {
			from := rng.IntN(stressKeys)
			to := from + 1 + rng.IntN(stressKeys-from)
			lo := vers.ackedAll()
			it := db.NewIterator(&IterOptions{LowerBound: stressKey(from), UpperBound: stressKey(to)})
			seen, err := scanKeys(it, from, to, rng.IntN(2) == 0)
			if err == nil {
				err = checkScan(seen, from, to, lo, vers.startedAll())
			}
			if err != nil {
				fail("scan [%d,%d): %v", from, to, err)
				return
			}
			scans.Add(1)
		}
	})

	spawn("snapshot", 2, func(rng *rand.Rand) {
		for !stop.Load() {
			lo := vers.ackedAll()
			snap := db.NewSnapshot()
			first, err := scanKeys(snap.NewIterator(nil), 0, stressKeys, false)
			if err == nil {
				err = checkScan(first, 0, stressKeys, lo, vers.startedAll())
			}
			if err != nil {
				fail("snapshot scan: %v", err)
				return
			}
			// Let the database move on, then read the snapshot again.
			time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
			for i := 0; i < 40; i++ {
				k := rng.IntN(stressKeys)
				v, err := snap.Get(stressKey(k))
				want, present := first[k]
				switch {
				case errors.Is(err, ErrNotFound) && !present:
				case err != nil && !errors.Is(err, ErrNotFound):
					fail("snapshot Get(%s): %v", stressKey(k), err)
					return
				case !present || !bytes.Equal(v, want):
					fail("snapshot Get(%s) = %q, %v; its first scan saw %q (present %v)", stressKey(k), v, err, want, present)
					return
				}
				snapReads.Add(1)
			}
			again, err := scanKeys(snap.NewIterator(nil), 0, stressKeys, rng.IntN(2) == 0)
			if err != nil {
				fail("snapshot rescan: %v", err)
				return
			}
			if len(again) != len(first) {
				fail("snapshot changed: %d keys, then %d", len(first), len(again))
				return
			}
			for k, v := range first {
				if !bytes.Equal(again[k], v) {
					fail("snapshot changed at %s: %q, then %q", stressKey(k), v, again[k])
					return
				}
			}
			if err := snap.Close(); err != nil {
				fail("snapshot Close: %v", err)
				return
			}
		}
	})

	spawn("maintenance", 3, func(rng *rand.Rand) {
		for !stop.Load() {
			time.Sleep(time.Duration(20+rng.IntN(60)) * time.Millisecond)
			var err error
			switch rng.IntN(4) {
			case 0:
				err = db.Flush()
			case 1:
				a, b := rng.IntN(stressKeys), rng.IntN(stressKeys)
				err = db.Compact(stressKey(min(a, b)), stressKey(max(a, b)))
			case 2:
				err = db.Compact(nil, nil)
			default:
				_ = db.Metrics()
			}
			if err != nil {
				fail("maintenance: %v", err)
				return
			}
		}
	})

	for end := time.Now().Add(stressDuration()); !stop.Load() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		db.Close()
		return
	}
	m := db.Metrics()
	t.Logf("%d batches, %d gets, %d scans, %d snapshot reads; %d flushes, %d compactions",
		writes.Load(), gets.Load(), scans.Load(), snapReads.Load(), m.Flushes, m.Compactions)
	if writes.Load() == 0 || gets.Load() == 0 || scans.Load() == 0 || snapReads.Load() == 0 || m.Flushes == 0 || m.Compactions == 0 {
		t.Fatal("some part of the stress never ran")
	}

	// Quiet now: every key holds exactly its last version, before and
	// after a reopen.
	checkFinal := func(db *DB, what string) {
		t.Helper()
		for k := 0; k < stressKeys; k++ {
			v := vers.acked[k].Load()
			got, err := db.Get(stressKey(k))
			if v == 0 || stressIsDelete(k, v) {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: Get(%s) = %q, %v; want absent (version %d)", what, stressKey(k), got, err, v)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, stressValue(k, v)) {
				t.Fatalf("%s: Get(%s) = %q, %v; want version %d", what, stressKey(k), got, err, v)
			}
		}
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	checkFinal(db, "final")
	checkInvariants(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, "/db", opts)
	defer db.Close()
	checkFinal(db, "after reopen")
}

func containsInt(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
