package bloomkv

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

func putRange(t *testing.T, db *DB, from, to int, value string) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%06d", i)), []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompactionRebuildsFilters writes tables without filters, reopens with
// filters on, and checks through Metrics that Gets for absent keys are only
// answered by filters after Compact rewrote the tables.
func TestCompactionRebuildsFilters(t *testing.T) {
	fs := vfs.NewMem()
	o := tinyOptions(fs)
	o.BloomBitsPerKey = -1
	db := mustOpen(t, "/db", o)
	putRange(t, db, 0, 2000, "value")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.WaitForCompactions()
	db.Close()

	o.BloomBitsPerKey = 10
	db = mustOpen(t, "/db", o)
	defer db.Close()
	missing := func() Metrics {
		before := db.Metrics()
		for i := 0; i < 2000; i++ {
			// Absent keys inside the key range.
			if _, err := db.Get([]byte(fmt.Sprintf("key%06d~", i))); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get: %v", err)
			}
		}
		return db.Metrics().Sub(before)
	}
	d := missing()
	if d.FilterNegatives != 0 || d.TablesProbed == 0 {
		t.Fatalf("before compaction: %d filter negatives over %d probes; want 0 over > 0", d.FilterNegatives, d.TablesProbed)
	}
	if d.DataBlockReads < d.TablesProbed {
		t.Fatalf("without filters every probe reads a block: %d blocks, %d probes", d.DataBlockReads, d.TablesProbed)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	d = missing()
	if d.FilterNegatives == 0 || d.FilterNegatives < d.TablesProbed*9/10 {
		t.Fatalf("after compaction: %d filter negatives over %d probes; want nearly all", d.FilterNegatives, d.TablesProbed)
	}
	m := db.Metrics()
	if m.FilterKeys != 2000 || m.FilterBytes == 0 {
		t.Fatalf("filters after compaction: %d keys, %d bytes", m.FilterKeys, m.FilterBytes)
	}
	if got := float64(m.FilterBytes*8) / float64(m.FilterKeys); got < 10 || got > 11 {
		t.Fatalf("bits per key spent %.2f, want about 10", got)
	}
}

