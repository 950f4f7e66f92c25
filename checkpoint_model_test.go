package bloomkv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// cpModelKeys is the key space of the checkpoint model test: small, so that
// range deletions, point deletions and puts keep hitting the same keys.
const cpModelKeys = 120

func cpModelKey(i int) string { return fmt.Sprintf("k%03d", i) }

// cpModelOps applies n random operations to db and m: puts, point
// deletions and range deletions (and, when flush, an occasional Flush so
// that some deletions land in tables and some stay in the memtable). With
// onlyRangeDels it applies nothing but range deletions.
func cpModelOps(t *testing.T, rng *rand.Rand, db *DB, m model, n int, flush, onlyRangeDels bool) {
	t.Helper()
	for range n {
		op := rng.IntN(10)
		if onlyRangeDels {
			op = 9
		}
		switch {
		case op < 5:
			k := cpModelKey(rng.IntN(cpModelKeys))
			v := fmt.Sprintf("v%d", rng.Int())
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			m[k] = v
		case op < 7:
			k := cpModelKey(rng.IntN(cpModelKeys))
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		case op < 8 && flush:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		default:
			lo := rng.IntN(cpModelKeys)
			hi := lo + 1 + rng.IntN(12)
			if err := db.DeleteRange([]byte(cpModelKey(lo)), []byte(cpModelKey(hi))); err != nil {
				t.Fatal(err)
			}
			for i := lo; i < hi; i++ {
				delete(m, cpModelKey(i))
			}
		}
	}
}

// checkCheckpointModel compares db with m key by key (Get of every key of
// the key space, present or not) and by a full scan.
func checkCheckpointModel(t *testing.T, what string, db *DB, m model) {
	t.Helper()
	for i := range cpModelKeys + 2 {
		k := cpModelKey(i)
		got, err := db.Get([]byte(k))
		want, ok := m[k]
		switch {
		case ok && (err != nil || string(got) != want):
			t.Fatalf("%s: Get(%s) = %q, %v; want %q", what, k, got, err, want)
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("%s: Get(%s) = %q, %v; want ErrNotFound (deleted)", what, k, got, err)
		}
	}
	if got := dbContents(t, db); len(got) != len(m) {
		t.Fatalf("%s: a scan finds %d keys, the model holds %d", what, len(got), len(m))
	} else {
		for k, v := range m {
			if got[k] != v {
				t.Fatalf("%s: scan: %s = %q, want %q", what, k, got[k], v)
			}
		}
	}
}

// TestCheckpointModel takes checkpoints of writable and read-only databases
// after random puts, point deletions and range deletions, and reopens each
// (read-only and writable) to compare it key by key with a model. On a
// read-only database the newest writes live only in the logs, so the
// checkpoint writes them to a table: their range deletions must go with
// them, also when the logs hold nothing but range deletions.
func TestCheckpointModel(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		for _, tail := range []string{"mixed", "rangedels-only"} {
			t.Run(fmt.Sprintf("readonly=%v/%s", readOnly, tail), func(t *testing.T) {
				for seed := range uint64(4) {
					testCheckpointModel(t, seed, readOnly, tail == "rangedels-only")
				}
			})
		}
	}
}

func testCheckpointModel(t *testing.T, seed uint64, readOnly, onlyRangeDels bool) {
	rng := rand.New(rand.NewPCG(seed, 33))
	mem := vfs.NewMem()
	db := mustOpen(t, "/db", tinyOptions(mem))
	m := model{}
	cpModelOps(t, rng, db, m, 600, true, false)
	if onlyRangeDels {
		// The newest memtable (and, closed, the newest log) holds range
		// deletions only.
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	cpModelOps(t, rng, db, m, 1+rng.IntN(25), false, onlyRangeDels)

	src := db
	if readOnly {
		// Close leaves the memtable's writes in the log; the read-only
		// open replays them into memory only.
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		o := tinyOptions(mem)
		o.ReadOnly = true
		src = mustOpen(t, "/db", o)
	}
	checkCheckpointModel(t, fmt.Sprintf("seed %d: source", seed), src, m)
	cp := fmt.Sprintf("/cp%d", seed)
	if err := src.Checkpoint(cp); err != nil {
		t.Fatalf("seed %d: Checkpoint: %v", seed, err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	ro := tinyOptions(mem)
	ro.ReadOnly = true
	rdb := mustOpen(t, cp, ro)
	checkCheckpointModel(t, fmt.Sprintf("seed %d: checkpoint opened read-only", seed), rdb, m)
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	// Writable, after a power loss right after Checkpoint returned: the
	// checkpoint was durable, and a writer compacts what it holds.
	wfs := mem.CrashClone()
	wdb := mustOpen(t, cp, tinyOptions(wfs))
	checkInvariants(t, wdb)
	checkCheckpointModel(t, fmt.Sprintf("seed %d: checkpoint opened writable", seed), wdb, m)
	if err := wdb.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkCheckpointModel(t, fmt.Sprintf("seed %d: checkpoint compacted", seed), wdb, m)
	if err := wdb.Close(); err != nil {
		t.Fatal(err)
	}
}
