package bloomkv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// readCompactionTree builds a tree of several levels whose tables overlap
// level by level (levelsOptions, with read-triggered compactions as
// configured) and records the read-triggered compactions it runs.
func readCompactionTree(t *testing.T, disable bool, n int) (*DB, func() []CompactionInfo) {
	t.Helper()
	o := levelsOptions()
	o.DisableReadCompactions = disable
	o.IdleCompactionDelay = -1 // only reads may change the settled tree
	saved := readCompactionQuiet
	readCompactionQuiet = 0 // no wait for a write pause (TestReadCompactionWaitsForQuiet has one)
	t.Cleanup(func() { readCompactionQuiet = saved })
	var mu sync.Mutex
	var infos []CompactionInfo
	o.EventListener = &EventListener{CompactionEnd: func(i CompactionInfo) {
		if i.ReadTriggered {
			mu.Lock()
			infos = append(infos, i)
			mu.Unlock()
		}
	}}
	db := writeLevelsTree(t, o, n)
	// How much of the tree lies in two levels depends on when background
	// compactions ran (23 to 99 keys of 100 in runs of the same test), so
	// a tree with too little overlap gets another pass over part of its
	// keys, which lands in the shallow levels above the deep ones.
	deep := 0
	for round := 0; ; round++ {
		deep = deepKeys(db, n)
		t.Logf("%d of 100 keys lie in two levels or more", deep)
		if deep >= 10 || round == 3 {
			break
		}
		for i := 0; i < n; i += 3 {
			if err := db.Put(levelsKey(i), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
		settle(t, db)
	}
	if deep < 10 {
		t.Fatalf("%d of 100 keys lie in two levels or more, want 10 for the test: %v", deep, tableFiles(db))
	}
	return db, func() []CompactionInfo {
		mu.Lock()
		defer mu.Unlock()
		return append([]CompactionInfo(nil), infos...)
	}
}

// deepKeys counts, of 100 keys spread over writeLevelsTree's n, those in
// two levels or more.
func deepKeys(db *DB, n int) int {
	deep := 0
	for i := range 100 {
		if levelsCovering(db, levelsKey(i*n/100)) >= 2 {
			deep++
		}
	}
	return deep
}

// levelsKey is key i of writeLevelsTree (present for i < n).
func levelsKey(i int) []byte { return fmt.Appendf(nil, "key%07d", 2*i) }

// levelsCovering counts the levels (1 and deeper) with a table whose range
// holds key.
func levelsCovering(db *DB, key []byte) int {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := 0
	for l := 1; l < manifest.NumLevels; l++ {
		if findFile(db.versions.Current().Levels[l], key) != nil {
			n++
		}
	}
	return n
}

// tableFiles returns every level's table numbers.
func tableFiles(db *DB) [manifest.NumLevels][]uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out [manifest.NumLevels][]uint64
	for l, files := range db.versions.Current().Levels {
		for _, f := range files {
			out[l] = append(out[l], f.FileNum)
		}
	}
	return out
}

// seekRandomly runs seeks to present keys, each 100 on a new iterator (an
// iterator reads the version it was made on), until stop says so or the
// seeks run out, and returns how many it ran.
func seekRandomly(t *testing.T, db *DB, n, max int, stop func() bool) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	done := 0
	for done < max && !stop() {
		it := db.NewIterator(nil)
		for range 100 {
			k := levelsKey(rng.IntN(n))
			if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
				t.Fatalf("SeekGE(%s) landed on %q (valid %v, err %v)", k, it.Key(), it.Valid(), it.Error())
			}
			done++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return done
}

// checkLevelsTree reads every key of writeLevelsTree back, by Get and by
// a full scan.
func checkLevelsTree(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := range n {
		if v, err := db.Get(levelsKey(i)); err != nil || string(v) != "value" {
			t.Fatalf("Get(%s) = %q, %v", levelsKey(i), v, err)
		}
	}
	it := db.NewIterator(&IterOptions{UpperBound: []byte("kez")}) // the tree's keys only
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= n || !bytes.Equal(it.Key(), levelsKey(i)) {
			t.Fatalf("scan entry %d is %q", i, it.Key())
		}
		i++
	}
	if it.Error() != nil || i != n {
		t.Fatalf("scan saw %d keys of %d: %v", i, n, it.Error())
	}
}

