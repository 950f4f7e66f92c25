package sstable

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestGetAbsentKeyReadsOneBlock checks that a Get for an absent key that
// falls between two data blocks reads one block, not two: the next block
// can only hold the key when the separator's user key is the key itself.
func TestGetAbsentKeyReadsOneBlock(t *testing.T) {
	var es []refEntry
	for i := 0; i < 2000; i += 2 {
		es = append(es, refEntry{key: kv.MakeInternalKey([]byte(fmt.Sprintf("k%05d", i)), uint64(i+1), kv.KindSet), value: []byte("value-value")})
	}
	data, _ := buildTable(t, es, WriterOptions{BlockSize: 128, BloomBitsPerKey: 0})
	r := mustOpenBytes(t, data, ReaderOptions{})
	if r.Properties().NumDataBlocks < 20 {
		t.Fatalf("want many blocks, got %d", r.Properties().NumDataBlocks)
	}
	for i := 1; i < 2000; i += 2 {
		var st ReadStats
		if _, _, found, err := r.Get([]byte(fmt.Sprintf("k%05d", i)), kv.MaxSeq, false, &st); err != nil || found {
			t.Fatalf("k%05d: found=%v err=%v", i, found, err)
		}
		if n := st.DataBlockReads.Load(); n != 1 {
			t.Fatalf("k%05d: %d data blocks read, want 1", i, n)
		}
	}
}
