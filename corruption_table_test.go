package bloomkv

// Damaged SSTables: see corruption_test.go for the rules and helpers.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

const corruptKeys = 600

func corruptKey(i int) string { return fmt.Sprintf("key%04d", i) }
func corruptValue(i int) string {
	return fmt.Sprintf("val%04d-", i) + strings.Repeat(string(rune('a'+i%26)), 40)
}

// buildOneTableDB writes corruptKeys keys into a single level-0 table and
// closes the database (nothing left in logs).
func buildOneTableDB(t *testing.T, c Compression) (*vfs.MemFS, string) {
	t.Helper()
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs, Compression: c})
	for i := 0; i < corruptKeys; i++ {
		if err := db.Put([]byte(corruptKey(i)), []byte(corruptValue(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables := filesOfType(t, fs, base.FileTypeTable)
	if len(tables) != 1 {
		t.Fatalf("tables: %v", tables)
	}
	return fs, tables[0]
}

// tableLayout is where a table's parts lie, read from its footer.
type tableLayout struct {
	size                 int
	index, filter, props [2]int // offset, size (without trailer)
	dataEnd              int
}

const (
	tableFooterLen  = 64
	tableTrailerLen = 5
)

func parseTableLayout(t *testing.T, b []byte) tableLayout {
	t.Helper()
	if len(b) < tableFooterLen || string(b[len(b)-8:]) != "BLOOMSST" {
		t.Fatalf("not a table: %d bytes", len(b))
	}
	ft := b[len(b)-tableFooterLen:]
	handle := func(off int) [2]int {
		return [2]int{int(binary.LittleEndian.Uint64(ft[off:])), int(binary.LittleEndian.Uint64(ft[off+8:]))}
	}
	l := tableLayout{size: len(b), index: handle(0), filter: handle(16), props: handle(32)}
	l.dataEnd = min(l.index[0], l.props[0])
	if l.filter[1] == 0 {
		t.Fatal("table has no filter block")
	}
	l.dataEnd = min(l.dataEnd, l.filter[0])
	return l
}

// readAllAfterDamage opens the damaged database and reads every key with
// Get and with an iterator. Every answer must be the right value or an
// error wrapping ErrCorruption that names the table; a present key must
// never look absent. It returns how many Gets failed and whether the
// iteration failed.
func readAllAfterDamage(t *testing.T, fs vfs.FS, table, what string) (getErrs int, iterFailed bool) {
	t.Helper()
	db, err := Open("/db", &Options{FS: fs, BlockCacheSize: -1})
	if err != nil {
		// Tables are opened lazily, so Open itself has no reason to fail;
		// if it does, it must be for the damage.
		expectCorruption(t, err, table, what+": Open")
		return corruptKeys, true
	}
	defer db.Close()
	for i := 0; i < corruptKeys; i++ {
		v, err := db.Get([]byte(corruptKey(i)))
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: present key %s reported absent", what, corruptKey(i))
			}
			expectCorruption(t, err, table, what+": Get")
			if !strings.Contains(err.Error(), "offset") {
				t.Fatalf("%s: error %q names no offset", what, err)
			}
			getErrs++
			continue
		}
		if string(v) != corruptValue(i) {
			t.Fatalf("%s: Get(%s) = %q, want %q", what, corruptKey(i), v, corruptValue(i))
		}
	}
	// Absent keys inside the table's range: absent or an error, never a value.
	for i := 0; i < 50; i++ {
		k := corruptKey(i) + "-absent"
		if v, err := db.Get([]byte(k)); err == nil {
			t.Fatalf("%s: absent key %s has value %q", what, k, v)
		} else if !errors.Is(err, ErrNotFound) {
			expectCorruption(t, err, table, what+": Get absent")
		}
	}
	it := db.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := corruptKey(n); string(it.Key()) != want || string(it.Value()) != corruptValue(n) {
			t.Fatalf("%s: iterator at %q=%q, want %q", what, it.Key(), it.Value(), want)
		}
		n++
	}
	if err := it.Close(); err != nil {
		expectCorruption(t, err, table, what+": iterator")
		iterFailed = true
	} else if n != corruptKeys {
		t.Fatalf("%s: iterator ended cleanly after %d of %d keys", what, n, corruptKeys)
	}
	return getErrs, iterFailed
}