// TestCompactNilNilLeavesOneSortedRun checks Compact's contract.
func TestCompactNilNilLeavesOneSortedRun(t *testing.T) {
	db := mustOpen(t, "/db", tinyOptions(vfs.NewMem()))
	defer db.Close()
	for round := 0; round < 5; round++ {
		putRange(t, db, round*100, round*100+1500, fmt.Sprintf("r%d", round))
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	levels := 0
	for _, l := range db.Metrics().Levels {
		if l.Files > 0 {
			levels++
		}
	}
	if levels != 1 || db.Metrics().Levels[0].Files != 0 {
		t.Fatalf("after Compact(nil, nil) %d levels hold files:\n%s", levels, db.Metrics())
	}
	for i := 0; i < 1900; i++ {
		// Round r wrote [r*100, r*100+1500); the last round covering i wins.
		want := fmt.Sprintf("r%d", min(4, i/100))
		if v, err := db.Get([]byte(fmt.Sprintf("key%06d", i))); err != nil || string(v) != want {
			t.Fatalf("key %d: %q %v, want %q", i, v, err, want)
		}
	}
}

// TestSpaceReclaimed deletes every key and checks that Compact(nil, nil)
// leaves no table and a small directory.
func TestSpaceReclaimed(t *testing.T) {
	dir := t.TempDir()
	o := &Options{MemtableSize: 64 << 10, TargetFileSize: 64 << 10, LBaseMaxBytes: 256 << 10}
	db := mustOpen(t, dir, o)
	big := strings.Repeat("x", 1000)
	putRange(t, db, 0, 5000, big)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	full := dirSize(t, dir)
	for i := 0; i < 5000; i++ {
		if err := db.Delete([]byte(fmt.Sprintf("key%06d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	db.Close() // the log of deletes is not needed after a reopen's flush
	db = mustOpen(t, dir, o)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	files := 0
	for _, l := range m.Levels {
		files += l.Files
	}
	it := db.NewIterator(nil)
	if it.First() {
		t.Fatalf("a deleted key is back: %q", it.Key())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// Measured closed: an open log is reserved ahead of its records
	// (DisableMmap), and Close cuts it back.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	empty := dirSize(t, dir)
	t.Logf("directory: %d bytes full, %d bytes after deleting everything", full, empty)
	if files != 0 || empty > 64<<10 || empty*20 > full {
		t.Fatalf("space not reclaimed: %d tables, %d bytes (was %d)", files, empty, full)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		fi, err := vfs.Default.Stat(vfs.Default.PathJoin(dir, name))
		if err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestReadersHeldAcrossCompactions keeps an iterator and a snapshot open
// while every key is overwritten or deleted and the tree is compacted: both
// must keep seeing their point in time.
func TestReadersHeldAcrossCompactions(t *testing.T) {
	db := mustOpen(t, "/db", tinyOptions(vfs.NewMem()))
	defer db.Close()
	putRange(t, db, 0, 1000, "old")
	db.Flush()
	it := db.NewIterator(nil)
	snap := db.NewSnapshot()
	defer snap.Close()
	for i := 0; i < 1000; i++ {
		k := []byte(fmt.Sprintf("key%06d", i))
		if i%2 == 0 {
			db.Delete(k)
		} else {
			db.Put(k, []byte("new"))
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	db.WaitForCompactions()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if string(it.Value()) != "old" {
			t.Fatalf("iterator sees %q=%q after compaction", it.Key(), it.Value())
		}
		n++
	}
	if err := it.Close(); err != nil || n != 1000 {
		t.Fatalf("iterator saw %d keys (err %v), want 1000", n, err)
	}
	for i := 0; i < 1000; i += 7 {
		v, err := snap.Get([]byte(fmt.Sprintf("key%06d", i)))
		if err != nil || string(v) != "old" {
			t.Fatalf("snapshot Get key %d = %q, %v", i, v, err)
		}
	}
	if _, err := db.Get([]byte("key000000")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("latest view: %v", err)
	}
}

// TestLeveledShape loads enough data for several levels and checks that a
// settled tree has every level within its target.
func TestLeveledShape(t *testing.T) {
	o := tinyOptions(vfs.NewMem())
	db := mustOpen(t, "/db", o)
	defer db.Close()
	for i := 0; i < 20000; i++ {
		k := fmt.Sprintf("key%06d", (i*7919)%20000)
		if err := db.Put([]byte(k), []byte(strings.Repeat("v", 20))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	t.Logf("\n%s", m)
	if m.Levels[0].Files >= o.L0CompactionThreshold {
		t.Fatalf("level 0 holds %d tables after settling", m.Levels[0].Files)
	}
	deep := 0
	target := float64(db.opts.LBaseMaxBytes)
	for l := 1; l < len(m.Levels)-1; l++ {
		if m.Levels[l].Files > 0 {
			deep = l
		}
		if float64(m.Levels[l].Bytes) >= target {
			t.Fatalf("level %d holds %d bytes, over its target %.0f", l, m.Levels[l].Bytes, target)
		}
		target *= float64(db.opts.LevelMultiplier)
	}
	if deep < 2 || m.Compactions == 0 || m.WriteAmplification() <= 1 {
		t.Fatalf("expected a multi-level tree with compactions: deepest %d, %d compactions, write-amp %.2f", deep, m.Compactions, m.WriteAmplification())
	}

	// Absent keys inside the key range: every level holding tables is
	// probed, and the per-level read counters add up to the totals.
	before := db.Metrics()
	for i := 0; i < 2000; i++ {
		if _, err := db.Get([]byte(fmt.Sprintf("key%06d~", i*10))); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	d := db.Metrics().Sub(before)
	var probed, negatives, fps, blocks uint64
	for l, lm := range d.Levels {
		if lm.Files > 0 && lm.TablesProbed == 0 {
			t.Errorf("level %d holds %d tables but was never probed", l, lm.Files)
		}
		if lm.FilterNegatives+lm.FilterFalsePositives != lm.TablesProbed || lm.DataBlockReads != lm.FilterFalsePositives {
			t.Errorf("level %d: %d probes = %d negatives + %d false positives? blocks %d", l, lm.TablesProbed, lm.FilterNegatives, lm.FilterFalsePositives, lm.DataBlockReads)
		}
		probed, negatives, fps, blocks = probed+lm.TablesProbed, negatives+lm.FilterNegatives, fps+lm.FilterFalsePositives, blocks+lm.DataBlockReads
	}
	if probed != d.TablesProbed || negatives != d.FilterNegatives || fps != d.FilterFalsePositives || blocks != d.DataBlockReads {
		t.Fatalf("per-level read counters do not add up to the totals: %d/%d/%d/%d vs %+v", probed, negatives, fps, blocks, d)
	}
}

func (db *DB) manifestNum() uint64 {
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()
	return db.versions.ManifestNum()
}

// TestWritesStallWhenLevel0IsFull drives writes faster than compaction
// with tiny level-0 limits and checks that stalls are counted and that
// level 0 never grows past the stop threshold.
func TestWritesStallWhenLevel0IsFull(t *testing.T) {
	o := tinyOptions(vfs.NewMem())
	o.L0CompactionThreshold, o.L0SlowdownWritesThreshold, o.L0StopWritesThreshold = 1, 1, 2
	db := mustOpen(t, "/db", o)
	defer db.Close()
	for i := 0; i < 6000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%06d", i*37%6000)), []byte(strings.Repeat("v", 50))); err != nil {
			t.Fatal(err)
		}
		if n := len(db.loadL0()); n > o.L0StopWritesThreshold+1 {
			t.Fatalf("level 0 grew to %d tables", n)
		}
	}
	m := db.Metrics()
	if m.WriteSlowdowns+m.WriteStalls == 0 {
		t.Fatalf("no write was delayed:\n%s", m)
	}
	t.Logf("slowdowns %d, stalls %d (%s)", m.WriteSlowdowns, m.WriteStalls, m.WriteStallTime)
}

func (db *DB) loadL0() []int {
	s, slot := db.loadReadState()
	defer s.unref(slot)
	return make([]int, len(s.v.Levels[0]))
}

// TestStaleFilterCompactionSkipsFreshTables: the in-place "stale
// filter" compaction of Compact merges the stale tables of the bottom level
// even when they are not adjacent; one output then spans a fresh table of the
// same level in between, the version is rejected, and Compact fails (every
// time: nothing changes between attempts).
func TestStaleFilterCompactionSkipsFreshTables(t *testing.T) {
	mem := vfs.NewMem()
	open := func(bits int) *DB {
		o := tinyOptions(mem)
		o.DisableAutomaticCompactions = true
		o.BloomBitsPerKey = bits
		return mustOpen(t, "/db", o)
	}
	fill := func(db *DB, prefix string) {
		for i := 0; i < 10; i++ {
			if err := db.Put([]byte(fmt.Sprintf("%s%02d", prefix, i)), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Compact([]byte(prefix), []byte(prefix+"\xff")); err != nil {
			t.Fatal(err)
		}
	}
	db := open(5)
	fill(db, "a") // level-1 table [a..], 5 bits/key
	db.Close()
	db = open(10)
	fill(db, "c") // level-1 table [c..], 10 bits/key
	db.Close()
	db = open(5)
	fill(db, "e") // level-1 table [e..], 5 bits/key
	db.Close()

	db = open(10) // [a..] and [e..] are now stale, [c..] is not
	defer db.Close()
	t.Logf("before: L1 has %d files", db.Metrics().Levels[1].Files)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatalf("BUG: Compact(nil, nil): %v", err)
	}
}