// TestReadCompactionSeeks: seeks that keep reading a table above a deeper
// level's table for the same keys get the shallow table merged into the
// level below (one table of level L into L+1, reported as read-triggered
// and counted in Metrics), so that its keys are covered by one level
// fewer; every key stays readable.
func TestReadCompactionSeeks(t *testing.T) {
	const n = 60_000
	db, infos := readCompactionTree(t, false, n)
	defer db.Close()
	before := tableFiles(db)
	seeks := seekRandomly(t, db, n, 200_000, func() bool { return len(infos()) > 0 })
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	got := infos()
	if len(got) == 0 {
		t.Fatalf("%d seeks over a tree of levels %v started no read-triggered compaction", seeks, before)
	}
	t.Logf("%d seeks; first read-triggered compaction %d -> %d, tree %v -> %v", seeks, got[0].FromLevel, got[0].ToLevel, before, tableFiles(db))
	for _, c := range got {
		var from []TableInfo
		for _, in := range c.Inputs {
			if in.Level == c.FromLevel {
				from = append(from, in)
			}
		}
		if c.FromLevel < 1 || c.ToLevel != c.FromLevel+1 || len(from) != 1 || c.Err != nil {
			t.Fatalf("read-triggered compaction %+v: want one table of a level >= 1 into the next", c)
		}
	}
	if m := db.Metrics(); m.ReadCompactions < uint64(len(got)) || m.Compactions < m.ReadCompactions {
		t.Fatalf("metrics count %d read-triggered compactions (of %d), events %d", m.ReadCompactions, m.Compactions, len(got))
	}
	// The first merged table was in its level before and is gone from it.
	in := got[0].Inputs[0]
	if b, a := levelsOf(before, got[0].FromLevel, in.FileNum), tableFiles(db); b < 0 || containsFile(a[got[0].FromLevel], in.FileNum) {
		t.Fatalf("table %d: in level %d before (%d), still there after: %v", in.FileNum, got[0].FromLevel, b, a)
	}
	checkLevelsTree(t, db, n)
}

func levelsOf(files [manifest.NumLevels][]uint64, level int, num uint64) int {
	for i, f := range files[level] {
		if f == num {
			return i
		}
	}
	return -1
}

func containsFile(files []uint64, num uint64) bool {
	for _, f := range files {
		if f == num {
			return true
		}
	}
	return false
}

