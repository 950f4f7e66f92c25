package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// memFile is a vfs.File over a byte slice, enough for the Writer.
type memFile struct {
	data    []byte
	syncs   int
	closed  bool
	failAt  int   // fail a Write once len(data) would exceed failAt (if > 0)
	failErr error // returned by the failing Write
}

func (f *memFile) Write(p []byte) (int, error) {
	if f.failAt > 0 && len(f.data)+len(p) > f.failAt {
		n := f.failAt - len(f.data)
		f.data = append(f.data, p[:n]...)
		return n, f.failErr
	}
	f.data = append(f.data, p...)
	return len(p), nil
}
func (f *memFile) Read(p []byte) (int, error)              { return 0, io.EOF }
func (f *memFile) ReadAt(p []byte, off int64) (int, error) { return 0, io.EOF }
func (f *memFile) Close() error                            { f.closed = true; return nil }
func (f *memFile) Sync() error                             { f.syncs++; return nil }
func (f *memFile) Stat() (os.FileInfo, error)              { return nil, errors.New("memFile: no Stat") }

// buildLog writes recs to a fresh in-memory log and returns its bytes and
// each record's start offset.
func buildLog(t testing.TB, recs [][]byte) ([]byte, []int64) {
	t.Helper()
	f := &memFile{}
	w := NewWriter(f)
	offsets := make([]int64, len(recs))
	for i, r := range recs {
		off, err := w.AddRecord(r)
		if err != nil {
			t.Fatalf("AddRecord %d: %v", i, err)
		}
		offsets[i] = off
	}
	if w.Size() != int64(len(f.data)) {
		t.Fatalf("Size() = %d, file holds %d bytes", w.Size(), len(f.data))
	}
	return f.data, offsets
}

// readResult is everything a Reader produced for one input.
type readResult struct {
	recs       [][]byte
	offsets    []int64
	err        error // nil when reading ended with io.EOF
	torn       bool
	tornOffset int64
}

func readAll(data []byte, name string) readResult {
	return readWith(NewReader(bytes.NewReader(data), name))
}

// readWith reads every record r yields and returns what it produced.
func readWith(r *Reader) readResult {
	var res readResult
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			res.err = err
			break
		}
		res.recs = append(res.recs, bytes.Clone(rec))
		res.offsets = append(res.offsets, r.RecordOffset())
	}
	res.torn, res.tornOffset = r.TornTail()
	return res
}

// checkPrefix fails unless got is a prefix of want, record by record.
func checkPrefix(t testing.TB, got, want [][]byte) {
	t.Helper()
	if len(got) > len(want) {
		t.Fatalf("read %d records, only %d were written", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: got %d bytes %.16x..., want %d bytes %.16x...", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}

// randomRecord returns a record of n pseudo-random bytes.
func randomRecord(rng *rand.Rand, n int) []byte {
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b[:n:n]
}

// randomRecords returns count records of sizes mixing small, block-sized and
// multi-block lengths.
func randomRecords(rng *rand.Rand, count int) [][]byte {
	recs := make([][]byte, count)
	for i := range recs {
		var n int
		switch rng.IntN(10) {
		case 0:
			n = 0
		case 1:
			n = BlockSize - headerSize + rng.IntN(15) - 7
		case 2:
			n = BlockSize + rng.IntN(3*BlockSize)
		default:
			n = rng.IntN(3000)
		}
		recs[i] = randomRecord(rng, n)
	}
	return recs
}

// fragmentSpan is one fragment (or padding run) of an intact log.
type fragmentSpan struct {
	start, end int64 // [start, end) in the file
	padding    bool
}

// layout walks an intact log and lists its fragments and padding.
func layout(t testing.TB, data []byte) []fragmentSpan {
	t.Helper()
	var spans []fragmentSpan
	pos := 0
	for pos < len(data) {
		left := BlockSize - pos%BlockSize
		if left < headerSize {
			end := min(pos+left, len(data))
			spans = append(spans, fragmentSpan{int64(pos), int64(end), true})
			pos = end
			continue
		}
		h := parseHeader(data[pos:])
		end := pos + headerSize + h.length
		if !h.typ.valid() || end > len(data) {
			t.Fatalf("layout: bad fragment at %d", pos)
		}
		spans = append(spans, fragmentSpan{int64(pos), int64(end), false})
		pos = end
	}
	return spans
}
