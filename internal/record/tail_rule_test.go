package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// shortLog is a log of small records that all sit in one (the last) block:
// the case where the block-boundary rule alone saw no record after damage.
func shortLog(t *testing.T) ([][]byte, []byte, []int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	var recs [][]byte
	for i := range 12 {
		recs = append(recs, randomRecord(rng, 5+rng.IntN(60)+i))
	}
	data, offsets := buildLog(t, recs)
	if len(data) >= BlockSize {
		t.Fatalf("short log is %d bytes", len(data))
	}
	return recs, data, offsets
}

// TestFlipEveryByteOfShortLog flips each byte of a one-block log in turn:
// damage in any record but the last must be corruption naming the offset of
// the damaged record (an intact record follows it); damage in the last
// record drops exactly that record as a torn tail.
func TestFlipEveryByteOfShortLog(t *testing.T) {
	recs, data, offsets := shortLog(t)
	last := offsets[len(offsets)-1]
	for pos := range data {
		damaged := bytes.Clone(data)
		damaged[pos] ^= 0x01
		res := readAll(damaged, "short.log")
		rec := 0 // the record holding pos
		for rec+1 < len(offsets) && offsets[rec+1] <= int64(pos) {
			rec++
		}
		if int64(pos) >= last {
			if res.err != nil || !res.torn || res.tornOffset != last || len(res.recs) != len(recs)-1 {
				t.Fatalf("flip at %d (last record): err %v torn %v at %d, %d records; want the last record dropped as torn",
					pos, res.err, res.torn, res.tornOffset, len(res.recs))
			}
			checkPrefix(t, res.recs, recs)
			continue
		}
		var ce *CorruptionError
		if !errors.As(res.err, &ce) || !errors.Is(res.err, errCorruptionForTest()) {
			t.Fatalf("flip at %d (record %d of %d): err %v, %d records; want corruption", pos, rec, len(recs), res.err, len(res.recs))
		}
		if ce.Offset != offsets[rec] || !ce.IntactAfter {
			t.Fatalf("flip at %d: corruption at offset %d (intact after %v), want %d", pos, ce.Offset, ce.IntactAfter, offsets[rec])
		}
		if len(res.recs) != rec {
			t.Fatalf("flip at %d: %d records before the error, want %d", pos, len(res.recs), rec)
		}
	}
}

// TestOverwrittenStartIsCorruption: the first 32 bytes of a log overwritten
// with 0xff lose the first records, but later records are intact, so the
// log is corrupt, not torn.
func TestOverwrittenStartIsCorruption(t *testing.T) {
	_, data, _ := shortLog(t)
	damaged := bytes.Clone(data)
	for i := range 32 {
		damaged[i] = 0xff
	}
	res := readAll(damaged, "start.log")
	var ce *CorruptionError
	if !errors.As(res.err, &ce) || ce.Offset != 0 || len(res.recs) != 0 {
		t.Fatalf("err %v, %d records; want corruption at offset 0", res.err, len(res.recs))
	}
	// A log that is nothing but such garbage has no record after it: torn.
	res = readAll(bytes.Repeat([]byte{0xff}, 32), "garbage.log")
	if res.err != nil || !res.torn || res.tornOffset != 0 {
		t.Fatalf("all-garbage log: err %v torn %v", res.err, res.torn)
	}
}

// readStrict reads data with a strict reader.
func readStrict(data []byte) (int, error) {
	r := NewReader(bytes.NewReader(data), "strict.log")
	r.SetStrict()
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// TestStrictReaderHasNoTornTail: a strict reader reads a clean log whole and
// reports every truncation that is not at a record end, and appended zeros,
// as corruption.
func TestStrictReaderHasNoTornTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := [][]byte{randomRecord(rng, 10), randomRecord(rng, 40000), randomRecord(rng, 3)}
	data, offsets := buildLog(t, recs)
	ends := recordEnds(t, data, offsets)
	if n, err := readStrict(data); err != nil || n != len(recs) {
		t.Fatalf("clean log: %d records, %v", n, err)
	}
	isEnd := map[int64]bool{0: true}
	for _, e := range ends {
		isEnd[e] = true
	}
	for cut := 0; cut < len(data); cut += 97 {
		n, err := readStrict(data[:cut])
		if isEnd[int64(cut)] {
			if err != nil {
				t.Fatalf("cut at record end %d: %v", cut, err)
			}
			continue
		}
		if !errors.Is(err, errCorruptionForTest()) {
			t.Fatalf("cut at %d: %d records, err %v; want corruption", cut, n, err)
		}
	}
	if _, err := readStrict(append(bytes.Clone(data), make([]byte, 20)...)); !errors.Is(err, errCorruptionForTest()) {
		t.Fatalf("appended zeros: %v; want corruption", err)
	}
}

// TestScanFindsRecordDeepAfterDamage: in a multi-block log, damage to any
// record but the last is corruption, found by the scan however far the next
// intact fragment lies.
func TestScanFindsRecordDeepAfterDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var recs [][]byte
	for i := range 400 {
		recs = append(recs, randomRecord(rng, 100+i*37%5000))
	}
	data, offsets := buildLog(t, recs)
	for _, victim := range []int{0, 1, 200, len(recs) - 2} {
		damaged := bytes.Clone(data)
		damaged[offsets[victim]+3] ^= 0xff
		res := readAll(damaged, fmt.Sprintf("deep%d.log", victim))
		if !errors.Is(res.err, errCorruptionForTest()) || len(res.recs) != victim {
			t.Fatalf("damage in record %d: err %v after %d records; want corruption after %d", victim, res.err, len(res.recs), victim)
		}
	}
}
