package sstable_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// Write a table of a few versions of some keys, open it, look keys up at two
// sequence numbers, and walk every entry in internal-key order.
func Example() {
	fs := vfs.NewMem()
	f, err := fs.Create("000001.sst")
	if err != nil {
		log.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{BloomBitsPerKey: 10})
	// Entries go in kv.CompareInternal order: user keys ascending, and the
	// versions of one key newest (highest sequence) first.
	entries := []struct {
		ukey  string
		seq   uint64
		kind  kv.Kind
		value string
	}{
		{"apple", 3, kv.KindSet, "green"},
		{"apple", 1, kv.KindSet, "red"},
		{"banana", 4, kv.KindDelete, ""},
		{"banana", 2, kv.KindSet, "yellow"},
		{"cherry", 5, kv.KindSet, "dark"},
	}
	for _, e := range entries {
		if err := w.Add(kv.MakeInternalKey([]byte(e.ukey), e.seq, e.kind), []byte(e.value)); err != nil {
			log.Fatal(err)
		}
	}
	meta, err := w.Finish() // syncs and closes f
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(meta.NumEntries, "entries from", kv.FormatInternalKey(meta.Smallest), "to", kv.FormatInternalKey(meta.Largest))

	// Open the table. The file number keys the block cache; without a
	// cache every data block is read from the file.
	rf, err := fs.Open("000001.sst")
	if err != nil {
		log.Fatal(err)
	}
	r, err := sstable.Open(rf, "000001.sst", 1, int64(meta.Size), sstable.ReaderOptions{
		Cache: sstable.NewBlockCache(1 << 20),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	// Get returns the newest version at or below the sequence asked; a
	// deletion is found too, with kind KindDelete. The value aliases a
	// block: copy it to keep it.
	var stats sstable.ReadStats
	for _, seq := range []uint64{2, 5} {
		for _, k := range []string{"apple", "banana"} {
			v, kind, found, err := r.Get([]byte(k), seq, true, &stats)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s at %d: %v %s %q\n", k, seq, found, kind, v)
		}
	}
	// A key the table does not hold is usually answered by the filter
	// alone, without reading a data block.
	_, _, found, err := r.Get([]byte("durian"), kv.MaxSeq, true, &stats)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("durian:", found, "filter negatives:", stats.FilterNegatives.Load())

	// The iterator is a kv.Iterator over internal keys.
	it := r.NewIter(true)
	for ok := it.First(); ok; ok = it.Next() {
		ukey, seq, kind, _ := kv.ParseInternalKey(it.Key())
		fmt.Printf("%s#%d,%s = %q\n", ukey, seq, kind, it.Value())
	}
	// SeekGE to a search key lands on the newest version visible at a
	// sequence number.
	if it.SeekGE(kv.MakeSearchKey([]byte("apple"), 2)) {
		fmt.Println("seek apple@2:", kv.FormatInternalKey(it.Key()))
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 5 entries from "apple"#3,SET to "cherry"#5,SET
	// apple at 2: true SET "red"
	// banana at 2: true SET "yellow"
	// apple at 5: true SET "green"
	// banana at 5: true DEL ""
	// durian: false filter negatives: 1
	// apple#3,SET = "green"
	// apple#1,SET = "red"
	// banana#4,DEL = ""
	// banana#2,SET = "yellow"
	// cherry#5,SET = "dark"
	// seek apple@2: "apple"#1,SET
}

// A table may carry range tombstones beside its point entries. Get and the
// iterators do not apply them: the reader returns them for the caller to
// consult, as a rangedel.List.
func ExampleWriter_SetRangeDels() {
	fs := vfs.NewMem()
	f, err := fs.Create("000002.sst")
	if err != nil {
		log.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	if err := w.Add(kv.MakeInternalKey([]byte("b"), 1, kv.KindSet), []byte("1")); err != nil {
		log.Fatal(err)
	}
	// [a, c)#2 deletes every version of every key in [a, c) below sequence 2.
	dels := rangedel.Fragment([]rangedel.Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 2}})
	w.SetRangeDels(dels.Spans())
	meta, err := w.Finish()
	if err != nil {
		log.Fatal(err)
	}

	rf, err := fs.Open("000002.sst")
	if err != nil {
		log.Fatal(err)
	}
	r, err := sstable.Open(rf, "000002.sst", 2, int64(meta.Size), sstable.ReaderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	_, _, found, err := r.Get([]byte("b"), 2, true, nil)
	if err != nil {
		log.Fatal(err)
	}
	rd := r.RangeDels()
	fmt.Println("point entry found:", found)
	fmt.Println("deleted as seen at 2:", rd.Covers([]byte("b"), 1, 2))
	fmt.Println("deleted as seen at 1:", rd.Covers([]byte("b"), 1, 1))
	smallest, largest, _, _ := r.Bounds()
	fmt.Println("bounds:", kv.FormatInternalKey(smallest), kv.FormatInternalKey(largest))
	// Output:
	// point entry found: true
	// deleted as seen at 2: true
	// deleted as seen at 1: false
	// bounds: "a"#2,RANGEDEL "c"#0,RANGEDEL
}
