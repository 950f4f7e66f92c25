package sstable

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// textEntries returns n entries whose values are drawn from a small
// vocabulary: compressible the way log lines or JSON documents are, unlike
// seqEntries' values, which every codec squeezes to almost nothing.
func textEntries(n int) []refEntry {
	words := strings.Fields("the a user order status pending shipped delivered id time " +
		"zone region eu us asia price amount currency eur usd note gift wrap express " +
		"standard returned refund warehouse 17 42 301 9999 true false null")
	rng := rand.New(rand.NewPCG(14, 14))
	es := make([]refEntry, n)
	var sb strings.Builder
	for i := range es {
		sb.Reset()
		for range 12 + rng.IntN(12) {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%d", rng.Uint32())
		es[i] = refEntry{kv.MakeInternalKey(fmt.Appendf(nil, "order/%08d", i), uint64(i+1), kv.KindSet), []byte(sb.String())}
	}
	return es
}

// BenchmarkCompression writes and scans (uncached, so every block is
// decoded) one 50k-entry table per codec, and reports the table's size:
// what a level of each compression costs in space and in time.
//
//	go test -run '^$' -bench Compression -benchtime 20x ./sstable
func BenchmarkCompression(b *testing.B) {
	es := textEntries(50_000)
	raw := 0
	for _, e := range es {
		raw += len(e.key) + len(e.value)
	}
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		o := WriterOptions{Compression: c, BloomBitsPerKey: 10}
		b.Run("write/"+c.String(), func(b *testing.B) {
			b.SetBytes(int64(raw))
			var size int
			for b.Loop() {
				data, _ := buildTable(b, es, o)
				size = len(data)
			}
			b.ReportMetric(float64(size), "table-bytes")
			b.ReportMetric(float64(raw)/float64(size), "ratio")
		})
		b.Run("scan/"+c.String(), func(b *testing.B) {
			data, _ := buildTable(b, es, o)
			r := mustOpenBytes(b, data, ReaderOptions{})
			defer r.Close()
			b.SetBytes(int64(raw))
			for b.Loop() {
				it := r.NewIter(false)
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Close(); err != nil || n != len(es) {
					b.Fatalf("read %d of %d entries: %v", n, len(es), err)
				}
			}
		})
	}
}
