package filter_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
)

// A guard against cache penetration: lookups of keys that do not exist
// (bogus IDs from a scraper, or a bug) are answered from a few bits per key
// in memory instead of reaching the database. The guard is built from the
// database's keys at startup and learns each new key before the key is
// written, so it never rejects a key the database holds. A Bloom cannot
// forget: deleted keys still pass the guard and the database answers them,
// which is safe; rebuilding the guard at the next start drops them (or use
// a Counting filter and Remove on Delete).
func Example_cachePenetrationGuard() {
	dir, err := os.MkdirTemp("", "bloomkv-guard-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := bloomkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 1000; i++ { // the data already there
		if err := db.Put(fmt.Appendf(nil, "user:%d", i), []byte("profile")); err != nil {
			log.Fatal(err)
		}
	}

	// At startup: one pass over the keys, sized with room to grow.
	guard, err := filter.NewBloom(100_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		guard.Add(it.Key())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}

	put := func(key, value []byte) error {
		guard.Add(key) // first, so a reader that can see the key also passes the guard
		return db.Put(key, value)
	}
	databaseReads := 0
	get := func(key []byte) ([]byte, error) {
		if !guard.MayContain(key) {
			return nil, bloomkv.ErrNotFound // certainly absent: the database is not asked
		}
		databaseReads++
		return db.Get(key)
	}

	if err := put([]byte("user:1000"), []byte("new profile")); err != nil {
		log.Fatal(err)
	}
	v, err := get([]byte("user:1000"))
	fmt.Printf("user:1000 = %s, %v\n", v, err)

	notFound := 0
	for i := 0; i < 10_000; i++ { // a scraper walking IDs that do not exist
		if _, err := get(fmt.Appendf(nil, "user:%d", 100_000+i)); errors.Is(err, bloomkv.ErrNotFound) {
			notFound++
		}
	}
	fmt.Println("bogus lookups answered not found:", notFound)
	fmt.Println("lookups that reached the database:", databaseReads)
	// Output:
	// user:1000 = new profile, <nil>
	// bogus lookups answered not found: 10000
	// lookups that reached the database: 1
}
