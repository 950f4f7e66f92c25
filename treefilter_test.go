package bloomkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/treefilter"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/klauspost/crc32"
)

// waitTreeFilter waits until the maintainer has caught up with the
// current version.
func waitTreeFilter(t *testing.T, db *DB) {
	t.Helper()
	for {
		db.manifestMu.Lock()
		done := !db.tf.running && db.tf.latest != nil
		db.manifestMu.Unlock()
		if done {
			return
		}
		if db.tf.broken.Load() {
			t.Fatal("tree filter broken")
		}
		time.Sleep(time.Millisecond)
	}
}

// checkTreeFilter checks that the current tree filter describes the current
// version exactly: every key of every table is found at its tag (its
// level, or the level it moved from), the filter holds no other entry, the
// moved tables are recorded where they are, and no update has read a table
// back.
func checkTreeFilter(t *testing.T, db *DB) {
	t.Helper()
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()
	for db.tf.running { // the maintainer: wait until it has caught up
		db.manifestMu.Unlock()
		time.Sleep(time.Millisecond)
		db.manifestMu.Lock()
	}
	tf := db.tf.latest
	if tf == nil {
		t.Fatalf("no tree filter for the current version (broken %v)", db.tf.broken.Load())
	}
	db.mu.Lock()
	cur := db.versions.Current()
	db.mu.Unlock()
	if treeFilterOf(cur) != tf || tf.v != cur {
		t.Fatal("the current version does not carry the current tree filter")
	}
	total, moved := 0, 0
	for l := range cur.Levels {
		for _, f := range cur.Levels[l] {
			tag := tf.TagOf(f.FileNum, l)
			if mtag, ml, ok := tf.Moved(f.FileNum); ok {
				moved++
				if ml != l || tf.ProbeLevels(1<<mtag)&(1<<l) == 0 {
					t.Fatalf("table %d in L%d recorded as moved to L%d (probe levels of tag %d: %b)", f.FileNum, l, ml, mtag, tf.ProbeLevels(1<<mtag))
				}
			}
			err := db.scanTableKeys(f, func(h uint64) {
				total++
				if tf.Lookup(h)&(1<<tag) == 0 {
					t.Fatalf("table %d in L%d (tag %d): a key has no entry (mask %b, %d moved, entries %d, readback %d, rebuilds %d)", f.FileNum, l, tag, tf.Lookup(h), tf.NumMoved(), tf.Entries(), db.tf.updateTablesRead.Load(), db.tf.rebuilds.Load())
				}
			}, func() {
				if tf.RangeDelLevels()&(1<<l) == 0 {
					t.Fatalf("table %d in L%d holds range deletions the filter does not know", f.FileNum, l)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if total != tf.Entries() {
		t.Fatalf("filter holds %d entries, the tables %d keys", tf.Entries(), total)
	}
	if moved != tf.NumMoved() {
		t.Fatalf("%d moved tables recorded, %d live", tf.NumMoved(), moved)
	}
	// No moved table shares its tag with a table overlapping it (a
	// present Get there would read both): retagOverlappedMoves.
	for l := range cur.Levels {
		for _, f := range cur.Levels[l] {
			if _, _, ok := tf.Moved(f.FileNum); !ok {
				continue
			}
			for l2 := range cur.Levels {
				for _, g := range cur.Levels[l2] {
					if g != f && tf.TagOf(g.FileNum, l2) == tf.TagOf(f.FileNum, l) && g.Overlaps(f.SmallestUserKey(), f.LargestUserKey()) {
						t.Fatalf("moved table %d (L%d, tag %d) overlaps table %d in L%d carrying the same tag", f.FileNum, l, tf.TagOf(f.FileNum, l), g.FileNum, l2)
					}
				}
			}
		}
	}
	// Flushes and compactions hand their keys over (treefilter_update.go).
	if n, b := db.tf.updateTablesRead.Load(), db.tf.updateBytesRead.Load(); n != 0 || b != 0 {
		t.Fatalf("tree filter updates read %d tables (%d bytes) back", n, b)
	}
}

// TestTreeFilterAgainstModel runs random writes, point and range
// deletions, batches, snapshots, flushes, compactions and reopens with
// Options.TreeFilter on, checking every Get (on the DB and on snapshots)
// against a model, and after each settling that the filter describes the
// tree exactly.
func TestTreeFilterAgainstModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 28))
			opts := tinyOptions(vfs.NewMem())
			opts.LBaseMaxBytes, opts.TargetFileSize = 8<<10, 4<<10
			opts.TreeFilter = true
			const dir = "/db"
			db := mustOpen(t, dir, opts)
			defer func() { db.Close() }()
			m := model{}
			var snaps []openSnapshot
			steps := 6000
			if testing.Short() {
				steps = 2500
			}
			key := func() string { return fmt.Sprintf("k%04d", rng.IntN(modelKeySpace)) }
			deepest, reopens, checks := 0, 0, 0
			var total TreeFilterMetrics
			for step := range steps {
				switch r := rng.IntN(100); {
				case r < 35:
					k, v := key(), fmt.Sprintf("v%d-%s", step, bytes.Repeat([]byte("x"), rng.IntN(60)))
					if err := db.Put([]byte(k), []byte(v)); err != nil {
						t.Fatal(err)
					}
					m[k] = v
				case r < 42:
					k := key()
					if err := db.Delete([]byte(k)); err != nil {
						t.Fatal(err)
					}
					delete(m, k)
				case r < 46:
					lo := rng.IntN(modelKeySpace)
					a, b := fmt.Sprintf("k%04d", lo), fmt.Sprintf("k%04d", lo+1+rng.IntN(30))
					if err := db.DeleteRange([]byte(a), []byte(b)); err != nil {
						t.Fatal(err)
					}
					m.deleteRange(a, b)
				case r < 72:
					checkGet(t, db.Get, m, key(), fmt.Sprintf("step %d", step))
				case r < 75:
					snaps = append(snaps, openSnapshot{db.NewSnapshot(), m.clone()})
				case r < 81 && len(snaps) > 0:
					s := snaps[rng.IntN(len(snaps))]
					checkGet(t, s.s.Get, s.m, key(), fmt.Sprintf("step %d snapshot", step))
				case r < 83 && len(snaps) > 0:
					i := rng.IntN(len(snaps))
					snaps[i].s.Close()
					snaps = append(snaps[:i], snaps[i+1:]...)
				case r < 90:
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				case r < 92:
					lo, hi := key(), key()
					if lo > hi {
						lo, hi = hi, lo
					}
					if err := db.Compact([]byte(lo), []byte(hi)); err != nil {
						t.Fatal(err)
					}
				case r < 93:
					for _, s := range snaps {
						s.s.Close()
					}
					snaps = nil
					tm := db.Metrics().TreeFilter
					total.Probes += tm.Probes
					total.Negatives += tm.Negatives
					total.Rebuilds += tm.Rebuilds
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					// Tables with and without their own filters: the tree
					// filter does not depend on them.
					opts.BloomBitsPerKey = []int{-1, 4, 10}[rng.IntN(3)]
					db = mustOpen(t, dir, opts)
					reopens++
				case r < 96:
					if err := db.WaitForCompactions(); err != nil {
						t.Fatal(err)
					}
					checkInvariants(t, db)
					checkTreeFilter(t, db)
					checks++
					for l, lm := range db.Metrics().Levels {
						if lm.Files > 0 {
							deepest = max(deepest, l)
						}
					}
				default:
					b := NewBatch()
					next := m.clone()
					for i := rng.IntN(6); i >= 0; i-- {
						k := key()
						if rng.IntN(3) == 0 {
							b.Delete([]byte(k))
							delete(next, k)
						} else {
							b.Put([]byte(k), []byte(fmt.Sprint("b", step, i)))
							next[k] = fmt.Sprint("b", step, i)
						}
					}
					if err := db.Write(b); err != nil {
						t.Fatal(err)
					}
					m = next
				}
			}
			for i := range modelKeySpace {
				checkGet(t, db.Get, m, fmt.Sprintf("k%04d", i), "final")
			}
			for _, s := range snaps {
				for i := 0; i < modelKeySpace; i += 7 {
					checkGet(t, s.s.Get, s.m, fmt.Sprintf("k%04d", i), "final snapshot")
				}
				s.s.Close()
			}
			if err := db.WaitForCompactions(); err != nil {
				t.Fatal(err)
			}
			checkTreeFilter(t, db)
			tm := db.Metrics().TreeFilter
			total.Probes += tm.Probes
			total.Negatives += tm.Negatives
			total.Rebuilds += tm.Rebuilds
			t.Logf("deepest L%d, %d reopens, %d filter checks; tree filter: %d probes, %d negatives, %d builds; now %+v",
				deepest, reopens, checks, total.Probes, total.Negatives, total.Rebuilds, tm)
			if deepest < 2 || reopens == 0 || total.Probes == 0 || total.Negatives == 0 {
				t.Fatalf("workload too small: deepest L%d, %d reopens, %d probes", deepest, reopens, total.Probes)
			}
		})
	}
}

