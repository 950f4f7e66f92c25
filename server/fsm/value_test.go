package fsm

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzDecodeValue: a stored value that does not decode is an error, never
// a panic, and one that decodes re-encodes to the same bytes.
func FuzzDecodeValue(f *testing.F) {
	m := newMachine(f)
	grow := Command{Op: OpCFReserve, Key: []byte("cf"), Capacity: 4, Expansion: 2}
	m.apply(put("s", "v"), bfAdd("bf", "x", "y"), grow)
	for i := range 20 {
		m.apply(cfAdd("cf", fmt.Sprint(i)))
	}
	for _, k := range []string{"s", "bf", "cf"} {
		h, _ := m.f.acquire()
		raw, err := h.db.Get(userKey([]byte(k)))
		h.release()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{'C', 1, 1, 0})
	f.Add([]byte{'C', 1, 1, 33, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := decodeValue([]byte("k"), raw)
		if err != nil {
			return
		}
		enc := v.encode()
		v2, err := decodeValue([]byte("k"), enc)
		if err != nil {
			t.Fatalf("re-encoding of %x does not decode: %v", raw, err)
		}
		if enc2 := v2.encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding of %x is unstable", raw)
		}
	})
}
