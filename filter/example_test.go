package filter_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/filter"
)

func ExampleNewBloom() {
	// Sized for a million keys at a 1% false-positive rate.
	seen, err := filter.NewBloom(1_000_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("m=%d bits, k=%d, %d KiB\n", seen.Bits(), seen.NumProbes(), seen.SizeBytes()/1024)

	seen.Add([]byte("alice"))
	fmt.Println(seen.MayContain([]byte("alice"))) // always true once added
	fmt.Println(seen.MayContain([]byte("bob")))   // false is certain; true would be a 1% chance
	// Output:
	// m=9592960 bits, k=7, 1171 KiB
	// true
	// false
}

// A crawler visits each URL once. Add reports whether the URL was certainly
// new, so one call both records and tests it; a false positive (about one
// URL in a hundred here) is skipped though never crawled, the usual price
// of a crawl frontier in a few bits per URL.
func Example_urlDeduplication() {
	seen, err := filter.NewBloom(10_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	frontier := []string{
		"https://example.com/",
		"https://example.com/about",
		"https://example.com/",
		"https://example.com/blog?page=2",
		"https://example.com/about",
	}
	for _, url := range frontier {
		// HashString hashes without copying the string to a []byte.
		if seen.AddHash(filter.HashString(url)) {
			fmt.Println("crawl", url)
		} else {
			fmt.Println("skip ", url)
		}
	}
	fmt.Println("distinct URLs, estimated:", seen.ApproximateCount())
	// Output:
	// crawl https://example.com/
	// crawl https://example.com/about
	// skip  https://example.com/
	// crawl https://example.com/blog?page=2
	// skip  https://example.com/about
	// distinct URLs, estimated: 3
}

// Filters built on different machines (shards of a crawl, say) combine
// with Merge when they have the same shape.
func ExampleBloom_Merge() {
	a, _ := filter.NewBloom(1000, 0.01)
	b, _ := filter.NewBloom(1000, 0.01)
	a.Add([]byte("from shard a"))
	b.Add([]byte("from shard b"))
	if err := a.Merge(b); err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.MayContain([]byte("from shard a")), a.MayContain([]byte("from shard b")))

	c, _ := filter.NewBloom(5000, 0.01)
	fmt.Println(errors.Is(a.Merge(c), filter.ErrShapeMismatch))
	// Output:
	// true true
	// true
}

// Filters save to any io.Writer and load back; damage is detected.
func ExampleBloom_WriteTo() {
	weak, _ := filter.NewBloom(100, 0.001)
	for _, pw := range []string{"123456", "password", "qwerty"} {
		weak.Add([]byte(pw))
	}
	var file bytes.Buffer
	if _, err := weak.WriteTo(&file); err != nil {
		log.Fatal(err)
	}

	var loaded filter.Bloom
	if _, err := loaded.ReadFrom(bytes.NewReader(file.Bytes())); err != nil {
		log.Fatal(err)
	}
	fmt.Println(loaded.MayContain([]byte("qwerty")), loaded.MayContain([]byte("correct horse battery staple")))

	damaged := bytes.Clone(file.Bytes())
	damaged[40] ^= 1
	fmt.Println(loaded.UnmarshalBinary(damaged) != nil)
	// Output:
	// true false
	// true
}

// A counting filter supports removal: a blacklist that entries leave.
func ExampleCounting() {
	blocked, _ := filter.NewCounting(10_000, 0.01)
	blocked.Add([]byte("198.51.100.7"))
	blocked.Add([]byte("203.0.113.9"))

	if err := blocked.Remove([]byte("198.51.100.7")); err != nil {
		log.Fatal(err)
	}
	fmt.Println(blocked.MayContain([]byte("198.51.100.7")), blocked.MayContain([]byte("203.0.113.9")))

	// Removing what was certainly never added is refused and changes nothing.
	fmt.Println(errors.Is(blocked.Remove([]byte("192.0.2.1")), filter.ErrAbsent))
	// Output:
	// false true
	// true
}

// A cuckoo filter also supports removal, in less space than a counting
// filter, but it can fill up: Add then says so instead of dropping a key.
func ExampleCuckoo() {
	sessions, _ := filter.NewCuckoo(3, 0.01)
	fmt.Println("slots:", sessions.Capacity())
	for i := 0; ; i++ {
		err := sessions.Add(fmt.Appendf(nil, "session-%d", i))
		if errors.Is(err, filter.ErrFull) {
			fmt.Println("full after", i, "sessions")
			break
		}
	}
	fmt.Println(sessions.MayContain([]byte("session-0")))
	// Output:
	// slots: 20
	// full after 17 sessions
	// true
}

// When the number of keys is unknown, a scalable filter grows by adding
// layers, keeping the compound false-positive rate below a bound.
func ExampleScalable() {
	users, _ := filter.NewScalable(1000, 0.01)
	for i := 0; i < 100_000; i++ {
		users.Add(fmt.Appendf(nil, "user-%d", i))
	}
	fmt.Println("layers:", users.Layers())
	fmt.Printf("rate bound: %.2f%%\n", 100*users.FPRBound())
	fmt.Println("estimated rate within bound:", users.EstimatedFPR() < users.FPRBound())
	// Output:
	// layers: 7
	// rate bound: 2.00%
	// estimated rate within bound: true
}