// TestTreeFilterConcurrentGets reads acknowledged keys and absent ones
// from several goroutines while a writer puts, flushes and compacts (merges
// and trivial moves), so that filters are replaced under the readers from
// the keys flushes and compactions hand over (run with -race).
func TestTreeFilterConcurrentGets(t *testing.T) {
	opts := tinyOptions(vfs.NewMem())
	opts.TreeFilter = true
	var moves atomic.Int64
	opts.EventListener = &EventListener{CompactionEnd: func(ci CompactionInfo) {
		if ci.Err == nil && ci.TrivialMove {
			moves.Add(1)
		}
	}}
	db := mustOpen(t, "/db", opts)
	defer db.Close()
	n := 6000
	if testing.Short() {
		n = 2500
	}
	var written atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			for !stop.Load() {
				w := written.Load()
				if w == 0 {
					continue
				}
				i := rng.Int64N(w)
				v, err := db.Get(fmt.Appendf(nil, "key%06d", i))
				if err != nil || string(v) != fmt.Sprint("value", i) {
					errs <- fmt.Errorf("Get(key%06d) = %q, %v after it was written", i, v, err)
					return
				}
				if _, err := db.Get(fmt.Appendf(nil, "key%06d-absent", i)); !errors.Is(err, ErrNotFound) {
					errs <- fmt.Errorf("Get of an absent key: %v", err)
					return
				}
			}
		}()
	}
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "key%06d", i), fmt.Append(nil, "value", i)); err != nil {
			t.Fatal(err)
		}
		written.Store(int64(i + 1))
		// Rewrite old keys too in the first half, so that a key has
		// versions in several levels and compactions merge them down; the
		// second half writes new keys in order, which trivial moves take
		// down.
		if j := i / 2; i%3 == 0 && i < n/2 {
			if err := db.Put(fmt.Appendf(nil, "key%06d", j), fmt.Append(nil, "value", j)); err != nil {
				t.Fatal(err)
			}
		}
		if i%1000 == 999 {
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	checkTreeFilter(t, db)
	t.Logf("%d trivial moves; %+v", moves.Load(), db.Metrics().TreeFilter)
	if moves.Load() == 0 {
		t.Fatal("no trivial move: the readers never met a moved table")
	}
}

