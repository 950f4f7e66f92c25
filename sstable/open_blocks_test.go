package sstable

import (
	"bytes"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestTableCacheReopenReadsNothing: tables closed to stay within the table
// cache's capacity are opened again without reading their footer, index or
// filter from the file -- the blocks wait in the block cache -- and answer
// exactly as before, filters included. A deleted table's blocks go.
func TestTableCacheReopenReadsNothing(t *testing.T) {
	for _, mmap := range []bool{false, true} {
		dir := t.TempDir()
		const n = 12
		sizes, tables := writeTables(t, dir, n)
		bc := NewBlockCache(1 << 20)
		tc := NewTableCache(vfs.Default, dir, 4, ReaderOptions{Cache: bc, Mmap: mmap})
		round := func() {
			t.Helper()
			for i := 1; i <= n; i++ {
				r, release, err := tc.Find(Identity{FileNum: uint64(i), Size: sizes[i-1]})
				if err != nil {
					t.Fatal(err)
				}
				for j, e := range tables[i-1] {
					if j%7 != 0 {
						continue
					}
					v, _, found, err := r.Get(kv.UserKey(e.key), kv.MaxSeq, true, nil)
					if !found || err != nil || !bytes.Equal(v, e.value) {
						t.Fatalf("mmap=%v table %d: Get(%s) = %q %v %v", mmap, i, kv.UserKey(e.key), v, found, err)
					}
				}
				// An absent key the filter answers for.
				if _, _, found, err := r.Get([]byte(label("t%02d-absent", i)), kv.MaxSeq, true, nil); found || err != nil {
					t.Fatalf("table %d: absent key found=%v err=%v", i, found, err)
				}
				if !r.FilterUsable() {
					t.Fatalf("table %d: reopened without a usable filter", i)
				}
				release()
			}
		}
		round()
		opens, reopens, bytes1 := tc.OpenCounts()
		if opens != n || reopens != 0 || bytes1 == 0 {
			t.Fatalf("first round: %d opens, %d reopens, %d bytes", opens, reopens, bytes1)
		}
		round()
		round()
		_, reopens, bytes3 := tc.OpenCounts()
		if reopens < 2*(n-4) {
			t.Fatalf("three rounds over %d tables with room for 4 made only %d reopens", n, reopens)
		}
		if bytes3 != bytes1 {
			t.Fatalf("mmap=%v: %d reopens read %d bytes from the files, want 0", mmap, reopens, bytes3-bytes1)
		}
		if hits := bc.OpenBlockHits(); hits != reopens {
			t.Fatalf("mmap=%v: %d reopens, %d found their blocks cached", mmap, reopens, hits)
		}
		// A deleted table's kept blocks leave the cache with it.
		for i := 1; i <= n; i++ {
			tc.Evict(uint64(i))
		}
		if bc.Size() != 0 {
			t.Fatalf("mmap=%v: %d bytes cached after every table was evicted", mmap, bc.Size())
		}
		if err := tc.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReopenWithoutCacheReadsAgain: without a block cache there is nowhere
// to keep the blocks; each reopen reads them again.
func TestReopenWithoutCacheReadsAgain(t *testing.T) {
	dir := t.TempDir()
	sizes, _ := writeTables(t, dir, 6)
	tc := NewTableCache(vfs.Default, dir, 2, ReaderOptions{})
	defer tc.Close()
	for range 2 {
		for i := 1; i <= 6; i++ {
			_, release, err := tc.Find(Identity{FileNum: uint64(i), Size: sizes[i-1]})
			if err != nil {
				t.Fatal(err)
			}
			release()
		}
	}
	opens, reopens, bytes := tc.OpenCounts()
	if reopens == 0 || bytes < opens*footerLen {
		t.Fatalf("%d opens (%d reopens) read %d bytes", opens, reopens, bytes)
	}
}
