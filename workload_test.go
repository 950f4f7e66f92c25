package bloomkv

// A deterministic batch workload whose recovered state can be checked
// exactly, shared by the crash and fault tests.
//
// Batch id (1, 2, 3, ...) is a pure function of its id: it puts a marker key
// unique to the batch ("m<id>"), one to four puts, deletes or range deletes
// of keys from a small shared pool (values carry the id), and the shared
// key "last" = id.
// Because every batch leaves its marker, the markers present after a crash
// say which batches were applied; replaying exactly those batches, in id
// order, gives the only content the database may hold. A batch applied in
// part, a lost acknowledged batch, or a value that was never written all
// show up as a difference.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// genPoolKeys is the size of the shared key pool: small, so that keys are
// overwritten and deleted often and compaction has shadowed versions to drop.
const genPoolKeys = 200

type genOp struct {
	del        bool
	key, value string
	// end, when set, makes the op a range deletion of [key, end) (always
	// inside the pool: markers and "last" are never range-deleted).
	end string
}

func genMarkerKey(id int) string { return fmt.Sprintf("m%07d", id) }

// genBatchOps returns the operations of batch id, in order.
func genBatchOps(id int) []genOp {
	rng := rand.New(rand.NewPCG(uint64(id), 0x5eed))
	ops := []genOp{{key: genMarkerKey(id), value: strconv.Itoa(id)}}
	for j, n := 0, 1+rng.IntN(4); j < n; j++ {
		i := rng.IntN(genPoolKeys)
		k := fmt.Sprintf("k%03d", i)
		if rng.IntN(12) == 0 {
			ops = append(ops, genOp{key: k, end: fmt.Sprintf("k%03d", i+1+rng.IntN(8))})
			continue
		}
		if rng.IntN(5) == 0 {
			ops = append(ops, genOp{del: true, key: k})
			continue
		}
		v := fmt.Sprintf("v%d.%d.", id, j) + strings.Repeat("x", rng.IntN(80))
		ops = append(ops, genOp{key: k, value: v})
	}
	return append(ops, genOp{key: "last", value: strconv.Itoa(id)})
}

// genBatch returns batch id ready for DB.Write.
func genBatch(id int) *Batch {
	b := NewBatch()
	for _, op := range genBatchOps(id) {
		if op.end != "" {
			b.DeleteRange([]byte(op.key), []byte(op.end))
		} else if op.del {
			b.Delete([]byte(op.key))
		} else {
			b.Put([]byte(op.key), []byte(op.value))
		}
	}
	return b
}

// genModel returns the content after applying the given batches in order.
func genModel(ids []int) model {
	m := model{}
	for _, id := range ids {
		for _, op := range genBatchOps(id) {
			if op.end != "" {
				m.deleteRange(op.key, op.end)
			} else if op.del {
				delete(m, op.key)
			} else {
				m[op.key] = op.value
			}
		}
	}
	return m
}

// dbContents reads the whole database with an iterator, failing the test on
// an iterator error or keys out of order.
func dbContents(t testing.TB, db *DB) model {
	t.Helper()
	m := model{}
	it := db.NewIterator(nil)
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
			t.Fatalf("iterator keys out of order: %q then %q", prev, it.Key())
		}
		prev = append(prev[:0], it.Key()...)
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterating the whole database: %v", err)
	}
	return m
}

// verifyBatches checks that db holds exactly the batches whose markers it
// holds, applied whole and in id order; that every id for which mustHave is
// true is among them; and that no id above maxID is. It returns the ids
// applied, ascending.
func verifyBatches(t testing.TB, db *DB, maxID int, mustHave func(id int) bool) []int {
	t.Helper()
	got := dbContents(t, db)
	var applied []int
	for k, v := range got {
		if !strings.HasPrefix(k, "m") {
			continue
		}
		id, err := strconv.Atoi(k[1:])
		if err != nil || v != strconv.Itoa(id) {
			t.Fatalf("unexpected marker %q=%q", k, v)
		}
		if id < 1 || id > maxID {
			t.Fatalf("batch %d is present but only batches 1..%d were ever written", id, maxID)
		}
		applied = append(applied, id)
	}
	slices.Sort(applied)
	present := make(map[int]bool, len(applied))
	for _, id := range applied {
		present[id] = true
	}
	for id := 1; id <= maxID; id++ {
		if mustHave(id) && !present[id] {
			t.Fatalf("acknowledged batch %d is lost (batches present: %s)", id, describeIDs(applied))
		}
	}
	want := genModel(applied)
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("after batches %s: key %q = %q (present %v), want %q; a batch was applied in part or a write lost",
				describeIDs(applied), k, g, ok, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("after batches %s: key %q = %q was never written by them", describeIDs(applied), k, v)
		}
	}
	// Point reads must agree with the iterator (they take other paths:
	// filters, per-level search).
	for k, v := range want {
		if g, err := db.Get([]byte(k)); err != nil || string(g) != v {
			t.Fatalf("Get(%q) = %q, %v; iterator says %q", k, g, err, v)
		}
	}
	for _, k := range []string{"k-absent", genMarkerKey(maxID + 1)} {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) of a key never written: %v", k, err)
		}
	}
	return applied
}

// verifyPrefix is verifyBatches for a single writer whose batches are
// applied in id order: the batches present must be exactly 1..P, with
// minP <= P <= maxP. It returns P.
func verifyPrefix(t testing.TB, db *DB, minP, maxP int) int {
	t.Helper()
	applied := verifyBatches(t, db, maxP, func(id int) bool { return id <= minP })
	for i, id := range applied {
		if id != i+1 {
			t.Fatalf("batches present are not a prefix: %s", describeIDs(applied))
		}
	}
	return len(applied)
}

// describeIDs renders a sorted id list compactly: "1-40,42,44-50".
func describeIDs(ids []int) string {
	if len(ids) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", ids[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		}
		i = j + 1
	}
	return b.String()
}
