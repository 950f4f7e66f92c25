package record

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// readReserved reads data with AllowReservedTail (and SetStrict when
// strict) and returns what the reader produced, with Reserved's answer.
func readReserved(data []byte, strict bool) (res readResult, reserved bool, at int64) {
	r := NewReader(bytes.NewReader(data), "reserved.log")
	r.AllowReservedTail()
	if strict {
		r.SetStrict()
	}
	res = readWith(r)
	reserved, at = r.Reserved()
	return res, reserved, at
}

// TestReservedTail: a log whose records are followed by zeros to the end
// of the file (a mapped log cut short by a crash) reads cleanly to its last
// record when reserved space is allowed -- strict or not, after a record
// ending anywhere in a block, or with no record at all -- and is reported
// as reserved from the end of the last record, not as a torn tail.
func TestReservedTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := randomRecords(rng, 40) // several blocks, split records included
	data, _ := buildLog(t, recs)
	for _, cut := range []int{0, 1, 7, len(recs) / 2, len(recs)} {
		prefix, _ := buildLog(t, recs[:cut])
		for _, tail := range []int{1, 6, 7, 100, BlockSize, 3*BlockSize + 5} {
			for _, strict := range []bool{false, true} {
				file := append(bytes.Clone(prefix), make([]byte, tail)...)
				res, reserved, at := readReserved(file, strict)
				if res.err != nil || res.torn || !reserved || at != int64(len(prefix)) || len(res.recs) != cut {
					t.Fatalf("%d records + %d zeros (strict %v): err %v torn %v reserved %v at %d, %d records; want all %d records, reserved at %d",
						cut, tail, strict, res.err, res.torn, reserved, at, len(res.recs), cut, len(prefix))
				}
				checkPrefix(t, res.recs, recs)
			}
		}
	}
	// Without AllowReservedTail the same zeros are a torn tail, and
	// corruption to a strict reader: reserved space is the newest log's
	// privilege alone.
	file := append(bytes.Clone(data), make([]byte, 100)...)
	if res := readAll(file, "plain.log"); res.err != nil || !res.torn || res.tornOffset != int64(len(data)) {
		t.Fatalf("plain reader: err %v torn %v at %d; want a torn tail at %d", res.err, res.torn, res.tornOffset, len(data))
	}
	r := NewReader(bytes.NewReader(file), "strict.log")
	r.SetStrict()
	var err error
	for err == nil {
		_, err = r.Next()
	}
	if !errors.Is(err, errCorruptionForTest()) {
		t.Fatalf("strict reader without reserved space: %v, want corruption", err)
	}
}

// TestReservedTailNeedsZeros: anything but zeros after the last record is
// judged as before -- a torn tail when nothing intact follows, corruption
// when something does or the reader is strict -- and a record cut short
// before zeros is a torn record, never reserved space.
func TestReservedTailNeedsZeros(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	recs := randomRecords(rng, 20)
	data, offsets := buildLog(t, recs)
	last := offsets[len(offsets)-1]

	// A non-zero byte anywhere in the zeros: a torn tail (non-strict),
	// corruption (strict).
	for _, pos := range []int{0, 1, 500, 40000} {
		file := append(bytes.Clone(data), make([]byte, 50000)...)
		file[len(data)+pos] = 0x5a
		res, reserved, _ := readReserved(file, false)
		if res.err != nil || !res.torn || reserved || res.tornOffset != int64(len(data)) || len(res.recs) != len(recs) {
			t.Fatalf("garbage at +%d: err %v torn %v reserved %v, %d records; want a torn tail after every record", pos, res.err, res.torn, reserved, len(res.recs))
		}
		res, reserved, _ = readReserved(file, true)
		if !errors.Is(res.err, errCorruptionForTest()) || reserved {
			t.Fatalf("garbage at +%d, strict: err %v reserved %v; want corruption", pos, res.err, reserved)
		}
	}

	// Zeros, then an intact record: the zeros are damage inside the log.
	more, _ := buildLog(t, recs[:1])
	file := append(bytes.Clone(data), make([]byte, BlockSize-len(data)%BlockSize)...) // to a block boundary
	file = append(file, more...)
	file = append(file, make([]byte, 1000)...)
	res, reserved, _ := readReserved(file, false)
	var ce *CorruptionError
	if !errors.As(res.err, &ce) || !ce.IntactAfter || reserved {
		t.Fatalf("zeros before an intact record: err %v reserved %v; want corruption with intact records after", res.err, reserved)
	}

	// The last record cut short, then zeros: the record is torn (dropped),
	// not kept, and the strict reader calls it corruption.
	for _, keep := range []int64{last + 3, last + 9} {
		file := append(bytes.Clone(data[:keep]), make([]byte, int(int64(len(data))-keep)+4096)...)
		res, reserved, _ := readReserved(file, false)
		if res.err != nil || !res.torn || reserved || res.tornOffset != last || len(res.recs) != len(recs)-1 {
			t.Fatalf("last record cut at %d: err %v torn %v at %d reserved %v, %d records; want the last record torn",
				keep, res.err, res.torn, res.tornOffset, reserved, len(res.recs))
		}
		if res, _, _ := readReserved(file, true); !errors.Is(res.err, errCorruptionForTest()) {
			t.Fatalf("last record cut at %d, strict: %v, want corruption", keep, res.err)
		}
	}

	// A record split over blocks, cut after its first fragment, then
	// zeros: the zeros begin inside a record, so they are not reserved
	// space even though every byte after the fragment is zero.
	big := append(recs[:3:3], randomRecord(rng, 2*BlockSize))
	data, offsets = buildLog(t, big)
	firstEnd := (offsets[3]/BlockSize + 1) * BlockSize // the first fragment fills its block
	file = append(bytes.Clone(data[:firstEnd]), make([]byte, 3*BlockSize)...)
	res, reserved, _ = readReserved(file, false)
	if res.err != nil || !res.torn || reserved || res.tornOffset != offsets[3] || len(res.recs) != 3 {
		t.Fatalf("split record cut after its first fragment: err %v torn %v at %d reserved %v, %d records; want it torn at %d",
			res.err, res.torn, res.tornOffset, reserved, len(res.recs), offsets[3])
	}
}
