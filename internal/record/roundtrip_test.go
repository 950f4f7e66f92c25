package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

func TestGoldenBytes(t *testing.T) {
	data, offsets := buildLog(t, [][]byte{[]byte("bloom"), {}})
	want := []byte{
		0xd1, 0x80, 0x30, 0xfb, 0x05, 0x00, 0x01, 'b', 'l', 'o', 'o', 'm',
		0x9f, 0x33, 0x14, 0xdd, 0x00, 0x00, 0x01,
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("log bytes\n got % x\nwant % x", data, want)
	}
	if offsets[0] != 0 || offsets[1] != 12 {
		t.Fatalf("offsets = %v, want [0 12]", offsets)
	}

	// The split record of the worked example.
	big := bytes.Repeat([]byte{0xab}, 40000)
	data, _ = buildLog(t, [][]byte{big})
	if len(data) != BlockSize+headerSize+7239 {
		t.Fatalf("40000-byte record: log is %d bytes", len(data))
	}
	first, last := parseHeader(data), parseHeader(data[BlockSize:])
	if first.typ != typeFirst || first.length != 32761 {
		t.Fatalf("first fragment: %+v", first)
	}
	if last.typ != typeLast || last.length != 7239 {
		t.Fatalf("last fragment: %+v", last)
	}
}

// sizesToTry are record lengths around the interesting boundaries.
var sizesToTry = []int{
	0, 1, 2, 100,
	maxFragmentPayload - 1, maxFragmentPayload, maxFragmentPayload + 1,
	BlockSize - 1, BlockSize, BlockSize + 1,
	2*maxFragmentPayload - 1, 2 * maxFragmentPayload, 2*maxFragmentPayload + 1,
	100 << 10, 300<<10 + 17,
}

func TestRoundTripSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Shift every size through several start positions inside a block,
	// including those that leave 0..8 bytes before the boundary.
	leads := []int{0, 1, maxFragmentPayload - headerSize - 1}
	for tail := 0; tail <= headerSize+1; tail++ {
		leads = append(leads, BlockSize-2*headerSize-tail)
	}
	for _, lead := range leads {
		for _, size := range sizesToTry {
			recs := [][]byte{randomRecord(rng, lead), randomRecord(rng, size), randomRecord(rng, 3)}
			data, offsets := buildLog(t, recs)
			res := readAll(data, "rt.log")
			if res.err != nil || res.torn {
				t.Fatalf("lead %d size %d: err %v torn %v", lead, size, res.err, res.torn)
			}
			if len(res.recs) != len(recs) {
				t.Fatalf("lead %d size %d: read %d records, want %d", lead, size, len(res.recs), len(recs))
			}
			checkPrefix(t, res.recs, recs)
			for i := range offsets {
				if res.offsets[i] != offsets[i] {
					t.Fatalf("lead %d size %d: record %d offset %d, writer said %d", lead, size, i, res.offsets[i], offsets[i])
				}
			}
		}
	}
}

func TestRoundTripRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		recs := randomRecords(rng, 1+rng.IntN(60))
		data, _ := buildLog(t, recs)
		res := readAll(data, "random.log")
		if res.err != nil || res.torn || len(res.recs) != len(recs) {
			t.Fatalf("seed %d: err %v torn %v, %d of %d records", seed, res.err, res.torn, len(res.recs), len(recs))
		}
		checkPrefix(t, res.recs, recs)
	}
}

func TestLayoutRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data, _ := buildLog(t, randomRecords(rng, 200))
	for _, s := range layout(t, data) {
		if s.padding {
			if s.end%BlockSize != 0 && s.end != int64(len(data)) {
				t.Fatalf("padding [%d,%d) does not end at a block boundary", s.start, s.end)
			}
			for _, b := range data[s.start:s.end] {
				if b != 0 {
					t.Fatalf("padding [%d,%d) is not zero", s.start, s.end)
				}
			}
			continue
		}
		if s.start/BlockSize != (s.end-1)/BlockSize && s.end-s.start > headerSize {
			t.Fatalf("fragment [%d,%d) crosses a block boundary", s.start, s.end)
		}
		switch parseHeader(data[s.start:]).typ {
		case typeFirst, typeMiddle:
			if s.end%BlockSize != 0 {
				t.Fatalf("first/middle fragment [%d,%d) does not fill its block", s.start, s.end)
			}
		}
	}
}

