package sstable

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// TestReuseIterReleasing: a closed releasing iterator reinitialized for
// another table walks that table exactly as a new one does (keys longer
// than the inline key buffers included), in both directions, without an
// allocation; an iterator still open, or of another kind, is never
// reused.
func TestReuseIterReleasing(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	short := randomEntries(rng, 500, 1)
	long := make([]refEntry, 0, 300)
	for i := range 300 {
		uk := bytes.Repeat([]byte{byte('a' + i%26)}, 60+i%7) // past keyArr's 48 bytes
		uk = append(uk, byte(i>>8), byte(i))
		long = append(long, refEntry{kv.MakeInternalKey(uk, uint64(i+1), kv.KindSet), []byte{byte(i)}})
	}
	sortEntries(long)
	tables := [][]refEntry{short, long, short}
	readers := make([]*Reader, len(tables))
	for i, es := range tables {
		data, _ := buildTable(t, es, WriterOptions{BlockSize: 256})
		readers[i] = mustOpenBytes(t, data, ReaderOptions{Cache: NewBlockCache(1 << 20)})
		defer readers[i].Close()
	}

	var prev kv.Iterator
	for i, r := range readers {
		it := r.ReuseIterReleasing(prev, true, nil)
		if i > 0 && it != prev {
			t.Fatalf("table %d: a closed releasing iterator was not reused", i)
		}
		var got []refEntry
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, refEntry{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
		}
		n := len(got)
		for ok := it.Last(); ok; ok = it.Prev() {
			n--
			if n < 0 || !bytes.Equal(it.Key(), got[n].key) {
				t.Fatalf("table %d: backward walk disagrees at %d", i, n)
			}
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tables[i]) {
			t.Fatalf("table %d: walked %d entries of %d", i, len(got), len(tables[i]))
		}
		for j, e := range tables[i] {
			if !bytes.Equal(got[j].key, e.key) || !bytes.Equal(got[j].value, e.value) {
				t.Fatalf("table %d entry %d: %x=%q, want %x=%q", i, j, got[j].key, got[j].value, e.key, e.value)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		prev = it
	}

	// Reusing allocates nothing (the blocks are cached by now).
	it := readers[1].ReuseIterReleasing(prev, true, nil)
	it.Close()
	prev = it
	if a := testing.AllocsPerRun(100, func() {
		it := readers[1].ReuseIterReleasing(prev, true, nil)
		it.SeekGE(long[150].key)
		it.Close()
		prev = it
	}); a != 0 {
		t.Fatalf("a reused iterator's seek allocated %v times", a)
	}

	open := readers[0].NewIterReleasing(true, nil)
	defer open.Close()
	if readers[1].ReuseIterReleasing(open, true, nil) == open {
		t.Fatal("an open iterator was reinitialized under its owner")
	}
	kept := readers[0].NewIter(true)
	kept.Close()
	if readers[1].ReuseIterReleasing(kept, true, nil) == kept {
		t.Fatal("an iterator that keeps its blocks was reused as a releasing one")
	}
}