func TestCorruptionTable(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		fs, table := buildOneTableDB(t, c)
		l := parseTableLayout(t, readMemFile(t, fs, "/db/"+table))
		// Every part and its trailer; blockEnd is the trailer's first byte.
		type region struct {
			what string
			offs []int
			// every says every key's Get must fail (metadata read at
			// table open); otherwise some must.
			every bool
		}
		blockOffs := func(h [2]int) []int {
			off, size := h[0], h[1]
			return []int{off, off + size/3, off + size/2, off + size - 1, off + size, off + size + tableTrailerLen - 1}
		}
		footer := l.size - tableFooterLen
		regions := []region{
			{"footer", []int{footer, footer + 9, footer + 16, footer + 27, footer + 32, footer + 47, footer + 48, footer + 52, footer + 56, footer + 63}, true},
			{"index", blockOffs(l.index), true},
			{"properties", blockOffs(l.props), true},
			{"data", []int{0, 1, 7, 100, l.dataEnd / 3, l.dataEnd / 2, l.dataEnd - tableTrailerLen, l.dataEnd - 1}, false},
		}
		var filterOffs []int
		for off := l.filter[0]; off < l.filter[0]+l.filter[1]+tableTrailerLen; off += max(1, l.filter[1]/23) {
			filterOffs = append(filterOffs, off)
		}
		filterOffs = append(filterOffs, l.filter[0]+l.filter[1]+tableTrailerLen-1)
		// The filter is read at open; a damaged one fails every Get that
		// reaches the table rather than wrongly skipping it.
		regions = append(regions, region{"filter", filterOffs, true})

		for _, r := range regions {
			for _, off := range r.offs {
				what := fmt.Sprintf("%s/%s flip@%d", c, r.what, off)
				t.Run(what, func(t *testing.T) {
					getErrs, iterFailed := readAllAfterDamage(t, withDamage(t, fs, table, flipAt(off)), table, what)
					switch {
					case getErrs == 0:
						t.Fatalf("%s: the damage went unnoticed by every Get", what)
					case r.every && getErrs != corruptKeys:
						t.Fatalf("%s: only %d of %d Gets failed", what, getErrs, corruptKeys)
					case !iterFailed:
						t.Fatalf("%s: a full iteration did not notice the damage", what)
					}
				})
			}
		}
		for _, n := range []int{0, 1, tableFooterLen - 1, l.dataEnd / 2, l.dataEnd, l.filter[0] + 3, l.props[0] + 1, footer, footer + 30, l.size - 1} {
			what := fmt.Sprintf("%s/truncate@%d", c, n)
			t.Run(what, func(t *testing.T) {
				getErrs, iterFailed := readAllAfterDamage(t, withDamage(t, fs, table, truncateTo(n)), table, what)
				if getErrs != corruptKeys || !iterFailed {
					t.Fatalf("%s: %d of %d Gets failed, iteration failed %v", what, getErrs, corruptKeys, iterFailed)
				}
			})
		}
	}
}

// TestCorruptionFilterNeverHidesKeys flips every bit of the filter block's
// bit array in turn (and of its header and trailer): each flip either
// leaves a filter that still holds every key or -- the checksum's job --
// makes Gets fail; no present key may ever read as absent.
func TestCorruptionFilterNeverHidesKeys(t *testing.T) {
	fs, table := buildOneTableDB(t, NoCompression)
	l := parseTableLayout(t, readMemFile(t, fs, "/db/"+table))
	step := 1
	if testing.Short() {
		step = 7
	}
	for off := l.filter[0]; off < l.filter[0]+l.filter[1]+tableTrailerLen; off += step {
		for bit := 0; bit < 8; bit += 3 {
			what := fmt.Sprintf("filter byte %d bit %d", off, bit)
			img := withDamage(t, fs, table, func(b []byte) []byte { b[off] ^= 1 << bit; return b })
			db, err := Open("/db", &Options{FS: img, BlockCacheSize: -1})
			if err != nil {
				t.Fatalf("%s: Open: %v", what, err)
			}
			for i := 0; i < corruptKeys; i += 13 {
				v, err := db.Get([]byte(corruptKey(i)))
				if errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: present key %s reported absent", what, corruptKey(i))
				}
				if err != nil {
					expectCorruption(t, err, table, what)
				} else if string(v) != corruptValue(i) {
					t.Fatalf("%s: wrong value %q", what, v)
				}
			}
			db.Close()
		}
	}
}