// TestTreeFilterSavedCopy: Close saves the filter and Open adopts it
// without reading a table; a damaged copy is rejected (ErrCorruption from
// the decoder, for a flipped byte anywhere) and rebuilt; a stale one
// (other tables) is rebuilt silently.
func TestTreeFilterSavedCopy(t *testing.T) {
	fs := vfs.NewMem()
	opts := tinyOptions(fs)
	opts.TreeFilter = true
	db := mustOpen(t, "/db", opts)
	m := model{}
	for i := range 3000 {
		k, v := fmt.Sprintf("k%05d", i*7%3001), fmt.Sprint("v", i)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := db.DeleteRange([]byte("k00100"), []byte("k00200")); err != nil {
		t.Fatal(err)
	}
	m.deleteRange("k00100", "k00200")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	waitTreeFilter(t, db) // else Close saves nothing when a rebuild is due
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkAll := func(db *DB) {
		t.Helper()
		for i := range 3100 {
			checkGet(t, db.Get, m, fmt.Sprintf("k%05d", i), "reopened")
		}
		checkTreeFilter(t, db)
	}

	db = mustOpen(t, "/db", opts)
	if tm := db.Metrics().TreeFilter; tm.Loaded != 1 || tm.Rebuilds != 0 || tm.TablesRead != 0 {
		t.Fatalf("saved copy not adopted: %+v", tm)
	}
	checkAll(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage: every byte flipped in turn is rejected by the decoder.
	name := "/db/" + treefilter.FileName
	data := readMemFile(t, fs, name)
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		if _, _, err := treefilter.Decode(name, bad); !errors.Is(err, ErrCorruption) {
			t.Fatalf("byte %d flipped: %v, want ErrCorruption", i, err)
		}
	}
	for _, n := range []int{0, 10, len(data) - 1} {
		if _, _, err := treefilter.Decode(name, data[:n]); !errors.Is(err, ErrCorruption) {
			t.Fatalf("cut to %d bytes: %v, want ErrCorruption", n, err)
		}
	}
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 1
	replaceFile(t, fs, name, bad)
	db = mustOpen(t, "/db", opts)
	if tm := db.Metrics().TreeFilter; tm.Loaded != 0 || tm.Rejected != 1 || tm.Rebuilds != 1 {
		t.Fatalf("damaged copy not rejected and rebuilt: %+v", tm)
	}
	checkAll(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A version-1 file (fixed 13-bit fingerprints and a 3-bit level, no
	// tags), intact: rejected as corrupt (format version), counted, logged
	// with a warning, and rebuilt; the next Close writes version 2.
	v1 := bytes.Clone(data)
	binary.LittleEndian.PutUint32(v1[8:], 1)
	binary.LittleEndian.PutUint32(v1[len(v1)-4:], crc32.Checksum(v1[:len(v1)-4], crc32.MakeTable(crc32.Castagnoli)))
	if _, _, err := treefilter.Decode(name, v1); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "format version 1") {
		t.Fatalf("version-1 file: %v, want ErrCorruption naming the version", err)
	}
	replaceFile(t, fs, name, v1)
	var logs bytes.Buffer
	lopts := *opts
	lopts.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))
	db = mustOpen(t, "/db", &lopts)
	if tm := db.Metrics().TreeFilter; tm.Loaded != 0 || tm.Rejected != 1 || tm.Rebuilds != 1 {
		t.Fatalf("version-1 copy not rejected and rebuilt: %+v", tm)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "format version 1") {
		t.Fatalf("no warning naming the version-1 copy in the log:\n%s", logs.String())
	}
	checkAll(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(readMemFile(t, fs, name)[8:]); v != 2 {
		t.Fatalf("Close saved format version %d, want 2", v)
	}

	// Stale: the tables change while the option is off (nothing saved).
	saved := readMemFile(t, fs, name)
	opts.TreeFilter = false
	db = mustOpen(t, "/db", opts)
	for i := 3000; i < 3100; i++ {
		k := fmt.Sprintf("k%05d", i)
		if err := db.Put([]byte(k), []byte("new")); err != nil {
			t.Fatal(err)
		}
		m[k] = "new"
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readMemFile(t, fs, name), saved) {
		t.Fatal("the saved copy changed while the option was off")
	}
	opts.TreeFilter = true
	db = mustOpen(t, "/db", opts)
	defer db.Close()
	if tm := db.Metrics().TreeFilter; tm.Loaded != 0 || tm.Rejected != 0 || tm.Rebuilds != 1 {
		t.Fatalf("stale copy not rebuilt: %+v", tm)
	}
	checkAll(db)
}

// TestTreeFilterUpdatesReadNoTable: flushes and compactions hand the tree
// filter the keys they write and read, so keeping it up to date reads no
// table back (UpdateTablesRead and UpdateBytesRead stay 0; a load in key
// order re-tags no moved table either) through
// sequential and random writes, overwrites, point and range deletions
// under a snapshot, trivial moves, merges, manual compactions,
// RebuildFilters and a reopen; and the
// filter describes the tree exactly after each settling.
func TestTreeFilterUpdatesReadNoTable(t *testing.T) {
	fs := vfs.NewMem()
	opts := tinyOptions(fs)
	opts.TreeFilter = true
	var moves, merges atomic.Int64
	opts.EventListener = &EventListener{CompactionEnd: func(ci CompactionInfo) {
		if ci.Err == nil && ci.TrivialMove {
			moves.Add(1)
		} else if ci.Err == nil {
			merges.Add(1)
		}
	}}
	db := mustOpen(t, "/db", opts)
	defer func() { db.Close() }()
	m := model{}
	put := func(k, v string) {
		t.Helper()
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	settle := func(what string) {
		t.Helper()
		if err := db.WaitForCompactions(); err != nil {
			t.Fatal(err)
		}
		checkTreeFilter(t, db)
		if tm := db.Metrics().TreeFilter; tm.UpdateTablesRead != 0 || tm.UpdateBytesRead != 0 {
			t.Fatalf("%s: updates read %d tables (%d bytes) back", what, tm.UpdateTablesRead, tm.UpdateBytesRead)
		}
	}
	for i := range 3000 { // in key order: level-0 tables that move down
		put(fmt.Sprintf("k%05d", i), fmt.Sprint("seq", i))
	}
	settle("sequential fill")
	// Tables moved down keep their entries; in a load in key order no
	// later table overlaps them, so none is read back to re-tag it.
	if tm := db.Metrics().TreeFilter; moves.Load() == 0 || tm.RetagTablesRead != 0 {
		t.Fatalf("sequential fill: %d trivial moves, %d moved tables read back", moves.Load(), tm.RetagTablesRead)
	}
	snap := db.NewSnapshot()
	snapModel := m.clone()
	rng := rand.New(rand.NewPCG(5, 28))
	for i := range 3000 {
		k := fmt.Sprintf("k%05d", rng.IntN(4000))
		switch i % 10 {
		case 0:
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		case 1:
			if i%100 == 1 {
				lo := rng.IntN(4000)
				a, b := fmt.Sprintf("k%05d", lo), fmt.Sprintf("k%05d", lo+20)
				if err := db.DeleteRange([]byte(a), []byte(b)); err != nil {
					t.Fatal(err)
				}
				m.deleteRange(a, b)
			}
		default:
			put(k, fmt.Sprint("rnd", i))
		}
	}
	settle("random writes")
	for i := range 4000 {
		k := fmt.Sprintf("k%05d", i)
		checkGet(t, db.Get, m, k, "after random writes")
		checkGet(t, snap.Get, snapModel, k, "snapshot")
	}
	snap.Close()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	settle("Compact")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	opts.BloomBitsPerKey = 6 // every table's filter is stale: RebuildFilters rewrites them all
	db = mustOpen(t, "/db", opts)
	for i := range 500 {
		put(fmt.Sprintf("k%05d", 5000+i), "after reopen")
	}
	if err := db.RebuildFilters(); err != nil {
		t.Fatal(err)
	}
	settle("RebuildFilters")
	for i := range 50 {
		put(fmt.Sprintf("k%05d", 6000+i), "before Close")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, "/db", opts)
	settle("reopen")
	for i := range 6100 {
		checkGet(t, db.Get, m, fmt.Sprintf("k%05d", i), "final")
	}
	tm := db.Metrics().TreeFilter
	t.Logf("%d trivial moves, %d merges; tree filter now %+v", moves.Load(), merges.Load(), tm)
	if moves.Load() == 0 || merges.Load() == 0 {
		t.Fatalf("workload too small: %d trivial moves, %d merges", moves.Load(), merges.Load())
	}
}

// TestTreeFilterGrowthStaysCompact loads keys in a random order, letting
// the maintainer catch up every few hundred keys, and checks after each
// step that the filter grown on the way spends at most 1.25x the bits per
// entry of a compact one (a build at treefilter.OpenLoad, as Open makes):
// the first rule, building at 55% load, left it 1.5-1.7x the compact size
// after each growth and fails here. Then it deletes 80% of the keys:
// the filter shrinks back (a build at GrowLoad) instead of keeping the
// slots the keys left. The filter describes the tree exactly after every
// step (checkTreeFilter: no key of any table without its entry), a
// concurrent reader finds every key written while the filter grows, and
// every Get agrees with a model after the shrink and after a reopen.
func TestTreeFilterGrowthStaysCompact(t *testing.T) {
	fs := vfs.NewMem()
	opts := tinyOptions(fs)
	opts.TreeFilter = true
	opts.MemtableSize = 32 << 10
	opts.LBaseMaxBytes = 128 << 10
	opts.TargetFileSize = 32 << 10
	db := mustOpen(t, "/db", opts)
	defer func() { db.Close() }()
	const n = 24000
	compactBits := 16 / treefilter.OpenLoad
	rng := rand.New(rand.NewPCG(28, 8))
	order := rng.Perm(n)
	m := model{}
	worst, worstAt, builds := 0.0, 0, db.Metrics().TreeFilter.Rebuilds
	step := func(i int) treefilter.Filter {
		t.Helper()
		if err := db.WaitForCompactions(); err != nil {
			t.Fatal(err)
		}
		checkTreeFilter(t, db)
		db.manifestMu.Lock()
		f := db.tf.latest.Filter
		db.manifestMu.Unlock()
		return f
	}
	// A reader Gets written keys while the filter grows under it: a
	// present key must never be reported absent.
	var written atomic.Int64
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		defer close(readErr)
		rng := rand.New(rand.NewPCG(8, 28))
		for {
			select {
			case <-stop:
				return
			default:
			}
			w := written.Load()
			if w == 0 {
				continue
			}
			key := fmt.Sprintf("k%06d", order[rng.Int64N(w)])
			if v, err := db.Get([]byte(key)); err != nil || string(v) != key {
				readErr <- fmt.Errorf("Get(%s) during the load = %q, %v", key, v, err)
				return
			}
		}
	}()
	for i, k := range order {
		key := fmt.Sprintf("k%06d", k)
		if err := db.Put([]byte(key), []byte(key)); err != nil {
			t.Fatal(err)
		}
		m[key] = key
		written.Store(int64(i + 1))
		if i%300 != 299 {
			continue
		}
		f := step(i)
		if f.Entries() < 2000 {
			continue // the smallest filter (64 buckets) is no growth
		}
		bits := 16 * float64(f.Capacity()) / float64(f.Entries())
		if bits > worst {
			worst, worstAt = bits, i+1
		}
	}
	close(stop)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	grown := db.Metrics().TreeFilter.Rebuilds - builds
	t.Logf("%d keys: %d growth builds; worst %.2f bits per entry (after %d keys), compact %.2f: %.2fx", n, grown, worst, worstAt, compactBits, worst/compactBits)
	if grown < 3 {
		t.Fatalf("only %d growth builds: the load is too small to test growth", grown)
	}
	if worst > 1.25*compactBits {
		t.Fatalf("the filter grown during the load spent %.2f bits per entry after %d keys, %.2fx a compact build's %.2f (at most 1.25x)", worst, worstAt, worst/compactBits, compactBits)
	}

	// Shrink: delete 80% of the keys and compact them away.
	for _, k := range order[:n*4/5] {
		key := fmt.Sprintf("k%06d", k)
		if err := db.Delete([]byte(key)); err != nil {
			t.Fatal(err)
		}
		delete(m, key)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	f := step(n)
	if load := float64(f.Entries()) / float64(f.Capacity()); f.Entries() > n/4 || load < 0.5 {
		t.Fatalf("after deleting 80%% of %d keys: %d entries in %d slots (load %.2f): not shrunk", n, f.Entries(), f.Capacity(), load)
	}
	for k := range n + 100 {
		checkGet(t, db.Get, m, fmt.Sprintf("k%06d", k), "after the shrink")
	}
	// Reopen: the shrunk filter is saved, loaded, and still exact.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, "/db", opts)
	if tm := db.Metrics().TreeFilter; tm.Loaded != 1 || tm.Rebuilds != 0 {
		t.Fatalf("the shrunk filter was not saved and loaded: %+v", tm)
	}
	step(n)
	for k := range n + 100 {
		checkGet(t, db.Get, m, fmt.Sprintf("k%06d", k), "after the reopen")
	}
}
