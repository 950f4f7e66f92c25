package iterator

import (
	"bytes"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// byteSource reads fuzz input; past the end it yields zeros.
type byteSource struct{ b []byte }

func (s *byteSource) next() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

var fuzzKeys = []string{"a", "a\x00", "aa", "ab", "b", "b\xff", "c"}

// decodeFuzzHistory turns input bytes into a history split across children:
// each entry byte picks a key, a kind and a child; sequence numbers grow by
// one per entry.
func decodeFuzzHistory(s *byteSource) (keys []string, history []entry, parts [][]entry) {
	nchildren := 1 + int(s.next()%4)
	keys = fuzzKeys[:1+int(s.next())%len(fuzzKeys)]
	parts = make([][]entry, nchildren)
	n := int(s.next() % 48)
	for i := 0; i < n; i++ {
		b := s.next()
		e := entry{ukey: keys[int(b&0x0F)%len(keys)], seq: uint64(i + 1), kind: base.KindSet}
		if b&0x80 != 0 {
			e.kind = base.KindDelete
		} else {
			e.value = string(rune('A' + i%26))
		}
		history = append(history, e)
		c := int(b>>4&0x07) % nchildren
		parts[c] = append(parts[c], e)
	}
	return keys, history, parts
}

func fuzzBound(s *byteSource, keys []string) []byte {
	i := int(s.next()) % (len(keys) + 1)
	if i == len(keys) {
		return nil
	}
	return []byte(keys[i])
}

// FuzzVisible checks Visible against the map model for a history and an
// operation sequence both taken from the input.
func FuzzVisible(f *testing.F) {
	f.Add([]byte{0, 6, 10, 0x01, 0x12, 0x83, 0x24, 0x05, 0x96, 0x31, 0x02, 0x80, 0x11, 20, 7, 7, 0, 1, 2, 3, 4, 1, 4, 4, 3, 3})
	f.Add([]byte{3, 2, 20, 0x81, 0x80, 0x01, 0x00, 0x11, 0x90, 0x21, 0xa0, 0x31, 0xb1, 0x41, 0xc0, 12, 1, 2, 1, 4, 0, 3, 4, 3})
	f.Add([]byte{1, 7, 5, 1, 2, 3, 4, 5, 255, 0, 7, 0x43, 0x52, 0x63, 4, 4, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteSource{b: data}
		keys, history, parts := decodeFuzzHistory(s)
		seq := uint64(s.next())
		lower, upper := fuzzBound(s, keys), fuzzBound(s, keys)
		v := NewVisible(mergedScribbled(parts), seq, lower, upper)
		m := newVisibleModel(history, seq, lower, upper)
		for len(s.b) > 0 {
			op := s.next()
			var got, want bool
			switch op % 5 {
			case 0:
				got, want = v.First(), m.first()
			case 1:
				got, want = v.Last(), m.last()
			case 2:
				k := keys[int(op>>3)%len(keys)]
				got, want = v.SeekGE([]byte(k)), m.seekGE(k)
			case 3:
				got, want = v.Next(), m.next()
			case 4:
				got, want = v.Prev(), m.prev()
			}
			if got != want || (want && (string(v.Key()) != m.keys[m.idx] || string(v.Value()) != m.values[m.idx])) {
				t.Fatalf("op %d: valid %v want %v", op%5, got, want)
			}
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzMerging checks the merging iterator against a sorted reference for
// children and operations taken from the input.
func FuzzMerging(f *testing.F) {
	f.Add([]byte{2, 4, 12, 0x01, 0x12, 0x83, 0x24, 0x05, 0x96, 0x31, 0x02, 0x80, 0x11, 0x21, 0x33, 0, 5, 5, 1, 4, 4, 2, 3})
	f.Add([]byte{3, 7, 30, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0x90, 0xa0, 0xb0, 0, 5, 4, 5, 4, 1, 5, 5, 10, 19})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteSource{b: data}
		keys, _, parts := decodeFuzzHistory(s)
		var cparts [][]childEntry
		for c, p := range parts {
			var ce []childEntry
			for _, e := range p {
				ce = append(ce, childEntry{ikey: e.ikey(), value: []byte(e.value), child: c})
			}
			cparts = append(cparts, ce)
		}
		m := newMergeModel(cparts)
		it := NewMerging(buildChildren(cparts)...)
		for len(s.b) > 0 {
			op := s.next()
			target := base.MakeInternalKey([]byte(keys[int(op>>3)%len(keys)]), uint64(s.next()%50), base.Kind(op>>7)|base.KindSet)
			var got, want bool
			switch op % 6 {
			case 0:
				got, want = it.First(), m.set(0)
			case 1:
				got, want = it.Last(), m.set(len(m.keys)-1)
			case 2:
				got, want = it.SeekGE(target), m.seekGE(target)
			case 3:
				got, want = it.SeekLT(target), m.seekLT(target)
			case 4:
				got, want = it.Next(), m.next()
			case 5:
				got, want = it.Prev(), m.prev()
			}
			if got != want || (want && (!bytes.Equal(it.Key(), m.keys[m.idx]) || !bytes.Equal(it.Value(), m.values[m.idx]))) {
				t.Fatalf("op %d: valid %v want %v", op%6, got, want)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
