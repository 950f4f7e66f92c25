package filter_test

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/bloomkv/bloomkv/filter"
)

// A filter inside a JSON document round-trips: it marshals to a base64
// string of its checksummed binary encoding.
func ExampleBloom_MarshalJSON() {
	b, _ := filter.NewBloom(1000, 0.01)
	b.Add([]byte("alice"))
	doc, _ := json.Marshal(map[string]*filter.Bloom{"seen": b})

	var back map[string]*filter.Bloom
	if err := json.Unmarshal(doc, &back); err != nil {
		fmt.Println(err)
	}
	fmt.Println(back["seen"].MayContain([]byte("alice")), back["seen"].Equal(b))
	// Output: true true
}

// A large filter moves in checked chunks, as RedisBloom's SCANDUMP and
// LOADCHUNK move one: here 4 KiB each, through any io.Writer and io.Reader.
func ExampleDumpChunks() {
	s, _ := filter.NewScalable(10_000, 0.01)
	for i := range 50_000 {
		s.Add(fmt.Appendf(nil, "key%d", i))
	}
	var wire bytes.Buffer
	if _, err := filter.DumpChunks(&wire, s, 4096); err != nil {
		fmt.Println(err)
	}

	var loaded filter.Scalable
	if _, err := filter.LoadChunks(&wire, &loaded); err != nil {
		fmt.Println(err)
	}
	fmt.Println(loaded.Layers() == s.Layers(), loaded.MayContain([]byte("key49999")))
	// Output: true true
}

// Insert creates the filter on first use (RedisBloom's BF.INSERT) and says
// which keys were new.
func ExampleInsert() {
	var seen *filter.Scalable
	opts := filter.InsertOptions{Capacity: 1000, ErrorRate: 0.001}
	seen, added, _ := filter.Insert(seen, opts, []byte("a"), []byte("b"))
	fmt.Println(added)
	seen, added, _ = filter.Insert(seen, opts, []byte("b"), []byte("c"))
	fmt.Println(added, seen.Count())

	_, _, err := filter.Insert(nil, filter.InsertOptions{NoCreate: true}, []byte("x"))
	fmt.Println(err)
	// Output:
	// [true true]
	// [false true] 3
	// bloomkv/filter: no filter to insert into
}
