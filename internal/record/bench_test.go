package record

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// discardFile is a vfs.File that drops what it is given.
type discardFile struct{ memFile }

func (discardFile) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkAddRecord(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			w := NewWriter(&discardFile{})
			rec := bytes.Repeat([]byte{'v'}, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.AddRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReaderNext(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			rec := bytes.Repeat([]byte{'v'}, size)
			recs := make([][]byte, (4<<20)/size)
			for i := range recs {
				recs[i] = rec
			}
			data, _ := buildLog(b, recs)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r := NewReader(bytes.NewReader(data), "bench.log")
				n := 0
				for {
					_, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != len(recs) {
					b.Fatalf("read %d records", n)
				}
			}
		})
	}
}
