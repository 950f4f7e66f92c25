package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func errCorruptionForTest() error { return base.ErrCorruption }

// recordEnds returns, for each record, the offset just past its last
// fragment.
func recordEnds(t testing.TB, data []byte, offsets []int64) []int64 {
	t.Helper()
	ends := make([]int64, len(offsets))
	spans := layout(t, data)
	si := 0
	for i := range offsets {
		next := int64(len(data)) + 1
		if i+1 < len(offsets) {
			next = offsets[i+1]
		}
		// The record ends with the last non-padding fragment before next.
		for si < len(spans) && spans[si].start < next {
			if !spans[si].padding {
				ends[i] = spans[si].end
			}
			si++
		}
	}
	return ends
}

// checkTruncation reads data[:n] and checks it yields exactly the records
// that ended at or before n, no error, and a torn tail unless n is a record
// end.
func checkTruncation(t *testing.T, data []byte, recs [][]byte, ends []int64, n int) {
	t.Helper()
	res := readAll(data[:n], "trunc.log")
	if res.err != nil {
		t.Fatalf("truncated at %d: %v", n, res.err)
	}
	whole := 0
	lastEnd := int64(0)
	for whole < len(ends) && ends[whole] <= int64(n) {
		lastEnd = ends[whole]
		whole++
	}
	if len(res.recs) != whole {
		t.Fatalf("truncated at %d: read %d records, want %d", n, len(res.recs), whole)
	}
	checkPrefix(t, res.recs, recs)
	wantTorn := int64(n) != lastEnd
	if res.torn != wantTorn || (wantTorn && res.tornOffset != lastEnd) {
		t.Fatalf("truncated at %d: torn=%v at %d, want torn=%v at %d", n, res.torn, res.tornOffset, wantTorn, lastEnd)
	}
}

func TestTruncationEveryOffsetSmallLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var recs [][]byte
	for _, n := range []int{0, 1, 5, 0, 130, 7, 900, 2, 0, 64} {
		recs = append(recs, randomRecord(rng, n))
	}
	data, offsets := buildLog(t, recs)
	ends := recordEnds(t, data, offsets)
	for n := 0; n <= len(data); n++ {
		checkTruncation(t, data, recs, ends, n)
	}
}

func TestTruncationMultiBlockLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	recs := [][]byte{
		randomRecord(rng, 10),
		randomRecord(rng, BlockSize-2*headerSize-10-3), // leaves 3 bytes: padding
		randomRecord(rng, 100<<10),                     // first, middles, last
		randomRecord(rng, 0),
		randomRecord(rng, maxFragmentPayload),
		randomRecord(rng, 500),
	}
	data, offsets := buildLog(t, recs)
	ends := recordEnds(t, data, offsets)
	// Every offset near a block boundary or a record boundary, and a stride
	// through the rest.
	cuts := map[int]bool{}
	mark := func(center int64) {
		for d := -40; d <= 40; d++ {
			if c := int(center) + d; c >= 0 && c <= len(data) {
				cuts[c] = true
			}
		}
	}
	for b := int64(0); b <= int64(len(data)); b += BlockSize {
		mark(b)
	}
	for i := range offsets {
		mark(offsets[i])
		mark(ends[i])
	}
	for c := 0; c <= len(data); c += 97 {
		cuts[c] = true
	}
	for n := range cuts {
		checkTruncation(t, data, recs, ends, n)
	}
}

// multiBlockLog returns a log of many records spanning several blocks.
func multiBlockLog(t *testing.T, seed uint64) ([][]byte, []byte) {
	rng := rand.New(rand.NewPCG(seed, 99))
	var recs [][]byte
	for len(recs) < 8 || sumLen(recs) < 5*BlockSize {
		recs = append(recs, randomRecords(rng, 1)...)
	}
	data, _ := buildLog(t, recs)
	return recs, data
}

func sumLen(recs [][]byte) (n int) {
	for _, r := range recs {
		n += len(r)
	}
	return n
}

func TestFlippedByteBeforeLastBlockIsCorruption(t *testing.T) {
	for seed := range uint64(4) {
		recs, data := multiBlockLog(t, seed)
		lastBlockStart := (len(data) - 1) / BlockSize * BlockSize
		spans := layout(t, data)
		rng := rand.New(rand.NewPCG(seed, 1))
		for range 120 {
			pos := rng.IntN(lastBlockStart)
			damaged := bytes.Clone(data)
			damaged[pos] ^= byte(1 << rng.IntN(8))
			var span fragmentSpan
			for _, s := range spans {
				if int64(pos) >= s.start && int64(pos) < s.end {
					span = s
				}
			}
			res := readAll(damaged, "000007.log")
			if !errors.Is(res.err, base.ErrCorruption) {
				t.Fatalf("seed %d: flip at %d: err %v, torn %v; want corruption", seed, pos, res.err, res.torn)
			}
			want := fmt.Sprintf("bloomkv/record: 000007.log at offset %d:", span.start)
			if !strings.HasPrefix(res.err.Error(), want) {
				t.Fatalf("seed %d: flip at %d: error %q, want prefix %q", seed, pos, res.err, want)
			}
			checkPrefix(t, res.recs, recs)
		}
	}
}

