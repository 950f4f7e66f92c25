package memtable_test

import (
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/memtable"
)

// Fill a memtable with a few versions of some keys, read at two sequence
// numbers, and walk every entry in internal-key order.
func Example() {
	m := memtable.New()
	m.Add(1, kv.KindSet, []byte("apple"), []byte("red"))
	m.Add(2, kv.KindSet, []byte("banana"), []byte("yellow"))
	m.Add(3, kv.KindSet, []byte("apple"), []byte("green"))
	m.Add(4, kv.KindDelete, []byte("banana"), nil)

	// Get sees the newest version at or below the sequence number asked.
	for _, seq := range []uint64{2, 4} {
		v, kind, found := m.Get([]byte("apple"), seq)
		fmt.Printf("apple at %d: %s %q %v\n", seq, kind, v, found)
		_, kind, found = m.Get([]byte("banana"), seq)
		fmt.Printf("banana at %d: %s %v\n", seq, kind, found)
	}

	// The iterator sees the entries present when it was made: user keys
	// ascending, newest version first.
	it := m.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		ukey, seq, kind, _ := kv.ParseInternalKey(it.Key())
		fmt.Printf("%s#%d,%s = %q\n", ukey, seq, kind, it.Value())
	}
	fmt.Println(m.Len(), "entries")

	// SeekGE to a search key lands on the newest version visible at a
	// sequence number.
	if it.SeekGE(kv.MakeSearchKey([]byte("apple"), 2)) {
		fmt.Println("seek apple@2:", kv.FormatInternalKey(it.Key()))
	}
	// Output:
	// apple at 2: SET "red" true
	// banana at 2: SET true
	// apple at 4: SET "green" true
	// banana at 4: DEL true
	// apple#3,SET = "green"
	// apple#1,SET = "red"
	// banana#4,DEL = ""
	// banana#2,SET = "yellow"
	// 4 entries
	// seek apple@2: "apple"#1,SET
}

// Range tombstones are kept beside the point entries: Get and the iterator
// do not apply them, RangeDels returns them for the caller to consult.
func ExampleMemtable_RangeDels() {
	m := memtable.New()
	m.Add(1, kv.KindSet, []byte("b"), []byte("1"))
	m.AddRangeDel(2, []byte("a"), []byte("c"))

	_, _, found := m.Get([]byte("b"), 2)
	rd := m.RangeDels()
	fmt.Println("point entry found:", found)
	fmt.Println("deleted as seen at 2:", rd.Covers([]byte("b"), 1, 2))
	fmt.Println("deleted as seen at 1:", rd.Covers([]byte("b"), 1, 1))
	// Output:
	// point entry found: true
	// deleted as seen at 2: true
	// deleted as seen at 1: false
}
