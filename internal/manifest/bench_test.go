package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bloomkv/bloomkv/vfs"
)

// bufferFile is a vfs.File appending to a buffer.
type bufferFile struct{ buf *bytes.Buffer }

func (f *bufferFile) Write(p []byte) (int, error)       { return f.buf.Write(p) }
func (f *bufferFile) Read(p []byte) (int, error)        { return f.buf.Read(p) }
func (f *bufferFile) ReadAt([]byte, int64) (int, error) { return 0, os.ErrInvalid }
func (f *bufferFile) Close() error                      { return nil }
func (f *bufferFile) Sync() error                       { return nil }
func (f *bufferFile) Stat() (os.FileInfo, error)        { return nil, os.ErrInvalid }

var _ vfs.File = (*bufferFile)(nil)

// bigVersion has n files per level 1..6 and 8 in level 0.
func bigVersion(b *testing.B, n int) *Version {
	bl := NewBuilder(nil)
	e := &VersionEdit{}
	num := uint64(1)
	for l := range NumLevels {
		count := n
		if l == 0 {
			count = 8
		}
		for i := range count {
			lo, hi := fmt.Sprintf("key%08d", 2*i), fmt.Sprintf("key%08d", 2*i+1)
			e.NewFiles = append(e.NewFiles, NewFileEntry{l, meta(num, lo, hi, num)})
			num++
		}
	}
	if err := bl.Apply(e); err != nil {
		b.Fatal(err)
	}
	v, err := bl.Finish()
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkEditEncodeDecode(b *testing.B) {
	e := SnapshotEdit(&State{Version: bigVersion(b, 100)})
	enc := e.Encode()
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			e.Encode()
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		var d VersionEdit
		for b.Loop() {
			if err := d.Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkOverlaps(b *testing.B) {
	v := bigVersion(b, 10000)
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", rng.IntN(20000))
	}
	for _, level := range []int{0, 3} {
		b.Run(fmt.Sprintf("L%d-point", level), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := keys[i%len(keys)]
				v.Overlaps(level, k, k)
				i++
			}
		})
	}
}

// BenchmarkBuilderCompactionEdit applies a typical compaction edit (delete
// 10 files of L3, add 10) to a version of 60k files and finishes it.
func BenchmarkBuilderCompactionEdit(b *testing.B) {
	v := bigVersion(b, 10000)
	e := &VersionEdit{}
	for _, f := range v.Levels[3][100:110] {
		e.DeletedFiles = append(e.DeletedFiles, DeletedFileEntry{3, f.FileNum})
		e.NewFiles = append(e.NewFiles, NewFileEntry{3, meta(f.FileNum+1_000_000, string(f.SmallestUserKey()), string(f.LargestUserKey()), 1)})
	}
	b.ReportAllocs()
	for b.Loop() {
		bl := NewBuilder(v)
		if err := bl.Apply(e); err != nil {
			b.Fatal(err)
		}
		if _, err := bl.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}
