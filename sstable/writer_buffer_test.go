package sstable

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestWriterBufferReuse: a Writer's pooled write buffer may come from one
// that was aborted (or failed) with bytes still buffered; none of them may
// reach the next table. Tables built after aborted writers must be byte
// for byte the table built before.
func TestWriterBufferReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	es := randomEntries(rng, testScale(3000), 2)
	o := WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10}
	want, _ := buildTable(t, es, o)
	for round := range 5 {
		// Leave a writer with a partly filled buffer, then abort it.
		f := &memFile{}
		w := NewWriter(f, o)
		for _, e := range es[:len(es)/3] {
			if err := w.Add(e.key, e.value); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Finish(); err == nil {
			t.Fatal("Finish after Abort succeeded")
		}
		if err := w.Add(es[0].key, es[0].value); err == nil {
			t.Fatal("Add after Abort succeeded")
		}
		got, _ := buildTable(t, es, o)
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: table built after an aborted writer differs (%d bytes, want %d)", round, len(got), len(want))
		}
	}
}
