package memtable

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// benchKeys returns n random 16-byte user keys.
func benchKeys(n int) [][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, rng.Uint64()), uint64(i))
	}
	return keys
}

const benchEntries = 1 << 17

func benchTable(keys [][]byte) *Memtable {
	m := New()
	value := make([]byte, 100)
	for i, k := range keys {
		m.Add(uint64(i+1), kv.KindSet, k, value)
	}
	return m
}

func BenchmarkAdd(b *testing.B) {
	keys := benchKeys(benchEntries)
	value := make([]byte, 100)
	b.SetBytes(int64(len(keys[0]) + len(value)))
	benchAdd(b, keys, value)
}

// benchAdd adds keys in turn, each with value, to a fresh memtable every
// len(keys) entries.
func benchAdd(b *testing.B, keys [][]byte, value []byte) {
	b.ReportAllocs()
	m := New()
	for i := 0; b.Loop(); i++ {
		if i%len(keys) == 0 && i > 0 {
			m = New()
		}
		m.Add(uint64(i+1), kv.KindSet, keys[i%len(keys)], value)
	}
}

// benchGet Gets keys in turn from m, which holds them all.
func benchGet(b *testing.B, m *Memtable, keys [][]byte) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, ok := m.Get(keys[i%len(keys)], kv.MaxSeq); !ok {
			b.Fatal("missing key")
		}
	}
}

func BenchmarkGet(b *testing.B) {
	keys := benchKeys(benchEntries)
	benchGet(b, benchTable(keys), keys)
}

func BenchmarkGetParallel(b *testing.B) {
	keys := benchKeys(benchEntries)
	m := benchTable(keys)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Get(keys[i%benchEntries], kv.MaxSeq)
			i++
		}
	})
}

func BenchmarkIterNext(b *testing.B) {
	m := benchTable(benchKeys(benchEntries))
	it := m.NewIter()
	defer it.Close()
	b.ReportAllocs()
	it.First()
	for b.Loop() {
		if !it.Next() {
			it.First()
		}
	}
}

func BenchmarkIterPrev(b *testing.B) {
	m := benchTable(benchKeys(benchEntries))
	it := m.NewIter()
	defer it.Close()
	b.ReportAllocs()
	it.Last()
	for b.Loop() {
		if !it.Prev() {
			it.Last()
		}
	}
}

// BenchmarkIterSeekGENext10 is the merging-iterator pattern: seek, then
// read a few entries.
func BenchmarkIterSeekGENext10(b *testing.B) {
	keys := benchKeys(benchEntries)
	m := benchTable(keys)
	it := m.NewIter()
	defer it.Close()
	b.ReportAllocs()
	seek := make([]byte, 0, 32)
	for i := 0; b.Loop(); i++ {
		seek = kv.AppendInternalKey(seek[:0], keys[i%benchEntries], kv.MaxSeq, kv.KindSeek)
		it.SeekGE(seek)
		for range 10 {
			it.Next()
		}
	}
}

func BenchmarkNewIter(b *testing.B) {
	keys := benchKeys(benchEntries)
	m := benchTable(keys)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// An Add between iterators makes every NewIter take a fresh clone
		// and the next Add copy the path it touches.
		m.Add(uint64(benchEntries+i+1), kv.KindSet, keys[i%benchEntries], nil)
		it := m.NewIter()
		it.First()
		it.Close()
	}
}

// sharedPrefixKeys returns n keys shaped like the state database's keys
// under redis-benchmark -r 100000: a kind byte, then "key:" and twelve
// digits of a random number below 100,000, so that every key shares its
// first 12 bytes with every other.
func sharedPrefixKeys(n int) [][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "\x01key:%012d", rng.IntN(100000))
	}
	return keys
}

// sharedPrefixEntries is about the entries of a 4 MiB memtable of such
// keys with 4-byte values (EntryOverhead included).
const sharedPrefixEntries = 45000

// BenchmarkAddSharedPrefix is BenchmarkAdd with keys that share their
// first 12 bytes, a fresh memtable every sharedPrefixEntries.
func BenchmarkAddSharedPrefix(b *testing.B) {
	keys := sharedPrefixKeys(sharedPrefixEntries)
	benchAdd(b, keys, []byte("sxxx"))
}

// BenchmarkGetSharedPrefix is BenchmarkGet with keys that share their first
// 12 bytes.
func BenchmarkGetSharedPrefix(b *testing.B) {
	keys := sharedPrefixKeys(sharedPrefixEntries)
	m := New()
	for i, k := range keys {
		m.Add(uint64(i+1), kv.KindSet, k, []byte("sxxx"))
	}
	benchGet(b, m, keys)
}

// BenchmarkAddSequential inserts keys in ascending order, as the raft log
// store's memtable receives its entries (a kind byte and a big-endian
// index), a fresh memtable every benchEntries.
func BenchmarkAddSequential(b *testing.B) {
	value := make([]byte, 100)
	key := make([]byte, 9)
	key[0] = 'l'
	b.ReportAllocs()
	m := New()
	for i := 0; b.Loop(); i++ {
		if i%benchEntries == 0 && i > 0 {
			m = New()
		}
		binary.BigEndian.PutUint64(key[1:], uint64(5_000_000+i))
		m.Add(uint64(i+1), kv.KindSet, key, value)
	}
}
