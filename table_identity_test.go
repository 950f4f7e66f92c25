package bloomkv

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// twoTableDB writes keys 0-99 into one table and 100-199 into another with
// identical options, deterministically, and closes the database.
func twoTableDB(t *testing.T) (*vfs.MemFS, []string) {
	t.Helper()
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs, DisableAutomaticCompactions: true})
	for part := 0; part < 2; part++ {
		for i := part * 100; i < part*100+100; i++ {
			if err := db.Put([]byte(fmt.Sprintf("key%04d", i)), []byte("value")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables := filesOfType(t, fs, base.FileTypeTable)
	slices.Sort(tables)
	if len(tables) != 2 {
		t.Fatalf("tables: %v", tables)
	}
	return fs, tables
}

// expectTableCorruption opens img and reads every key: each read of the
// replaced table must fail with ErrCorruption naming it; nothing may return
// wrong data.
func expectTableCorruption(t *testing.T, img vfs.FS, table, what string) {
	t.Helper()
	db, err := Open("/db", &Options{FS: img})
	if err != nil {
		expectCorruption(t, err, table, what+": Open")
		return
	}
	defer db.Close()
	failed := 0
	for i := 0; i < 200; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("key%04d", i)))
		switch {
		case err != nil:
			expectCorruption(t, err, table, what+": Get")
			failed++
		case string(v) != "value":
			t.Fatalf("%s: wrong value %q", what, v)
		}
	}
	if failed == 0 {
		t.Fatalf("%s: every Get succeeded; the replaced table went unnoticed", what)
	}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	expectCorruption(t, it.Close(), table, what+": iterator")
}

// TestTableReplacedByAnotherTable: a table file replaced by another valid
// table -- one of the same database, or the same-numbered table of another
// database with the same contents -- reads without a checksum error, and
// must still be reported as corruption, never served as stale data.
func TestTableReplacedByAnotherTable(t *testing.T) {
	fs, tables := twoTableDB(t)
	img := fs.ProcessCrashClone()
	replaceFile(t, img, "/db/"+tables[1], readMemFile(t, fs, "/db/"+tables[0]))
	expectTableCorruption(t, img, tables[1], "a sibling table in its place")

	// The other database writes the same keys, sequences and file numbers:
	// its table differs only in the database identity.
	other, otherTables := twoTableDB(t)
	if !slices.Equal(tables, otherTables) {
		t.Fatalf("file numbers differ: %v %v", tables, otherTables)
	}
	theirs := readMemFile(t, other, "/db/"+tables[0])
	if len(theirs) != len(readMemFile(t, fs, "/db/"+tables[0])) {
		t.Fatal("the other database's table is not the same size")
	}
	img = fs.ProcessCrashClone()
	replaceFile(t, img, "/db/"+tables[0], theirs)
	expectTableCorruption(t, img, tables[0], "another database's table of the same size")
}
