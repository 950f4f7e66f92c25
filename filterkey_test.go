package bloomkv

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// rowOf is a ROW-style extractor for keys "row<NNN>:<column>".
func rowOf(key []byte) []byte {
	if i := bytes.IndexByte(key, ':'); i >= 0 {
		return key[:i]
	}
	return key
}

func TestFilterKeyExtractor(t *testing.T) {
	fs := vfs.NewMem()
	o := &Options{FS: fs, FilterKey: rowOf, FilterKeyName: "row-v1", BlockCacheSize: -1}
	db := mustOpen(t, "/db", o)
	for r := 0; r < 200; r += 2 { // even rows only
		for c := 0; c < 5; c++ {
			db.Put([]byte(fmt.Sprintf("row%03d:col%d", r, c)), []byte("v"))
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.FilterKeys != 100 {
		t.Fatalf("filter indexes %d keys, want 100 rows", m.FilterKeys)
	}
	get := func(key string) Metrics {
		t.Helper()
		before := db.Metrics()
		_, err := db.Get([]byte(key))
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return db.Metrics().Sub(before)
	}
	// Present row, present column: found, the filter said maybe.
	if d := get("row010:col3"); d.FilterNegatives != 0 || d.DataBlockReads == 0 {
		t.Fatalf("present key: %+v", d)
	}
	// Present row, absent column: the row filter cannot rule it out; the
	// table is read and the lookup counts as a false positive.
	if d := get("row010:col9"); d.FilterNegatives != 0 || d.FilterFalsePositives != 1 {
		t.Fatalf("absent column of a present row: negatives %d, false positives %d", d.FilterNegatives, d.FilterFalsePositives)
	}
	// Absent rows are mostly answered by the filter.
	negatives := 0
	for r := 1; r < 200; r += 2 {
		negatives += int(get(fmt.Sprintf("row%03d:col1", r)).FilterNegatives)
	}
	if negatives < 90 {
		t.Fatalf("only %d of 100 absent rows were filter negatives", negatives)
	}
	db.Close()

	// Reopened with another extractor name, the old tables' filters must not
	// be used (they would give false negatives), and every key is found.
	o2 := &Options{FS: fs, FilterKey: func(k []byte) []byte { return k[:3] }, FilterKeyName: "other"}
	db = mustOpen(t, "/db", o2)
	defer db.Close()
	before := db.Metrics()
	for r := 0; r < 200; r += 2 {
		if _, err := db.Get([]byte(fmt.Sprintf("row%03d:col4", r))); err != nil {
			t.Fatalf("row %d lost under another extractor: %v", r, err)
		}
	}
	if d := db.Metrics().Sub(before); d.FilterNegatives != 0 {
		t.Fatalf("a filter built with another extractor was consulted: %d negatives", d.FilterNegatives)
	}
}
