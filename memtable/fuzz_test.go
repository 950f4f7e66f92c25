package memtable

import (
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// FuzzIterator reads the input as a program: a table built from the first
// bytes, then iterator moves, each checked against the reference. Seek keys
// come straight from the input, so malformed (short) keys are exercised
// too: they must yield an error, never a panic.
func FuzzIterator(f *testing.F) {
	f.Add([]byte{3, 'a', 1, 'b', 2, 'a', 0, 1, 2, 3, 4, 5, 4, 4, 5, 5})
	f.Add([]byte{20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 5, 5, 5, 5, 4, 4, 4})
	f.Add([]byte{0, 2, 'x', 3, 'y'})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := int(data[0])
		data = data[1:]
		var ref refTable
		for i := 0; i < n && len(data) >= 2; i++ {
			ukey := []byte{data[0] % 8}
			kind := kv.Kind(data[1] & 1)
			ref = append(ref, refEntry{ikey: kv.MakeInternalKey(ukey, uint64(i+1), kind), value: []byte{data[1]}})
			data = data[2:]
		}
		want := ref.sorted()
		it := fill(ref).NewIter()
		defer it.Close()
		ri := &refIter{r: want}
		for len(data) > 0 {
			op := data[0] % 6
			data = data[1:]
			var got, exp bool
			switch op {
			case 0:
				got, exp = it.First(), ri.set(0)
			case 1:
				got, exp = it.Last(), ri.set(len(want)-1)
			case 2, 3:
				var k []byte
				if len(data) > 0 {
					l := int(data[0] % 12)
					data = data[1:]
					k, data = data[:min(l, len(data))], data[min(l, len(data)):]
				}
				if op == 2 {
					got = it.SeekGE(k)
				} else {
					got = it.SeekLT(k)
				}
				if len(k) < kv.TrailerLen {
					if got || it.Error() == nil {
						t.Fatalf("seek with %d-byte key: valid=%v err=%v", len(k), got, it.Error())
					}
					// Recover as a caller would: reposition absolutely.
					it.First()
					ri.set(0)
					continue
				}
				if op == 2 {
					exp = ri.set(want.seekGE(k))
				} else {
					exp = ri.set(want.seekLT(k))
				}
			case 4:
				got, exp = it.Next(), ri.next()
			case 5:
				got, exp = it.Prev(), ri.prev()
			}
			if got != exp {
				t.Fatalf("op %d: valid=%v, reference %v", op, got, exp)
			}
			if got {
				checkAt(t, it, want, ri.pos)
			}
		}
	})
}
