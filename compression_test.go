package bloomkv

import (
	"testing"

	"github.com/bloomkv/bloomkv/sstable"
)

// TestCompressionReachesTables checks that Options.Compression goes to the
// tables unconverted (bloomkv.Compression is sstable.Compression) and how
// it lands on disk: the zero value writes snappy, and the block types in
// the trailers are those tables have always had (0 raw, 1 snappy; zstd
// took 2).
func TestCompressionReachesTables(t *testing.T) {
	var zero Compression
	if zero != SnappyCompression || zero.String() != "snappy" || NoCompression.String() != "none" {
		t.Fatalf("zero Compression is %v; NoCompression is %v", zero, NoCompression)
	}
	for _, tc := range []struct {
		c        Compression
		wantType byte // trailer type of the last data block
	}{{zero, 1}, {SnappyCompression, 1}, {NoCompression, 0}, {ZstdCompression, 2}} {
		fs, table := buildOneTableDB(t, tc.c)
		b := readMemFile(t, fs, "/db/"+table)
		l := parseTableLayout(t, b)
		if typ := b[l.dataEnd-tableTrailerLen]; typ != tc.wantType {
			t.Errorf("%v: last data block has type %d, want %d", tc.c, typ, tc.wantType)
		}
		f, err := fs.Open("/db/" + table)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sstable.Open(f, table, 0, int64(len(b)), sstable.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Properties().Compression; got != tc.c {
			t.Errorf("%v: table properties say %v", tc.c, got)
		}
		r.Close()
	}
}