// TestReadCompactionDisabled: with DisableReadCompactions the same seeks,
// and Gets, leave the tree as the writes left it.
func TestReadCompactionDisabled(t *testing.T) {
	const n = 60_000
	db, infos := readCompactionTree(t, true, n)
	defer db.Close()
	before := tableFiles(db)
	seekRandomly(t, db, n, 30_000, func() bool { return false })
	for i := range n {
		db.Get(append(levelsKey(i), 'x')) // absent, between two present keys
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	if after := tableFiles(db); fmt.Sprint(after) != fmt.Sprint(before) || len(infos()) != 0 || db.Metrics().ReadCompactions != 0 {
		t.Fatalf("reads changed the tree: %v -> %v (%d read-triggered compactions)", before, after, len(infos()))
	}
}

// TestReadCompactionGets: Gets that consult a shallow table in vain on
// their way to a deeper one trigger it too, at 1/getChargeDivisor of a
// seek each: not after a seek's allowance of Gets, only after
// getChargeDivisor times as many.
func TestReadCompactionGets(t *testing.T) {
	const n = 60_000
	db, infos := readCompactionTree(t, false, n)
	defer db.Close()
	// The fewest Gets any table needs: a seek's allowance of a table of
	// the smallest size, times the divisor.
	allowance := minReadCharges
	rng := rand.New(rand.NewPCG(3, 3))
	absent := func() []byte { return append(levelsKey(rng.IntN(n)), 'x') }
	for range allowance {
		if _, err := db.Get(absent()); err != ErrNotFound {
			t.Fatalf("Get of an absent key: %v", err)
		}
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	if len(infos()) != 0 {
		t.Fatalf("%d Gets (a seek's allowance) started %d read-triggered compactions", allowance, len(infos()))
	}
	gets := 0
	for ; gets < 2_000_000 && len(infos()) == 0; gets++ {
		if _, err := db.Get(absent()); err != ErrNotFound {
			t.Fatalf("Get of an absent key: %v", err)
		}
	}
	if len(infos()) == 0 {
		t.Fatalf("%d Gets of absent keys started no read-triggered compaction", gets)
	}
	if gets < allowance*getChargeDivisor/2 {
		t.Fatalf("a read-triggered compaction after %d Gets, before %d", gets, allowance*getChargeDivisor/2)
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	checkLevelsTree(t, db, n)
}

// TestReadCompactionWaitsForQuiet: a table charged enough while writes go
// on is not merged until writes pause for readCompactionQuiet; then it is.
func TestReadCompactionWaitsForQuiet(t *testing.T) {
	const n = 60_000
	db, infos := readCompactionTree(t, false, n)
	defer db.Close()
	readCompactionQuiet = 300 * time.Millisecond
	// The test's writes must not change the tree: with the tree's 32 KiB
	// memtable they would fill it within a second, and the flushes and
	// size compactions that follow could merge away the very tables the
	// seeks queue (then nothing is left to merge once writes pause). A
	// memtable that outgrows anything the test writes keeps them in
	// memory; the write path reads the size under db.mu at each write.
	db.mu.Lock()
	db.opts.MemtableSize = 64 << 20
	db.mu.Unlock()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a write every millisecond, to a key outside the tree's range
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if err := db.Put(fmt.Appendf(nil, "zz%d", i%10), []byte("v")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seeks := seekRandomly(t, db, n, 30_000, func() bool { return false })
	db.mu.Lock()
	queued := len(db.mu.readCompactions)
	db.mu.Unlock()
	time.Sleep(2 * readCompactionQuiet) // still writing: nothing may start
	if queued == 0 || len(infos()) != 0 {
		close(stop)
		wg.Wait()
		t.Fatalf("after %d seeks while writing: %d tables queued (want some), %d read-triggered compactions (want none)", seeks, queued, len(infos()))
	}
	close(stop)
	wg.Wait()
	waitFor(t, "a read-triggered compaction once writes paused", func() bool { return len(infos()) > 0 })
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	checkLevelsTree(t, db, n)
}

// TestReadCompactionBudget: after a read-triggered compaction, the next
// waits for the byte budget, however many tables reads have queued.
func TestReadCompactionBudget(t *testing.T) {
	const n = 60_000
	saved := readCompactionBytesPerSecond
	readCompactionBytesPerSecond = 256 // a merge of a few KiB buys tens of seconds
	t.Cleanup(func() { readCompactionBytesPerSecond = saved })
	db, infos := readCompactionTree(t, false, n)
	defer db.Close()
	seeks := seekRandomly(t, db, n, 200_000, func() bool { return len(infos()) > 0 })
	if len(infos()) == 0 {
		t.Fatalf("%d seeks started no read-triggered compaction", seeks)
	}
	// Keep reading: tables queue up, and none may be merged before the
	// budget allows.
	seeks += seekRandomly(t, db, n, 100_000, func() bool { return false })
	time.Sleep(200 * time.Millisecond)
	db.mu.Lock()
	queued, notBefore := len(db.mu.readCompactions), db.mu.readQuiet.notBefore
	db.mu.Unlock()
	if got := len(infos()); got != 1 || queued == 0 {
		t.Fatalf("after %d seeks: %d read-triggered compactions (want 1 within the budget), %d tables queued (want some)", seeks, got, queued)
	}
	// The merge read its inputs' bytes: at 256 B/s that buys seconds per
	// KiB. Time has passed since it ended, so allow half.
	var read uint64
	for _, in := range infos()[0].Inputs {
		read += in.Size
	}
	bought := time.Duration(float64(read) / float64(readCompactionBytesPerSecond) * float64(time.Second))
	if wait := time.Until(notBefore); wait < bought/2 {
		t.Fatalf("the budget allows the next merge in %v, want most of the %v its %d bytes bought", wait, bought, read)
	}
	// Lifting the budget lets the queued tables go.
	db.mu.Lock()
	readCompactionBytesPerSecond = 0
	db.mu.readQuiet.notBefore = time.Time{}
	db.mu.bgCond.Broadcast()
	db.mu.Unlock()
	// The queued tables may all have been merged away by the first
	// compaction (a queued table of the level it wrote into is dropped
	// from the queue) or declined by the picker, so reads go on queueing
	// tables while the test waits.
	deadline := time.Now().Add(time.Minute)
	for len(infos()) < 2 && time.Now().Before(deadline) {
		seekRandomly(t, db, n, 10_000, func() bool { return len(infos()) > 1 })
		time.Sleep(10 * time.Millisecond)
	}
	if len(infos()) < 2 {
		t.Fatalf("no second read-triggered compaction within a minute of reads once the budget allowed it (%d tables queued before)", queued)
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	checkLevelsTree(t, db, n)
}
