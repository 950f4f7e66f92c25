package bloomkv

import (
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// TestFilterWholeKeyAndRows: with FilterWholeKey, a table's filter holds
// whole keys and rows: a Get for an absent column of a present row is a
// filter negative (row filters alone must read the table), prefix seeks
// for absent rows still skip tables, and nothing present is ever missed.
// Compact rewrites tables whose filters hold other contents.
func TestFilterWholeKeyAndRows(t *testing.T) {
	fs := vfs.NewMem()
	o := tinyOptions(fs)
	o.FilterKey, o.FilterKeyName = rowPrefix6, "row6"
	db := mustOpen(t, "/db", o)
	for row := 0; row < 600; row += 2 {
		for col := 0; col < 6; col += 2 { // odd columns are absent
			if err := db.Put([]byte(cellKey(row, col)), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	costs := func(db *DB) (colNeg, rowNeg uint64) {
		before := db.Metrics()
		for row := 0; row < 600; row += 2 {
			for col := 0; col < 6; col++ {
				_, err := db.Get([]byte(cellKey(row, col)))
				if col%2 == 0 && err != nil {
					t.Fatalf("present %s: %v", cellKey(row, col), err)
				}
				if col%2 == 1 && err != ErrNotFound {
					t.Fatalf("absent %s: %v", cellKey(row, col), err)
				}
			}
		}
		mid := db.Metrics()
		it := db.NewIterator(nil)
		for row := 1; row < 600; row += 2 {
			if it.SeekPrefixGE([]byte(cellKey(row, 0))) {
				t.Fatalf("absent row %d found %q", row, it.Key())
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		after := db.Metrics()
		return mid.Sub(before).FilterNegatives, after.Sub(mid).IterFilterNegatives
	}
	rowsOnlyCol, rowsOnlyRow := costs(db)
	db.Close()
	o.FilterWholeKey = true
	db = mustOpen(t, "/db", o)
	if err := db.Compact(nil, nil); err != nil { // rewrites every table: the filter contents changed
		t.Fatal(err)
	}
	bothCol, bothRow := costs(db)
	t.Logf("filter negatives for 900 absent columns: rows only %d, whole keys and rows %d; absent-row seeks: %d and %d",
		rowsOnlyCol, bothCol, rowsOnlyRow, bothRow)
	if bothCol < 9*900/10 || rowsOnlyCol > bothCol/10 {
		t.Fatalf("absent columns: %d filter negatives with whole keys and rows, %d with rows only", bothCol, rowsOnlyCol)
	}
	if bothRow < 9*rowsOnlyRow/10 || bothRow == 0 {
		t.Fatalf("absent rows: %d filter negatives with both, %d with rows only", bothRow, rowsOnlyRow)
	}
	// A reader that lost the extractor still uses the whole keys for Get.
	db.Close()
	o.FilterKey, o.FilterKeyName = nil, ""
	db = mustOpen(t, "/db", o)
	before := db.Metrics()
	for row := 0; row < 600; row += 2 {
		if _, err := db.Get([]byte(cellKey(row, 1))); err != ErrNotFound {
			t.Fatal(err)
		}
	}
	if neg := db.Metrics().Sub(before).FilterNegatives; neg < 9*300/10 {
		t.Fatalf("without the extractor, %d filter negatives for 300 absent keys", neg)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

}
