//go:build linux

package bloomkv

// MaxOpenFiles as a real bound on file descriptors (issue 10 item 4).
//
// TestFdLimit builds a database of well over a hundred tables on several
// levels, then re-executes the test binary as a child (TestFdLimitChild,
// selected with -test.run and told the directory by BLOOMKV_FDLIMIT_CHILD)
// that lowers its soft RLIMIT_NOFILE to 256, so the limit touches no other
// test. The child opens the database with MaxOpenFiles 50, holds 1,000
// iterators at spread-out keys, each a few steps in, and reads
// /proc/self/fd: no table may have two descriptors, and the tables with a
// descriptor may number no more than max(MaxOpenFiles, tables the iterators
// pin). After the iterators close, at most MaxOpenFiles tables stay open.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

const (
	fdLimitChildEnv = "BLOOMKV_FDLIMIT_CHILD"
	fdLimitKeys     = 9_000
	fdLimitIters    = 1_000
	fdLimitMaxOpen  = 50
	fdLimitRlimit   = 256
)

func fdLimitKey(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

// fdLimitOptions make many small tables; MaxOpenFiles is set by the caller.
func fdLimitOptions() *Options {
	return &Options{
		FS:                    vfs.Default,
		MemtableSize:          32 << 10,
		BlockSize:             512,
		L0CompactionThreshold: 2,
		// Let writes run ahead of compaction rather than wait for it.
		L0SlowdownWritesThreshold: 100,
		L0StopWritesThreshold:     200,
		MaxImmutableMemtables:     8,
		LBaseMaxBytes:             24 << 10,
		TargetFileSize:            6 << 10,
		TargetFileSizeMultiplier:  1,    // many small tables on every level
		StaticLevelBytes:          true, // tables on three levels or more
		MaxOpenFiles:              fdLimitMaxOpen,
	}
}

func TestFdLimit(t *testing.T) {
	// This test is about descriptors, and checking the whole tree after
	// every one of hundreds of compactions would take most of its time.
	defer func(on bool) { invariantChecks = on }(invariantChecks)
	invariantChecks = false
	dir := t.TempDir()
	db := mustOpen(t, dir, fdLimitOptions())
	rng := rand.New(rand.NewPCG(10, 4))
	value := make([]byte, 96)
	for _, i := range rng.Perm(fdLimitKeys) {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		if err := db.Put(fdLimitKey(i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompactions(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	tables, levels := 0, 0
	var shape []string
	for l, lm := range m.Levels {
		tables += lm.Files
		if lm.Files > 0 {
			levels++
			shape = append(shape, fmt.Sprintf("L%d:%d", l, lm.Files))
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tables: %s; stalls %d (%v), slowdowns %d, flushes %d, compactions %d", tables, strings.Join(shape, " "), m.WriteStalls, m.WriteStallTime, m.WriteSlowdowns, m.Flushes, m.Compactions)
	if tables < 100 || levels < 3 {
		t.Fatalf("want 100+ tables on 3+ levels, built %s", strings.Join(shape, " "))
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestFdLimitChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fdLimitChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	if err != nil {
		t.Fatalf("child failed: %v", err)
	}
	if !bytes.Contains(out, []byte("fdlimit: child done")) {
		t.Fatal("the child did not run its checks")
	}
}

// TestFdLimitChild is the child's body; it does nothing unless started by
// TestFdLimit.
func TestFdLimitChild(t *testing.T) {
	dir := os.Getenv(fdLimitChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestFdLimit")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(lim.Cur, fdLimitRlimit)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	o := fdLimitOptions()
	o.DisableAutomaticCompactions = true // the tree must stand still
	db := mustOpen(t, dir, o)
	defer db.Close()
	// Metrics opens each table once to read its filter's size; do it now so
	// the Metrics call below only reads counters.
	db.Metrics()

	iters := make([]*Iterator, fdLimitIters)
	defer func() {
		for _, it := range iters {
			if it != nil {
				it.Close()
			}
		}
	}()
	// Positions spread over the key space, visited in random order, so the
	// cache meets tables again that it met long before.
	const steps = 3
	order := rand.New(rand.NewPCG(10, 4)).Perm(fdLimitIters)
	for i := range iters {
		it := db.NewIterator(nil)
		iters[i] = it
		k := order[i] * (fdLimitKeys - steps - 1) / fdLimitIters
		ok := it.SeekGE(fdLimitKey(k))
		for s := 0; ok && s < steps; s++ {
			ok = it.Next()
		}
		if err := it.Error(); err != nil {
			t.Fatalf("iterator %d: %v", i, err)
		}
		if want := fdLimitKey(k + steps); !ok || !bytes.Equal(it.Key(), want) {
			t.Fatalf("iterator %d at %q (valid %v), want %q", i, it.Key(), ok, want)
		}
	}

	check := func(what string, live []*Iterator) {
		pinned := pinnedTables(live)
		open := openTableFds(t)
		var total, dup int
		for num, n := range open {
			total += n
			if n > 1 {
				dup++
				t.Errorf("%s: table %06d has %d descriptors", what, num, n)
			}
		}
		for num := range pinned {
			if open[num] == 0 {
				t.Errorf("%s: table %06d is pinned by an iterator but has no descriptor", what, num)
			}
		}
		bound := max(fdLimitMaxOpen, len(pinned))
		fmt.Printf("fdlimit: %s: %d table descriptors over %d tables (%d with more than one); %d tables pinned, bound %d\n",
			what, total, len(open), dup, len(pinned), bound)
		if total > bound {
			t.Errorf("%s: %d table descriptors open, want <= max(MaxOpenFiles %d, %d pinned)", what, total, fdLimitMaxOpen, len(pinned))
		}
		if n := db.Metrics().TableCacheOpen; n != total {
			t.Errorf("%s: Metrics.TableCacheOpen = %d, /proc/self/fd shows %d", what, n, total)
		}
	}
	check(fmt.Sprintf("%d iterators live", len(iters)), iters)

	// Close the iterators past the first third of the keys: the tables
	// only they pinned must close as they are released, down to the bound.
	var kept []*Iterator
	for i, it := range iters {
		if it.Valid() && bytes.Compare(it.Key(), fdLimitKey(fdLimitKeys/3)) < 0 {
			kept = append(kept, it)
			continue
		}
		if err := it.Close(); err != nil {
			t.Fatalf("iterator %d: Close: %v", i, err)
		}
		iters[i] = nil
	}
	check(fmt.Sprintf("%d iterators live", len(kept)), kept)

	for i, it := range iters {
		if it == nil {
			continue
		}
		if err := it.Close(); err != nil {
			t.Fatalf("iterator %d: Close: %v", i, err)
		}
		iters[i] = nil
	}
	check("iterators closed", nil)
	if !t.Failed() {
		fmt.Printf("fdlimit: child done\n")
	}
}

// pinnedTables returns the tables the forward iterators hold open. Every
// key was written once and is visible, so each level's iterator rests on
// the first entry of its level at or after the iterator's key: in a sorted
// level, the first table whose largest key is not smaller; every level-0
// table (its own level) whose largest key is not smaller.
func pinnedTables(iters []*Iterator) map[uint64]bool {
	pinned := map[uint64]bool{}
	for _, it := range iters {
		if !it.Valid() {
			continue
		}
		key := it.Key()
		levels := it.state.v.Levels
		for _, f := range levels[0] {
			if bytes.Compare(base.UserKey(f.Largest), key) >= 0 {
				pinned[f.FileNum] = true
			}
		}
		for _, files := range levels[1:] {
			i := sort.Search(len(files), func(i int) bool {
				return bytes.Compare(base.UserKey(files[i].Largest), key) >= 0
			})
			if i < len(files) {
				pinned[files[i].FileNum] = true
			}
		}
	}
	return pinned
}

// openTableFds counts this process's descriptors per table file.
func openTableFds(t *testing.T) map[uint64]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	open := map[uint64]int{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the descriptor ReadDir used, already closed
		}
		typ, num, ok := base.ParseFilename(filepath.Base(target))
		if ok && typ == base.FileTypeTable {
			open[num]++
		}
	}
	return open
}
