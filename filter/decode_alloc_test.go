package filter

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/crc32"
)

// allocated returns the bytes f allocates (TotalAlloc delta). Tests using
// it must not run in parallel with others.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// forgedChunk returns a chunk header (index 0) claiming size payload bytes,
// followed by have bytes of payload: a dump cut off, or lying about its
// length.
func forgedChunk(size uint32, have int) []byte {
	d := make([]byte, chunkHeaderLen+have)
	copy(d, chunkMagic)
	binary.LittleEndian.PutUint32(d[8:], size)
	return d
}

// forgedEnvelope returns an envelope header of kind claiming a body of
// claimed bytes, followed by have bytes.
func forgedEnvelope(kind filterKind, claimed uint64, have int) []byte {
	d := make([]byte, headerLen+have)
	copy(d, encodingMagic)
	d[4], d[5] = encodingVersion, byte(kind)
	binary.LittleEndian.PutUint64(d[8:], claimed)
	return d
}

// TestDecodersAllocateAsBytesArrive forges lengths in every decoder's
// input and measures what decoding allocates before it fails: at most the
// bounds their docs state (the streams: the bytes read plus 1 MiB, and 64
// KiB for bookkeeping), never what a length claims.
func TestDecodersAllocateAsBytesArrive(t *testing.T) {
	const have = 4 << 20 // bytes that actually arrive after a forged header
	t.Run("LoadChunks header only", func(t *testing.T) {
		// Issue 35: 12 bytes claiming MaxChunkSize allocated 67,120,128.
		in := forgedChunk(MaxChunkSize, 0)
		var err error
		got := allocated(func() { _, err = LoadChunks(bytes.NewReader(in), new(Bloom)) })
		wantCorruption(t, "LoadChunks", err)
		t.Logf("LoadChunks of a %d-byte header claiming %d: %d bytes allocated", len(in), MaxChunkSize, got)
		if got > 256<<10 {
			t.Fatalf("LoadChunks of a %d-byte input allocated %d bytes", len(in), got)
		}
	})
	t.Run("LoadChunks cut short", func(t *testing.T) {
		in := forgedChunk(MaxChunkSize, have)
		var err error
		got := allocated(func() { _, err = LoadChunks(bytes.NewReader(in), new(Bloom)) })
		wantCorruption(t, "LoadChunks", err)
		t.Logf("LoadChunks of %d bytes claiming %d: %d bytes allocated (%.2fx)", len(in), MaxChunkSize, got, float64(got)/float64(len(in)))
		if limit := uint64(have + 1<<20 + 64<<10); got > limit {
			t.Fatalf("LoadChunks of %d bytes allocated %d, more than %d", len(in), got, limit)
		}
	})
	for _, kind := range []filterKind{kindBloom, kindCounting, kindCuckoo, kindCuckooGrown, kindScalable} {
		in := forgedEnvelope(kind, 1<<40, have)
		var receiver io.ReaderFrom
		switch kind {
		case kindBloom:
			receiver = new(Bloom)
		case kindCounting:
			receiver = new(Counting)
		case kindCuckoo, kindCuckooGrown:
			receiver = new(Cuckoo)
		case kindScalable:
			receiver = new(Scalable)
		}
		t.Run("ReadFrom "+kind.String(), func(t *testing.T) {
			// Issue 35: about 4x the bytes the stream held.
			var err error
			got := allocated(func() { _, err = receiver.ReadFrom(bytes.NewReader(in)) })
			wantCorruption(t, "ReadFrom", err)
			t.Logf("ReadFrom of %d bytes claiming a %d-byte body: %d bytes allocated (%.2fx)", len(in), uint64(1<<40), got, float64(got)/float64(len(in)))
			if limit := uint64(have + 1<<20 + 64<<10); got > limit {
				t.Fatalf("ReadFrom of %d bytes allocated %d, more than %d", len(in), got, limit)
			}
		})
	}
	// The byte-slice decoders (and JSON, which hands them its bytes) tie
	// every count to the bytes present. Forge the counts that size an
	// allocation, behind a valid checksum.
	sealed := func(d []byte) []byte {
		binary.LittleEndian.PutUint64(d[8:], uint64(len(d)-headerLen))
		return binary.LittleEndian.AppendUint32(d, crc32.Checksum(d, castagnoli))
	}
	body := func(kind filterKind, fields ...uint64) []byte {
		d := forgedEnvelope(kind, 0, 0)
		for _, f := range fields {
			d = binary.LittleEndian.AppendUint64(d, f)
		}
		return sealed(append(d, make([]byte, 64<<10)...))
	}
	u32s := func(a, b uint32) uint64 { return uint64(a) | uint64(b)<<32 }
	// The most tables per input byte: 2000 tables of one bucket each, 24
	// bytes apiece (buckets, count, one word of slots).
	tiny := []uint64{u32s(2, 4), u32s(1, 2000)}
	for range 2000 {
		tiny = append(tiny, 1, 0, 0)
	}
	tiny[len(tiny)-2] = 1 // the last table's count: wrong, found only at the end
	tinyTables := sealed(binary.LittleEndian.AppendUint64(forgedEnvelope(kindCuckooGrown, 0, 0), tiny[0]))
	tinyTables = tinyTables[:len(tinyTables)-checksumLen]
	for _, f := range tiny[1:] {
		tinyTables = binary.LittleEndian.AppendUint64(tinyTables, f)
	}
	tinyTables = sealed(tinyTables)
	forged := map[string]struct {
		data     []byte
		receiver func() codec
	}{
		"bloom m=2^40":                  {body(kindBloom, 1<<40, 7), func() codec { return new(Bloom) }},
		"counting m=2^40":               {body(kindCounting, 1<<40, 7, 0), func() codec { return new(Counting) }},
		"cuckoo 2^40 buckets":           {body(kindCuckoo, 1<<40, 8, 0), func() codec { return new(Cuckoo) }},
		"grown cuckoo 2^32-1 tables":    {body(kindCuckooGrown, u32s(2, 4), u32s(1, 1<<32-1), 1, 0), func() codec { return new(Cuckoo) }},
		"grown cuckoo 2^40 buckets":     {body(kindCuckooGrown, u32s(4, 8), u32s(2, 4), 1<<40, 0), func() codec { return new(Cuckoo) }},
		"scalable 2^32-1 layers":        {body(kindScalable, 0x3f847ae147ae147b, 0x4000000000000000, 0x3fe0000000000000, 1, 1<<32-1), func() codec { return new(Scalable) }},
		"scalable initial 2^40 (m=)":    {body(kindScalable, 0x3f847ae147ae147b, 0x4000000000000000, 0x3fe0000000000000, 1<<40, 1), func() codec { return new(Scalable) }},
		"counting count above m bits":   {body(kindCounting, 64, 7, 1<<62), func() codec { return new(Counting) }},
		"grown cuckoo 2000 tiny tables": {tinyTables, func() codec { return new(Cuckoo) }},
	}
	for name, f := range forged {
		t.Run("UnmarshalBinary "+name, func(t *testing.T) {
			var err error
			got := allocated(func() { err = f.receiver().UnmarshalBinary(f.data) })
			wantCorruption(t, name, err)
			t.Logf("UnmarshalBinary of %d bytes: %d bytes allocated (%.2fx)", len(f.data), got, float64(got)/float64(len(f.data)))
			if limit := uint64(8*len(f.data) + 64<<10); got > limit {
				t.Fatalf("UnmarshalBinary of %d bytes allocated %d, more than %d", len(f.data), got, limit)
			}
			js, _ := json.Marshal(f.data)
			got = allocated(func() { err = json.Unmarshal(js, f.receiver()) })
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("json.Unmarshal: %v, want ErrCorruption", err)
			}
			if limit := uint64(8*len(js) + 64<<10); got > limit {
				t.Fatalf("json.Unmarshal of %d bytes allocated %d, more than %d", len(js), got, limit)
			}
		})
	}
}
