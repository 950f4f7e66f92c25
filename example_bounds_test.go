package bloomkv_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/bloomkv/bloomkv"
)

// An iterator's LowerBound is inclusive and its UpperBound exclusive;
// Compact's end is inclusive. Inverted bounds are an error.
func ExampleIterOptions() {
	dir, _ := os.MkdirTemp("", "bloomkv-example")
	defer os.RemoveAll(dir)
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "b1", "c", "d"} {
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			log.Fatal(err)
		}
	}

	it := db.NewIterator(&bloomkv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s ", it.Key())
	}
	fmt.Println("(d is the exclusive upper bound)")
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}

	// Compact("b", "d") includes "d" itself.
	if err := db.Compact([]byte("b"), []byte("d")); err != nil {
		log.Fatal(err)
	}

	swapped := db.NewIterator(&bloomkv.IterOptions{LowerBound: []byte("d"), UpperBound: []byte("b")})
	fmt.Println(swapped.First(), errors.Is(swapped.Error(), bloomkv.ErrInvalidArgument))
	fmt.Println(swapped.Error())
	_ = swapped.Close()
	// Output:
	// b b1 c (d is the exclusive upper bound)
	// false true
	// bloomkv: invalid argument: iterator bounds inverted: LowerBound "d" > UpperBound "b" (UpperBound is exclusive: [LowerBound, UpperBound))
}
