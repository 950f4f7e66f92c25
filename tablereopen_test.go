package bloomkv

import (
	"fmt"
	"testing"
)

// TestTableReopensCounted: with fewer MaxOpenFiles than tables, Gets that
// reach closed tables re-open them, and Metrics counts the re-opens. With a
// block cache that holds what the tables' opens read (footer, index,
// filter), a re-open reads nothing from the file: once the blocks are
// cached, Gets over a tree of more tables than MaxOpenFiles read nothing at
// all. With a cache too small to keep them, re-opens read them again, and
// those bytes are in the Gets' BytesRead. Only open tables' filters are
// resident.
func TestTableReopensCounted(t *testing.T) {
	for _, bigCache := range []bool{true, false} {
		t.Run(fmt.Sprintf("bigCache=%v", bigCache), func(t *testing.T) {
			o := levelsOptions()
			o.MaxOpenFiles = 10
			o.BlockCacheSize = 64 << 20 // every data block and every closed table's open blocks stay cached
			if !bigCache {
				o.BlockCacheSize = 16 << 10 // less than the closed tables' open blocks, even with the metadata share
			}
			const n = 60_000
			db := writeLevelsTree(t, o, n)
			defer db.Close()
			get := func() {
				for i := 0; i < n; i += 97 {
					if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 2*i))); err != nil {
						t.Fatal(err)
					}
				}
			}
			get() // every data block these Gets need is now cached (with the big cache)
			before := db.Metrics()
			get()
			m := db.Metrics()
			d := m.Sub(before)
			files := 0
			var levelOpens uint64
			for _, l := range d.Levels {
				files += l.Files
				levelOpens += l.TableOpens
			}
			t.Logf("%d tables, MaxOpenFiles 10: %d Gets, %d opens (%d re-opens, %d from the cache, %d B read), Gets' opens %d, Gets' bytes read %d, cache misses %d; filters %d B, %d B resident",
				files, d.Gets, d.TableOpens, d.TableReopens, d.TableReopensCached, d.TableOpenBytes, levelOpens, d.BytesRead, d.BlockCacheMisses, m.FilterBytes, m.FilterBytesResident)
			if files <= 10 {
				t.Fatalf("only %d tables: the test needs more than MaxOpenFiles", files)
			}
			if d.TableReopens == 0 || levelOpens == 0 || d.TableReopens > d.TableOpens {
				t.Fatalf("re-opens %d, opens %d, Gets' opens %d", d.TableReopens, d.TableOpens, levelOpens)
			}
			if m.IndexBytesResident <= 0 {
				t.Fatalf("IndexBytesResident %d with %d tables open", m.IndexBytesResident, m.TableCacheOpen)
			}
			if m.FilterBytesResident <= 0 || m.FilterBytesResident >= m.FilterBytes {
				t.Fatalf("resident filters %d B of %d B with %d of %d tables open", m.FilterBytesResident, m.FilterBytes, m.TableCacheOpen, files)
			}
			if bigCache {
				if d.BlockCacheMisses != 0 {
					t.Fatalf("%d block cache misses: the cache should hold every block", d.BlockCacheMisses)
				}
				// No re-open read its footer, index or filter again.
				if d.TableReopensCached != d.TableReopens || d.TableOpenBytes != 0 || d.BytesRead != 0 {
					t.Fatalf("%d re-opens, %d found their blocks cached; the opens read %d B, the Gets %d B (want 0)",
						d.TableReopens, d.TableReopensCached, d.TableOpenBytes, d.BytesRead)
				}
				return
			}
			// A cache too small for the closed tables' blocks: re-opens read
			// them again, and the Gets' bytes include them.
			if d.TableOpenBytes == 0 || d.BytesRead < d.TableOpenBytes*levelOpens/d.TableOpens {
				t.Fatalf("small cache: the opens read %d B, the Gets %d B", d.TableOpenBytes, d.BytesRead)
			}
		})
	}
}