func TestEmptyLog(t *testing.T) {
	res := readAll(nil, "empty.log")
	if res.err != nil || res.torn || len(res.recs) != 0 {
		t.Fatalf("empty log: %+v", res)
	}
}

func TestNextAfterEndKeepsReturningEOF(t *testing.T) {
	data, _ := buildLog(t, [][]byte{[]byte("a")})
	r := NewReader(bytes.NewReader(data), "x.log")
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("Next after end = %v, want io.EOF", err)
		}
	}
}

func TestWriterSyncSizeClose(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	if _, err := w.AddRecord([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil || f.syncs != 1 {
		t.Fatalf("Sync: %v, %d syncs", err, f.syncs)
	}
	if w.Size() != headerSize+5 {
		t.Fatalf("Size = %d", w.Size())
	}
	if err := w.Close(); err != nil || !f.closed || f.syncs != 1 {
		t.Fatalf("Close: %v closed=%v syncs=%d", err, f.closed, f.syncs)
	}
	if _, err := w.AddRecord(nil); err == nil {
		t.Fatal("AddRecord after Close succeeded")
	}
	if err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
}

func TestWriterErrorIsSticky(t *testing.T) {
	boom := errors.New("disk full")
	f := &memFile{failAt: 100, failErr: boom}
	w := NewWriter(f)
	if _, err := w.AddRecord(make([]byte, 50)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddRecord(make([]byte, 50)); !errors.Is(err, boom) {
		t.Fatalf("failing write: %v", err)
	}
	if w.Size() != 100 {
		t.Fatalf("Size after short write = %d, want 100", w.Size())
	}
	f.failAt = 0
	if _, err := w.AddRecord([]byte("x")); !errors.Is(err, boom) {
		t.Fatalf("AddRecord after failure = %v, want the sticky error", err)
	}
	if err := w.Sync(); !errors.Is(err, boom) {
		t.Fatalf("Sync after failure = %v", err)
	}
	// What did reach the file reads as the first record plus a torn tail.
	res := readAll(f.data, "short.log")
	if res.err != nil || len(res.recs) != 1 || !res.torn || res.tornOffset != headerSize+50 {
		t.Fatalf("reading a short write: %+v", res)
	}
}

func TestHugeRecordIsWrittenInChunks(t *testing.T) {
	f := &memFile{}
	w := NewWriter(f)
	rec := randomRecord(rand.New(rand.NewPCG(5, 5)), 3*writeChunk+12345)
	if _, err := w.AddRecord(rec); err != nil {
		t.Fatal(err)
	}
	if cap(w.buf) > 2*writeChunk {
		t.Fatalf("writer keeps a %d-byte buffer", cap(w.buf))
	}
	res := readAll(f.data, "huge.log")
	if res.err != nil || len(res.recs) != 1 || !bytes.Equal(res.recs[0], rec) {
		t.Fatalf("huge record did not round trip: err %v, %d records", res.err, len(res.recs))
	}
}

// errReader returns data, then an I/O error.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadErrorIsNotCorruption(t *testing.T) {
	data, _ := buildLog(t, [][]byte{make([]byte, BlockSize), []byte("b")})
	boom := errors.New("EIO")
	r := NewReader(&errReader{data: data[:BlockSize], err: boom}, "eio.log")
	_, err := r.Next()
	if !errors.Is(err, boom) {
		t.Fatalf("Next = %v, want the I/O error", err)
	}
	if errors.Is(err, errCorruptionForTest()) {
		t.Fatalf("an I/O error was reported as corruption: %v", err)
	}
	want := fmt.Sprintf("eio.log: read at offset %d", BlockSize)
	if !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}
