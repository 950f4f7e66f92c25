package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/redis/go-redis/v9"
)

// errIs checks that err is a RESP error starting with prefix.
func errIs(t *testing.T, what string, err error, prefix string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("%s: error %v, want one starting %q", what, err, prefix)
	}
}

// TestBloomCommands checks BF.* against RedisBloom's documented answers,
// and the membership answers against the filter package's own Scalable
// with the same parameters.
func TestBloomCommands(t *testing.T) {
	_, c := singleNode(t)

	// BF.ADD: 1 for new, 0 for probably present; it creates the filter
	// with RedisBloom's defaults (error rate 0.01, capacity 100).
	if added, err := c.BFAdd(ctx, "bf", "a").Result(); !added || err != nil {
		t.Fatalf("BF.ADD new = %v, %v", added, err)
	}
	if added, err := c.BFAdd(ctx, "bf", "a").Result(); added || err != nil {
		t.Fatalf("BF.ADD again = %v, %v", added, err)
	}
	info, err := c.BFInfo(ctx, "bf").Result()
	if err != nil || info.Capacity != 100 || info.ItemsInserted != 1 || info.Filters != 1 || info.ExpansionRate != 2 {
		t.Fatalf("BF.INFO of a default filter = %+v, %v", info, err)
	}
	if got, _ := c.BFInfoCapacity(ctx, "bf").Result(); got.Capacity != 100 {
		t.Fatalf("BF.INFO CAPACITY = %+v", got)
	}
	errIs(t, "BF.INFO of an absent key", c.BFInfo(ctx, "none").Err(), "ERR not found")
	errIs(t, "BF.INFO bad field", c.BFInfoArg(ctx, "bf", "colour").Err(), "ERR Invalid information value")

	// BF.RESERVE: an existing key is an error; bad numbers are errors.
	errIs(t, "BF.RESERVE on an existing filter", c.BFReserve(ctx, "bf", 0.01, 100).Err(), "ERR item exists")
	c.Set(ctx, "str", "x", 0)
	errIs(t, "BF.RESERVE on a string", c.BFReserve(ctx, "str", 0.01, 100).Err(), "WRONGTYPE")
	errIs(t, "BF.ADD on a string", c.BFAdd(ctx, "str", "x").Err(), "WRONGTYPE")
	errIs(t, "BF.EXISTS on a string", c.BFExists(ctx, "str", "x").Err(), "WRONGTYPE")
	for _, args := range [][]any{
		{"BF.RESERVE", "r", "abc", "100"}, {"BF.RESERVE", "r", "0.01", "many"},
		{"BF.RESERVE", "r", "1.5", "100"}, {"BF.RESERVE", "r", "0", "100"},
		{"BF.RESERVE", "r", "0.01", "0"}, {"BF.RESERVE", "r", "0.01", "-5"},
		{"BF.RESERVE", "r", "0.01", "100", "EXPANSION", "x"},
		{"BF.RESERVE", "r", "0.01", "100", "EXPANSION", "0"},
		{"BF.RESERVE", "r", "0.01", "100", "EXPANSION"},
		{"BF.RESERVE", "r", "0.01", "100", "BOGUS"},
		{"BF.RESERVE", "r", "0.000000000000000001", "1000000000000"}, // past the size limit
	} {
		errIs(t, fmt.Sprint(args), c.Do(ctx, args...).Err(), "ERR")
	}
	errIs(t, "EXPANSION with NONSCALING", c.Do(ctx, "BF.RESERVE", "r", "0.01", "100", "EXPANSION", "2", "NONSCALING").Err(), "Nonscaling filters cannot expand")
	if n := c.Exists(ctx, "r").Val(); n != 0 {
		t.Fatal("a refused BF.RESERVE created the key")
	}

	// Membership matches filter.Scalable with the same parameters.
	if err := c.BFReserveExpansion(ctx, "grow", 0.001, 50, 3).Err(); err != nil {
		t.Fatal(err)
	}
	ref, _ := filter.NewScalable(50, 0.001, filter.WithGrowth(3))
	var items []any
	for i := range 400 {
		items = append(items, fmt.Sprint("item", i))
	}
	added, err := c.BFMAdd(ctx, "grow", items...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if want := ref.Add([]byte(it.(string))); added[i] != want {
			t.Fatalf("BF.MADD item %d = %v, filter.Scalable.Add = %v", i, added[i], want)
		}
	}
	var probes []any
	for i := range 2000 {
		probes = append(probes, fmt.Sprint("probe", i))
	}
	got, err := c.BFMExists(ctx, "grow", probes...).Result()
	if err != nil {
		t.Fatal(err)
	}
	fps := 0
	for i, p := range probes {
		want := ref.MayContain([]byte(p.(string)))
		if got[i] != want {
			t.Fatalf("BF.MEXISTS %s = %v, filter.Scalable says %v", p, got[i], want)
		}
		if got[i] {
			fps++
		}
	}
	if fps > 20 { // bound ~0.002: a handful of 2000
		t.Fatalf("%d false positives of 2000 at error rate 0.001", fps)
	}
	if in, _ := c.BFMExists(ctx, "grow", items[:50]...).Result(); slices.Contains(in, false) {
		t.Fatal("a filter forgot an item")
	}
	info, _ = c.BFInfo(ctx, "grow").Result()
	card, _ := c.BFCard(ctx, "grow").Result()
	if info.Filters != int64(ref.Layers()) || info.ItemsInserted != int64(ref.Count()) || card != int64(ref.Count()) || info.Capacity != int64(ref.Capacity()) || info.ExpansionRate != 3 {
		t.Fatalf("BF.INFO %+v, BF.CARD %d; filter.Scalable: %d layers, %d items, capacity %d", info, card, ref.Layers(), ref.Count(), ref.Capacity())
	}
	if card, err := c.BFCard(ctx, "none").Result(); card != 0 || err != nil {
		t.Fatalf("BF.CARD of an absent key = %d, %v", card, err)
	}
	if ok, err := c.BFExists(ctx, "none", "x").Result(); ok || err != nil {
		t.Fatalf("BF.EXISTS on an absent key = %v, %v", ok, err)
	}

	// NONSCALING: the first refused item ends the reply (as RedisBloom),
	// and nothing more is added.
	if err := c.BFReserveNonScaling(ctx, "fixed", 0.01, 10).Err(); err != nil {
		t.Fatal(err)
	}
	var fill []any
	for i := range 30 {
		fill = append(fill, fmt.Sprint("f", i))
	}
	res, err := c.Do(ctx, append([]any{"BF.MADD", "fixed"}, fill...)...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, r := range res {
		if e, ok := r.(error); ok && strings.Contains(e.Error(), "non scaling filter is full") {
			full++
		}
	}
	if full == 0 {
		t.Fatalf("30 items went into a NONSCALING filter for 10: %v", res)
	}
	if card, _ := c.BFCard(ctx, "fixed").Result(); card != 10 {
		t.Fatalf("BF.CARD of the full filter = %d", card)
	}
	if v, err := c.Do(ctx, "BF.INFO", "fixed", "EXPANSION").Slice(); err != nil || len(v) != 1 || v[0] != nil {
		t.Fatalf("BF.INFO EXPANSION of a NONSCALING filter = %v, %v (want a null, as RedisBloom)", v, err)
	}

	// BF.INSERT: options, NOCREATE.
	ins, err := c.BFInsert(ctx, "ins", &redis.BFInsertOptions{Capacity: 1000, Error: 0.001}, "x", "y", "x").Result()
	if err != nil || fmt.Sprint(ins) != "[true true false]" {
		t.Fatalf("BF.INSERT = %v, %v", ins, err)
	}
	if info, _ := c.BFInfo(ctx, "ins").Result(); info.Capacity != 1000 {
		t.Fatalf("BF.INSERT CAPACITY ignored: %+v", info)
	}
	errIs(t, "BF.INSERT NOCREATE on an absent key", c.BFInsert(ctx, "nope", &redis.BFInsertOptions{NoCreate: true}, "x").Err(), "ERR not found")
	errIs(t, "BF.INSERT without ITEMS", c.Do(ctx, "BF.INSERT", "ins", "CAPACITY", "10").Err(), "ERR")
	errIs(t, "BF.INSERT NOCREATE with CAPACITY", c.Do(ctx, "BF.INSERT", "ins", "NOCREATE", "CAPACITY", "10", "ITEMS", "z").Err(), "ERR")
	if n := c.Exists(ctx, "nope").Val(); n != 0 {
		t.Fatal("BF.INSERT NOCREATE created the key")
	}
}

func TestCuckooCommands(t *testing.T) {
	_, c := singleNode(t)
	if err := c.CFReserve(ctx, "cf", 1000).Err(); err != nil {
		t.Fatal(err)
	}
	errIs(t, "CF.RESERVE on an existing key", c.CFReserve(ctx, "cf", 1000).Err(), "ERR item exists")
	errIs(t, "CF.RESERVE bad capacity", c.Do(ctx, "CF.RESERVE", "x", "lots").Err(), "Bad capacity")
	errIs(t, "CF.RESERVE BUCKETSIZE", c.CFReserveBucketSize(ctx, "x", 100, 2).Err(), "ERR")
	errIs(t, "CF.RESERVE EXPANSION x", c.Do(ctx, "CF.RESERVE", "x", "100", "EXPANSION", "x").Err(), "Couldn't parse EXPANSION")
	errIs(t, "CF.RESERVE EXPANSION", c.Do(ctx, "CF.RESERVE", "x", "100", "EXPANSION").Err(), "ERR wrong number of arguments")
	if n := c.Exists(ctx, "x").Val(); n != 0 {
		t.Fatal("a refused CF.RESERVE created the key")
	}

	// CF.ADD adds a copy each time (a multiset), CF.DEL removes one.
	for range 2 {
		if ok, err := c.CFAdd(ctx, "cf", "a").Result(); !ok || err != nil {
			t.Fatalf("CF.ADD = %v, %v", ok, err)
		}
	}
	if ok, _ := c.CFAddNX(ctx, "cf", "a").Result(); ok {
		t.Fatal("CF.ADDNX of a present item added it")
	}
	if ok, _ := c.CFAddNX(ctx, "cf", "b").Result(); !ok {
		t.Fatal("CF.ADDNX of a new item did not add it")
	}
	for i, want := range []bool{true, true, false} {
		if ok, err := c.CFDel(ctx, "cf", "a").Result(); ok != want || err != nil {
			t.Fatalf("CF.DEL %d = %v, %v", i, ok, err)
		}
	}
	if ok, _ := c.CFExists(ctx, "cf", "a").Result(); ok {
		t.Fatal("CF.EXISTS after deleting both copies")
	}
	if got, _ := c.CFMExists(ctx, "cf", "a", "b", "c").Result(); fmt.Sprint(got) != "[false true false]" {
		t.Fatalf("CF.MEXISTS = %v", got)
	}
	errIs(t, "CF.DEL on an absent key", c.CFDel(ctx, "none", "a").Err(), "Not found")
	if ok, err := c.CFExists(ctx, "none", "a").Result(); ok || err != nil {
		t.Fatalf("CF.EXISTS on an absent key = %v, %v", ok, err)
	}
	// CF.ADD creates a filter; the kinds do not mix.
	if ok, _ := c.CFAdd(ctx, "made", "x").Result(); !ok {
		t.Fatal("CF.ADD did not create its filter")
	}
	c.BFAdd(ctx, "bf", "x")
	errIs(t, "CF.ADD on a bloom filter", c.CFAdd(ctx, "bf", "x").Err(), "WRONGTYPE")
	errIs(t, "BF.ADD on a cuckoo filter", c.BFAdd(ctx, "cf", "x").Err(), "WRONGTYPE")
	errIs(t, "CF.EXISTS on a bloom filter", c.CFExists(ctx, "bf", "x").Err(), "WRONGTYPE")

	// A full filter grows (RedisBloom's default EXPANSION 1) ...
	c.CFReserve(ctx, "grows", 8)
	for i := range 200 {
		if ok, err := c.CFAdd(ctx, "grows", fmt.Sprint("i", i)).Result(); !ok || err != nil {
			t.Fatalf("CF.ADD %d to a growing filter = %v, %v", i, ok, err)
		}
	}
	if ok, _ := c.CFExists(ctx, "grows", "i0").Result(); !ok {
		t.Fatal("a grown filter lost an item")
	}
	c.CFDel(ctx, "grows", "i0")
	info, err := c.CFInfo(ctx, "grows").Result()
	if err != nil || info.NumFilters < 2 || info.NumItemsInserted != 199 || info.NumItemsDeleted != 1 || info.ExpansionRate != 1 || info.BucketSize != 4 {
		t.Fatalf("CF.INFO of a grown filter = %+v, %v", info, err)
	}
	errIs(t, "CF.INFO of an absent key", c.CFInfo(ctx, "none").Err(), "ERR not found")
	errIs(t, "CF.INFO of a bloom filter", c.CFInfo(ctx, "bf").Err(), "WRONGTYPE")
	// ... and with EXPANSION 0 refuses with RedisBloom's message, keeping
	// what it holds.
	if err := c.CFReserveExpansion(ctx, "small", 8, 0).Err(); err != nil {
		t.Fatal(err)
	}
	full := false
	for i := range 200 {
		err := c.CFAdd(ctx, "small", fmt.Sprint("i", i)).Err()
		if err != nil {
			errIs(t, "CF.ADD to a full filter", err, "Filter is full")
			full = true
			break
		}
	}
	if !full {
		t.Fatal("200 items fit in a cuckoo filter for 8 with EXPANSION 0")
	}
	if ok, _ := c.CFExists(ctx, "small", "i0").Result(); !ok {
		t.Fatal("a full filter lost an item")
	}
}
