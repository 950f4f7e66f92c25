package bloomkv_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/bloomkv/bloomkv"
)

// The README's example: open, write, batch, read, iterate a range.
func Example() {
	dir, err := os.MkdirTemp("", "bloomkv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := bloomkv.Open(dir, &bloomkv.Options{BloomBitsPerKey: 10})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Put([]byte("user:1"), []byte("ada")); err != nil {
		log.Fatal(err)
	}
	b := bloomkv.NewBatch() // atomic: all or nothing, also across a crash
	b.Put([]byte("user:2"), []byte("grace"))
	b.Put([]byte("user:3"), []byte("barbara"))
	b.Delete([]byte("user:1"))
	if err := db.Write(b); err != nil {
		log.Fatal(err)
	}

	if _, err := db.Get([]byte("user:1")); errors.Is(err, bloomkv.ErrNotFound) {
		fmt.Println("user:1 is gone")
	}

	it := db.NewIterator(&bloomkv.IterOptions{LowerBound: []byte("user:"), UpperBound: []byte("user;")})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// user:1 is gone
	// user:2 = grace
	// user:3 = barbara
}

// Snapshots read a fixed point in time while the database changes.
func ExampleDB_NewSnapshot() {
	dir, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(dir)
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	db.Put([]byte("k"), []byte("before"))
	snap := db.NewSnapshot()
	defer snap.Close()
	db.Put([]byte("k"), []byte("after"))

	old, _ := snap.Get([]byte("k"))
	cur, _ := db.Get([]byte("k"))
	fmt.Printf("%s %s\n", old, cur)
	// Output: before after
}

// Metrics show what reads cost; Sub isolates one workload.
func ExampleDB_Metrics() {
	dir, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(dir)
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 1000; i++ {
		db.Put([]byte(fmt.Sprintf("key%04d", 2*i)), []byte("v"))
	}
	db.Flush() // into an SSTable with a bloom filter

	before := db.Metrics()
	for i := 0; i < 1000; i++ {
		db.Get([]byte(fmt.Sprintf("key%04d", 2*i+1))) // absent keys inside the table's range
	}
	d := db.Metrics().Sub(before)
	fmt.Printf("tables probed: %d (key1999 lies past the table's last key)\n", d.TablesProbed)
	fmt.Println("over 97% skipped by the filter:", d.FilterNegatives*100 > d.TablesProbed*97)
	fmt.Println("data blocks read for under 3% of probes:", d.DataBlockReads*100 < d.TablesProbed*3)
	// Output:
	// tables probed: 999 (key1999 lies past the table's last key)
	// over 97% skipped by the filter: true
	// data blocks read for under 3% of probes: true
}

// DeleteRange deletes every key in [start, end) with one small write; a
// snapshot taken before still sees them.
func ExampleDB_DeleteRange() {
	dir, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(dir)
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	for _, k := range []string{"log:1", "log:2", "log:3", "user:1"} {
		db.Put([]byte(k), []byte("x"))
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	// "log:" up to "log;" (the byte after ':'): every key starting "log:".
	if err := db.DeleteRange([]byte("log:"), []byte("log;")); err != nil {
		log.Fatal(err)
	}

	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Println("now:", string(it.Key()))
	}
	it.Close()
	if _, err := snap.Get([]byte("log:2")); err == nil {
		fmt.Println("the snapshot still has log:2")
	}
	// Output:
	// now: user:1
	// the snapshot still has log:2
}
