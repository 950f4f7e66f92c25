package bloomkv

// Issue 34: an IterOptions.Prefix that is not exactly a filter key must not
// let filters skip tables. Filters hold rows (and with FilterWholeKey whole
// keys); a "no" for "r036/c0" or "r02" says nothing about "r036/c05" or
// "r020/c03", so such a prefix reads every table its range overlaps, the
// same in every direction.

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// rowOfSlash is the issue's extractor: the row up to and including the
// first '/', or the whole key when it has none.
func rowOfSlash(k []byte) []byte {
	if i := bytes.IndexByte(k, '/'); i >= 0 {
		return k[:i+1]
	}
	return k
}

// prefixView reads everything an iterator with Prefix shows, through every
// way of positioning it: First+Next, Last+Prev, SeekGE(prefix)+Next,
// SeekLT(end of prefix)+Prev; and Get of each key in want.
type prefixView struct {
	first, last, seekGE, seekLT []string
}

func readPrefixView(t *testing.T, db *DB, prefix string) prefixView {
	t.Helper()
	it := db.NewIterator(&IterOptions{Prefix: []byte(prefix)})
	defer func() {
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	kv := func() string { return string(it.Key()) + "=" + string(it.Value()) }
	var v prefixView
	for ok := it.First(); ok; ok = it.Next() {
		v.first = append(v.first, kv())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		v.last = append([]string{kv()}, v.last...)
	}
	for ok := it.SeekGE([]byte(prefix)); ok; ok = it.Next() {
		v.seekGE = append(v.seekGE, kv())
	}
	for ok := it.SeekLT([]byte(prefix + "\xff")); ok; ok = it.Prev() {
		v.seekLT = append([]string{kv()}, v.seekLT...)
	}
	return v
}

func checkPrefixView(t *testing.T, db *DB, prefix string, want ...string) {
	t.Helper()
	v := readPrefixView(t, db, prefix)
	w := fmt.Sprint(want)
	for _, d := range []struct {
		how string
		got []string
	}{{"First/Next", v.first}, {"Last/Prev", v.last}, {"SeekGE/Next", v.seekGE}, {"SeekLT/Prev", v.seekLT}} {
		if fmt.Sprint(d.got) != w {
			t.Errorf("Prefix %q, %s: %v, want %v", prefix, d.how, d.got, want)
		}
	}
}

func TestPrefixNotFilterKeyIssue34(t *testing.T) {
	open := func(t *testing.T, mod func(*Options)) *DB {
		o := tinyOptions(vfs.NewMem())
		o.FilterKey, o.FilterKeyName = rowOfSlash, "row-slash"
		if mod != nil {
			mod(o)
		}
		db := mustOpen(t, "/db", o)
		t.Cleanup(func() { db.Close() })
		return db
	}
	put := func(t *testing.T, db *DB, k, v string) {
		t.Helper()
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// 1. Part of a row: the table's filter holds "r036/", not "r036/c0".
	t.Run("row-part-table", func(t *testing.T) {
		db := open(t, nil)
		put(t, db, "r036/c05", "v")
		must(t, db.Flush())
		checkPrefixView(t, db, "r036/c0", "r036/c05=v")
		checkPrefixView(t, db, "r036/c05", "r036/c05=v") // a whole key is not a row either
		checkPrefixView(t, db, "r036/", "r036/c05=v")
		checkPrefixView(t, db, "r037/")
	})
	t.Run("row-part-memtable", func(t *testing.T) {
		db := open(t, func(o *Options) { o.MemtableFilterRatio = 0.1 })
		put(t, db, "r036/c05", "v")
		checkPrefixView(t, db, "r036/c0", "r036/c05=v")
		checkPrefixView(t, db, "r036/", "r036/c05=v")
	})
	t.Run("row-part-whole-key-filters", func(t *testing.T) {
		// The filters hold "r036/c05" and "r036/" but still not "r036/c0";
		// and a whole key as Prefix also covers the keys that extend it.
		db := open(t, func(o *Options) { o.FilterWholeKey, o.MemtableFilterRatio = true, 0.1 })
		put(t, db, "r036/c05", "v")
		put(t, db, "r036/c05x", "w")
		checkPrefixView(t, db, "r036/c05", "r036/c05=v", "r036/c05x=w")
		must(t, db.Flush())
		checkPrefixView(t, db, "r036/c0", "r036/c05=v", "r036/c05x=w")
		checkPrefixView(t, db, "r036/c05", "r036/c05=v", "r036/c05x=w")
	})

	// 2. A deletion in a filtered table over a value in an unfiltered last
	// level: skipping the tombstone's table resurrects the value.
	t.Run("deleted-comes-back", func(t *testing.T) {
		db := open(t, func(o *Options) { o.FilterSkipLastLevel = true })
		put(t, db, "r020/c03", "old")
		must(t, db.Compact(nil, nil))
		must(t, db.Delete([]byte("r020/c03")))
		must(t, db.Flush())
		if _, err := db.Get([]byte("r020/c03")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get: %v, want ErrNotFound", err)
		}
		checkPrefixView(t, db, "r020/c0")
		checkPrefixView(t, db, "r02")
		checkPrefixView(t, db, "r020/")
	})

	// 3. A bare prefix, shorter than any row: rowOfSlash("r02") is "r02"
	// itself, yet no key starting with it has that row.
	t.Run("bare", func(t *testing.T) {
		db := open(t, func(o *Options) { o.MemtableFilterRatio = 0.1 })
		put(t, db, "r020/c03", "a")
		put(t, db, "r029/c01", "b")
		checkPrefixView(t, db, "r02", "r020/c03=a", "r029/c01=b")
		must(t, db.Flush())
		put(t, db, "r021/c00", "c")
		checkPrefixView(t, db, "r02", "r020/c03=a", "r021/c00=c", "r029/c01=b")
		must(t, db.Delete([]byte("r029/c01")))
		must(t, db.Flush())
		checkPrefixView(t, db, "r02", "r020/c03=a", "r021/c00=c")
	})
}

// TestPrefixFilterKeyStillSkipsTables: a prefix that is a row still skips
// the tables whose filter lacks it, in First and SeekGE (the fix must not
// turn every prefix into a full read).
func TestPrefixFilterKeyStillSkipsTables(t *testing.T) {
	o := tinyOptions(vfs.NewMem())
	o.FilterKey, o.FilterKeyName = rowOfSlash, "row-slash"
	db := mustOpen(t, "/db", o)
	defer db.Close()
	for row := 0; row < 200; row += 2 {
		for col := 0; col < 4; col++ {
			if err := db.Put([]byte(fmt.Sprintf("r%03d/c%02d", row, col)), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if row%20 == 0 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	count := func(prefix string) (n int, d Metrics) {
		before := db.Metrics()
		it := db.NewIterator(&IterOptions{Prefix: []byte(prefix)})
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return n, db.Metrics().Sub(before)
	}
	var negatives uint64
	for row := 1; row < 200; row += 10 {
		n, d := count(fmt.Sprintf("r%03d/", row))
		if n != 0 {
			t.Fatalf("absent row %d: %d keys", row, n)
		}
		negatives += d.IterFilterNegatives
		if d.IterPrefixSeeks != 1 {
			t.Fatalf("row prefix: %d prefix seeks, want 1", d.IterPrefixSeeks)
		}
		if n, _ := count(fmt.Sprintf("r%03d/", row-1)); n != 4 {
			t.Fatalf("present row %d: %d keys, want 4", row-1, n)
		}
		// Not a row: no filter consulted, every key found.
		n, d = count(fmt.Sprintf("r%03d/c0", row-1))
		if n != 4 || d.IterFilterNegatives != 0 || d.IterPrefixSeeks != 0 {
			t.Fatalf("row part of %d: %d keys, %d filter negatives, %d prefix seeks; want 4, 0, 0", row-1, n, d.IterFilterNegatives, d.IterPrefixSeeks)
		}
	}
	if negatives == 0 {
		t.Fatal("absent row prefixes skipped no table on its filter")
	}
}

// TestPrefixIsFilterKey pins which prefixes may consult filters, for the
// extractors the tests use and for ones that break on short keys.
func TestPrefixIsFilterKey(t *testing.T) {
	fixed4 := func(k []byte) []byte { return k[:4] } // panics on shorter keys
	for _, c := range []struct {
		fk     func([]byte) []byte
		name   string
		prefix string
		want   bool
	}{
		{nil, "none", "r036/", false},
		{rowOfSlash, "slash", "r036/", true},
		{rowOfSlash, "slash", "r036/c0", false},
		{rowOfSlash, "slash", "r036/c05", false},
		{rowOfSlash, "slash", "r03", false}, // rowOfSlash("r03") is "r03", but not of "r03\x00"
		{rowOfSlash, "slash", "", false},
		{rowPrefix6, "fixed6", "r0036|", true},
		{rowPrefix6, "fixed6", "r003", false},
		{rowPrefix6, "fixed6", "r0036|c", false},
		{fixed4, "fixed4", "ab", false},
		{fixed4, "fixed4", "abcd", true},
		{fixed4, "fixed4", "abcde", false},
	} {
		if got := prefixIsFilterKey(c.fk, []byte(c.prefix)); got != c.want {
			t.Errorf("%s: prefixIsFilterKey(%q) = %v, want %v", c.name, c.prefix, got, c.want)
		}
	}
}