func TestDamageInLastBlockIsTorn(t *testing.T) {
	recs, data := multiBlockLog(t, 21)
	lastBlockStart := (len(data) - 1) / BlockSize * BlockSize
	rng := rand.New(rand.NewPCG(21, 2))
	for range 100 {
		pos := lastBlockStart + rng.IntN(len(data)-lastBlockStart)
		damaged := bytes.Clone(data)
		damaged[pos] ^= 0x40
		res := readAll(damaged, "last.log")
		if res.err != nil || !res.torn {
			t.Fatalf("flip at %d in the last block: err %v torn %v", pos, res.err, res.torn)
		}
		checkPrefix(t, res.recs, recs)
	}
}

func TestAppendedZerosAndGarbageAreTorn(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	recs := [][]byte{randomRecord(rng, 100), randomRecord(rng, 40000), randomRecord(rng, 20)}
	data, _ := buildLog(t, recs)
	if BlockSize-len(data)%BlockSize < headerSize {
		t.Fatal("test log ends in the padding zone; pick other sizes")
	}
	for _, n := range []int{1, headerSize - 1, headerSize, 100, BlockSize, 3*BlockSize + 5} {
		for _, garbage := range []bool{false, true} {
			tail := make([]byte, n)
			if garbage {
				tail = randomRecord(rng, n)
			}
			res := readAll(append(bytes.Clone(data), tail...), "tail.log")
			if res.err != nil || !res.torn || res.tornOffset != int64(len(data)) || len(res.recs) != len(recs) {
				t.Fatalf("%d appended bytes (garbage=%v): err %v torn %v at %d, %d records", n, garbage, res.err, res.torn, res.tornOffset, len(res.recs))
			}
			checkPrefix(t, res.recs, recs)
		}
	}
}

func TestZeroedMiddleBlockIsCorruption(t *testing.T) {
	recs, data := multiBlockLog(t, 41)
	damaged := bytes.Clone(data)
	clear(damaged[BlockSize : 2*BlockSize])
	res := readAll(damaged, "hole.log")
	if !errors.Is(res.err, base.ErrCorruption) {
		t.Fatalf("zeroed block 1: err %v torn %v", res.err, res.torn)
	}
	checkPrefix(t, res.recs, recs)
}

// frame builds one fragment by hand.
func frame(t fragmentType, payload []byte) []byte {
	b := make([]byte, headerSize+len(payload))
	putHeader(b, t, payload)
	copy(b[headerSize:], payload)
	return b
}

// firstFilling returns a first fragment filling a block from offset 0.
func firstFilling(t fragmentType) []byte {
	return frame(t, bytes.Repeat([]byte{'f'}, maxFragmentPayload))
}

func TestHandMadeLayouts(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	full := frame(typeFull, []byte("ok"))
	cases := []struct {
		name     string
		data     []byte
		records  int
		corrupt  bool
		torn     bool
		errorHas string
	}{
		{"first at end of file", cat(full, frame(typeFirst, make([]byte, BlockSize-len(full)-headerSize))), 1, false, true, ""},
		{"first then full", cat(firstFilling(typeFirst), full), 0, true, false, "at offset 32768: record at offset 0 is missing its last fragment"},
		{"orphan middle", cat(firstFilling(typeMiddle), full), 0, true, false, "at offset 0: middle fragment without a first fragment"},
		{"orphan last", frame(typeLast, []byte("z")), 0, true, false, "at offset 0: last fragment without a first fragment"},
		{"orphan last before a block", cat(full, frame(typeLast, []byte("z")), make([]byte, BlockSize-len(full)-8), full), 1, true, false, "does not start a block"},
		{"first not filling", cat(frame(typeFirst, []byte("abc")), frame(typeLast, []byte("d")), make([]byte, BlockSize-18), full), 0, true, false, "first fragment does not fill its block"},
		{"length crosses block", cat(full, []byte{1, 2, 3, 4, 0xff, 0xff, 1}), 1, false, true, ""},
		{"non-zero padding", cat(frame(typeFull, make([]byte, BlockSize-headerSize-3)), []byte{0, 9, 0}, full), 1, true, false, "at offset 32765: non-zero block padding"},
		{"zero padding at end", cat(frame(typeFull, make([]byte, BlockSize-headerSize-3)), []byte{0, 0}), 1, false, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(tc.data, "hand.log")
			if tc.corrupt != errors.Is(res.err, base.ErrCorruption) || (!tc.corrupt && res.err != nil) {
				t.Fatalf("err = %v, want corruption=%v", res.err, tc.corrupt)
			}
			if res.torn != tc.torn || len(res.recs) != tc.records {
				t.Fatalf("torn=%v records=%d, want torn=%v records=%d", res.torn, len(res.recs), tc.torn, tc.records)
			}
			if tc.errorHas != "" && !strings.Contains(res.err.Error(), tc.errorHas) {
				t.Fatalf("error %q does not contain %q", res.err, tc.errorHas)
			}
		})
	}
}

func TestCorruptionErrorIsSticky(t *testing.T) {
	_, data := multiBlockLog(t, 51)
	binary.LittleEndian.PutUint32(data[0:4], 0xdeadbeef)
	r := NewReader(bytes.NewReader(data), "s.log")
	_, err1 := r.Next()
	_, err2 := r.Next()
	if !errors.Is(err1, base.ErrCorruption) || err1 != err2 {
		t.Fatalf("errors %v then %v", err1, err2)
	}
}
