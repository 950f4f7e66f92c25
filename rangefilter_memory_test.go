package bloomkv

import (
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestRangeFilterBytesResident (issue 27): the range filters of open
// tables are memory on the record. Metrics reports them, per level and in
// total; the figure is nothing before a reopened database has opened a
// table, grows as scans open them, equals what the open tables' readers
// hold once all are open, spends about the bits per key asked for, and
// counts only open tables when MaxOpenFiles keeps some closed. Without
// range filters it is 0.
func TestRangeFilterBytesResident(t *testing.T) {
	const n, bits = 60_000, 16
	fs := vfs.NewMem()
	o := levelsOptions()
	o.FS = fs
	o.RangeFilterBitsPerKey = bits
	db := writeLevelsTree(t, o, n)
	db.Close()

	o.DisableAutomaticCompactions = true
	o.MaxOpenFiles = 1000
	db = mustOpen(t, "/db", o)
	cold := db.Metrics()
	scanAll(t, db, n)
	warm := db.Metrics()
	var tables int
	var perLevel, want int64
	s, slot := db.loadReadState()
	for l, files := range s.v.Levels {
		tables += len(files)
		perLevel += warm.Levels[l].RangeFilterBytesResident
		for _, f := range files {
			r, release, err := findTable(db.tableCache, f)
			if err != nil {
				t.Fatal(err)
			}
			if r.RangeFilterMemory() == 0 {
				t.Errorf("table %d has no range filter", f.FileNum)
			}
			want += int64(r.RangeFilterMemory())
			release()
		}
	}
	s.unref(slot)
	db.Close()
	t.Logf("%d tables (%d open): range filters resident %d B cold, %d B warm, %.2f bits/key", tables, warm.TableCacheOpen,
		cold.RangeFilterBytesResident, warm.RangeFilterBytesResident, float64(8*warm.RangeFilterBytesResident)/n)
	if tables < 4 || warm.TableCacheOpen != tables {
		t.Fatalf("%d tables, %d open after a full scan: want several, all open", tables, warm.TableCacheOpen)
	}
	if cold.RangeFilterBytesResident >= warm.RangeFilterBytesResident {
		t.Fatalf("range filters resident %d B before any read, %d B after: want growth as tables open", cold.RangeFilterBytesResident, warm.RangeFilterBytesResident)
	}
	if warm.RangeFilterBytesResident != want || perLevel != want {
		t.Fatalf("range filters resident %d B (levels sum to %d B), the open readers hold %d B", warm.RangeFilterBytesResident, perLevel, want)
	}
	if got := float64(8*want) / n; got < 0.8*bits || got > 1.5*bits {
		t.Fatalf("range filters spend %.2f bits per key, asked for %d", got, bits)
	}
	if !strings.Contains(warm.String(), "range filters: ") {
		t.Fatalf("Metrics.String() does not show range-filter memory:\n%s", warm)
	}

	// Fewer open files than tables: only the open ones count.
	o.MaxOpenFiles = 10
	db = mustOpen(t, "/db", o)
	scanAll(t, db, n)
	few := db.Metrics()
	db.Close()
	if few.TableCacheOpen >= tables || few.RangeFilterBytesResident <= 0 || few.RangeFilterBytesResident >= want {
		t.Fatalf("%d of %d tables open: range filters resident %d B of %d B", few.TableCacheOpen, tables, few.RangeFilterBytesResident, want)
	}

	// A tree written without range filters holds none.
	o = levelsOptions()
	db = writeLevelsTree(t, o, n)
	defer db.Close()
	scanAll(t, db, n)
	if m := db.Metrics(); m.RangeFilterBytesResident != 0 || m.TableCacheOpen == 0 {
		t.Fatalf("without range filters: %d B resident with %d tables open", m.RangeFilterBytesResident, m.TableCacheOpen)
	}
}

// scanAll reads every key of writeLevelsTree's tree with one iterator,
// which opens every table.
func scanAll(t *testing.T, db *DB, n int) {
	t.Helper()
	it := db.NewIterator(nil)
	got := 0
	for it.First(); it.Valid(); it.Next() {
		got++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("scan read %d keys, want %d", got, n)
	}
}
