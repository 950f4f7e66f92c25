package bloomkv_test

import (
	"fmt"
	"log"
	"os"

	"github.com/bloomkv/bloomkv"
)

// An EventListener sees background work as it happens. Callbacks run one
// at a time, in order, on a goroutine of their own; Close returns once
// every event has been delivered.
func ExampleEventListener() {
	dir, err := os.MkdirTemp("", "bloomkv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	listener := &bloomkv.EventListener{
		TableCreated: func(info bloomkv.TableCreateInfo) {
			fmt.Printf("table written by %s\n", info.Reason)
		},
		FlushEnd: func(info bloomkv.FlushInfo) {
			fmt.Printf("flush %d: %d table(s) at level %d, error %v\n", info.JobID, len(info.Output), info.Output[0].Level, info.Err)
		},
	}
	db, err := bloomkv.Open(dir, &bloomkv.Options{EventListener: listener})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		log.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// table written by flush
	// flush 1: 1 table(s) at level 0, error <nil>
}
