package sstable

import (
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
)

// lastByte is an extractor whose keys are not prefixes: sorted user keys
// give filter keys that repeat far apart and equal other whole keys.
func lastByte(k []byte) []byte {
	if len(k) == 0 {
		return k
	}
	return k[len(k)-1:]
}

// TestFuseFilterRepeatedKeys builds a fuse filter over whole keys and
// last-byte filter keys: single-byte keys equal filter keys, and each
// filter key comes back after other keys, so the builder sees the same
// hash many times, not next to each other. Construction must succeed and
// every whole key and filter key must probe present; Check must agree.
func TestFuseFilterRepeatedKeys(t *testing.T) {
	var es []refEntry
	seq := uint64(1)
	const alphabet = "abcdefghijklmnopqrstuvwxyz"
	for _, a := range alphabet {
		es = append(es, refEntry{kv.MakeInternalKey([]byte{byte(a)}, seq, kv.KindSet), []byte("v")})
		seq++
		for _, b := range alphabet {
			es = append(es, refEntry{kv.MakeInternalKey([]byte{byte(a), byte(b)}, seq, kv.KindSet), []byte("v")})
			seq++
		}
	}
	data, _ := buildTable(t, es, WriterOptions{BloomBitsPerKey: 10, FilterVariant: filter.VariantFuse,
		FilterKey: lastByte, FilterKeyName: "last", FilterWholeKey: true})
	r := mustOpenBytes(t, data, ReaderOptions{FilterKey: lastByte, FilterKeyName: "last"})
	blk, ok := r.Filter()
	if !ok || blk.Variant() != filter.VariantFuse {
		t.Fatalf("filter %v (present %v)", blk, ok)
	}
	for _, e := range es {
		uk := kv.UserKey(e.key)
		if !blk.MayContain(uk) || !blk.MayContain(lastByte(uk)) {
			t.Fatalf("%q: false negative", uk)
		}
		if _, _, found, err := r.Get(uk, kv.MaxSeq, true, nil); !found || err != nil {
			t.Fatalf("Get(%q): %v %v", uk, found, err)
		}
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}
