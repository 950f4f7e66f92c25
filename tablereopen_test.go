package bloomkv

import (
	"fmt"
	"testing"
)

// TestTableReopensCounted: with fewer MaxOpenFiles than tables, Gets that
// reach closed tables re-open them; Metrics counts the re-opens, and the
// bytes they read are in the Gets' BytesRead even when every data block
// comes from the block cache. Only open tables' filters are resident.
func TestTableReopensCounted(t *testing.T) {
	o := levelsOptions()
	o.MaxOpenFiles = 10
	o.BlockCacheSize = 64 << 20 // every data block stays cached
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
	get() // every data block these Gets need is now cached
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
	t.Logf("%d tables, MaxOpenFiles 10: %d Gets, %d opens (%d re-opens, %d B), Gets' opens %d, Gets' bytes read %d, cache misses %d; filters %d B, %d B resident",
		files, d.Gets, d.TableOpens, d.TableReopens, d.TableOpenBytes, levelOpens, d.BytesRead, d.BlockCacheMisses, m.FilterBytes, m.FilterBytesResident)
	if files <= 10 {
		t.Fatalf("only %d tables: the test needs more than MaxOpenFiles", files)
	}
	if d.TableReopens == 0 || levelOpens == 0 || d.TableReopens > d.TableOpens {
		t.Fatalf("re-opens %d, opens %d, Gets' opens %d", d.TableReopens, d.TableOpens, levelOpens)
	}
	if d.BlockCacheMisses != 0 {
		t.Fatalf("%d block cache misses: the cache should hold every block", d.BlockCacheMisses)
	}
	// No data block came from a file: every byte the Gets read was a
	// table open's.
	if d.BytesRead == 0 || d.BytesRead > d.TableOpenBytes {
		t.Fatalf("Gets read %d B with no cache miss; the opens read %d B", d.BytesRead, d.TableOpenBytes)
	}
	if m.FilterBytesResident <= 0 || m.FilterBytesResident >= m.FilterBytes {
		t.Fatalf("resident filters %d B of %d B with %d of %d tables open", m.FilterBytesResident, m.FilterBytes, m.TableCacheOpen, files)
	}
}
