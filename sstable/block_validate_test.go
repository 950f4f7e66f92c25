package sstable

import (
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
)

// referenceValid is the block invariant (see block) checked the plain
// way: every entry decoded with entryAt, every key built whole and
// compared with kv.CompareInternal. validateEntries is the fast version.
func referenceValid(b *block, kind blockKind) bool {
	var prev []byte
	r, off, n := 0, 0, 0
	for off < b.restartsOff {
		e, ok := b.entryAt(off)
		if !ok {
			return false
		}
		if r < b.numRestarts && b.restart(r) == off {
			if e.shared != 0 {
				return false
			}
			r++
		} else if r < b.numRestarts && b.restart(r) < off {
			return false
		}
		if e.shared > len(prev) {
			return false
		}
		key := append(append([]byte(nil), prev[:e.shared]...), b.data[e.keyStart:e.valueStart]...)
		if len(key) < kv.TrailerLen || n > 0 && kv.CompareInternal(prev, key) >= 0 {
			return false
		}
		if _, _, _, ok := kv.ParseInternalKey(key); kind == kindData && !ok {
			return false
		}
		prev, off = key, e.next
		n++
	}
	return off == b.restartsOff && (r == b.numRestarts || n == 0)
}

// TestValidateEntriesMatchesReference damages valid blocks (a byte set to
// a random value, often one near a header) and requires the fast
// validation to accept exactly the blocks the reference accepts.
func TestValidateEntriesMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	accepted, rejected := 0, 0
	for round := 0; round < 3000; round++ {
		es := randomEntries(rng, 1+rng.IntN(40), 3)
		data := buildBlock(es, []int{1, 2, 16}[rng.IntN(3)])
		kind := []blockKind{kindData, kindIndex}[rng.IntN(2)]
		for m := rng.IntN(3); m > 0; m-- {
			i := rng.IntN(len(data) - 4) // keep the restart count
			data[i] = []byte{0, 1, 7, 8, 9, 0x7f, 0x80, 0xff, byte(rng.IntN(256))}[rng.IntN(9)]
		}
		b, err := decodeBlock(data, location{"test.sst", kind, 0})
		// decodeBlock checks the restart array first; judge the entries
		// only for blocks whose restart array passed.
		shell, shellErr := restartShell(data)
		if shellErr {
			if err == nil {
				t.Fatalf("round %d: a block with a bad restart array was accepted", round)
			}
			continue
		}
		want := referenceValid(shell, kind)
		if kind == kindData && shell.restartsOff == 0 {
			want = false // an empty data block
		}
		if got := err == nil; got != want {
			t.Fatalf("round %d (%v): validateEntries accepts %v, the reference %v (err %v)", round, kind, got, want, err)
		}
		if err == nil {
			accepted++
			if b.numEntries == 0 && kind == kindData {
				t.Fatalf("round %d: empty data block accepted", round)
			}
		} else {
			rejected++
		}
	}
	t.Logf("%d blocks accepted, %d rejected, all as the reference", accepted, rejected)
	if accepted == 0 || rejected == 0 {
		t.Fatalf("the damage never (or always) mattered: %d accepted, %d rejected", accepted, rejected)
	}
}

// restartShell parses data's restart array as decodeBlock does; bad is set
// when decodeBlock would reject it before looking at the entries.
func restartShell(data []byte) (b *block, bad bool) {
	if len(data) < 4 {
		return nil, true
	}
	n := int(uint32(data[len(data)-4]) | uint32(data[len(data)-3])<<8 | uint32(data[len(data)-2])<<16 | uint32(data[len(data)-1])<<24)
	if n == 0 || n > (len(data)-4)/4 {
		return nil, true
	}
	b = &block{data: data, restartsOff: len(data) - 4 - 4*n, numRestarts: n}
	prev := -1
	for i := 0; i < n; i++ {
		r := b.restart(i)
		if i == 0 && r != 0 || r <= prev || r >= b.restartsOff && !(r == 0 && b.restartsOff == 0) {
			return nil, true
		}
		prev = r
	}
	return b, false
}
