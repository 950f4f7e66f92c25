package bloomkv

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/testutil"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/bloomkv/bloomkv/vfs"
)

// TestLevelIterDataDriven runs testdata/level_iter: the tables of one level
// described as text and written to an in-memory file system, then
// positioning commands on a levelIter over them, each printed with the
// entry and file it landed on. The commands are documented at the top of
// that file. Run with -rewrite to regenerate the expected outputs.
func TestLevelIterDataDriven(t *testing.T) {
	const dir = "/db"
	var (
		fs    *vfs.MemFS
		files []*manifest.FileMetadata
	)
	datadriven.RunTest(t, "testdata/level_iter", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			blockSize := 0 // the writer's default
			d.MaybeScanArgs(t, "block-size", &blockSize)
			fs = vfs.NewMem()
			if err := fs.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			e := &manifest.VersionEdit{}
			var b strings.Builder
			for line := range strings.Lines(d.Input) {
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				f, n, err := ldWriteTable(fs, dir, line, blockSize)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				e.NewFiles = append(e.NewFiles, manifest.NewFileEntry{Level: 1, Meta: f})
				plural := "entries"
				if n == 1 {
					plural = "entry"
				}
				fmt.Fprintf(&b, "%06d: %s - %s, %d %s\n", f.FileNum, ldFormatKey(f.Smallest), ldFormatKey(f.Largest), n, plural)
			}
			// The files must make a valid level: sorted, user-key ranges
			// disjoint. The builder sorts and checks them as the engine's.
			mb := manifest.NewBuilder(nil)
			if err := mb.Apply(e); err != nil {
				d.Fatalf(t, "%v", err)
			}
			v, err := mb.Finish()
			if err != nil {
				files = nil
				return err.Error()
			}
			files = v.Levels[1]
			if b.Len() == 0 {
				return "no files"
			}
			return b.String()

		case "remove":
			var num uint64
			d.ScanArgs(t, "file", &num)
			if err := fs.Remove(fs.PathJoin(dir, base.MakeFilename(base.FileTypeTable, num))); err != nil {
				d.Fatalf(t, "%v", err)
			}
			return fmt.Sprintf("removed %06d", num)

		case "corrupt":
			// Flip the table's first byte, inside its first data block: the
			// table still opens (footer, index and properties are intact),
			// but reading that block fails its checksum.
			var num uint64
			d.ScanArgs(t, "file", &num)
			if err := ldFlipFirstByte(fs, fs.PathJoin(dir, base.MakeFilename(base.FileTypeTable, num))); err != nil {
				d.Fatalf(t, "%v", err)
			}
			return fmt.Sprintf("corrupted %06d", num)

		case "iter":
			// A fresh table cache per command, over a file system that
			// records opens, so the output shows which tables the walk
			// opened.
			lfs := &ldOpenLogFS{FS: fs}
			tc := sstable.NewTableCache(lfs, dir, 16, sstable.ReaderOptions{})
			it := newLevelIter(tc, files)
			out, err := testutil.RunIterOps(d.Input, it, func(k, v []byte) string {
				s := ldFormatKey(k)
				if base.Trailer(k)&0xff == uint64(base.KindSet) {
					s += ":" + string(v)
				}
				return s + fmt.Sprintf(" [%06d]", it.files[it.index].FileNum)
			}, ldMaskChecksums)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			if err := it.Close(); err != nil {
				out += fmt.Sprintf("close: %s\n", ldMaskChecksums(err))
			}
			if err := tc.Close(); err != nil {
				t.Fatal(err)
			}
			if len(lfs.opened) == 0 {
				lfs.opened = []string{"none"}
			}
			return out + "opened: " + strings.Join(lfs.opened, " ") + "\n"

		default:
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		}
	})
}

// ldWriteTable writes the table a define line describes,
// "<num>: <entry> <entry> ...", each entry <key>#<seq>,SET:<value> or
// <key>#<seq>,DEL in increasing internal-key order, and returns its
// metadata and entry count.
func ldWriteTable(fs vfs.FS, dir, line string, blockSize int) (*manifest.FileMetadata, int, error) {
	numStr, rest, ok := strings.Cut(line, ":")
	if !ok {
		return nil, 0, fmt.Errorf("table line %q: want <num>: <entries>", line)
	}
	num, err := strconv.ParseUint(strings.TrimSpace(numStr), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("table line %q: %v", line, err)
	}
	f, err := fs.Create(fs.PathJoin(dir, base.MakeFilename(base.FileTypeTable, num)))
	if err != nil {
		return nil, 0, err
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{BlockSize: blockSize, FileNum: num})
	n := 0
	for _, tok := range strings.Fields(rest) {
		k, v, err := ldParseEntry(tok)
		if err != nil {
			_ = w.Abort()
			return nil, 0, fmt.Errorf("table line %q: %v", line, err)
		}
		if err := w.Add(k, v); err != nil {
			_ = w.Abort()
			return nil, 0, fmt.Errorf("table line %q: %v", line, err)
		}
		n++
	}
	m, err := w.Finish()
	if err != nil {
		return nil, 0, err
	}
	return &manifest.FileMetadata{
		FileNum: num, Size: m.Size,
		Smallest: m.Smallest, Largest: m.Largest,
		SmallestSeq: m.SmallestSeq, LargestSeq: m.LargestSeq,
	}, n, nil
}

func ldFlipFirstByte(fs vfs.FS, path string) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return err
	}
	data[0] ^= 0xff
	w, err := fs.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Sync(); err != nil {
		return err
	}
	return w.Close()
}

// checksumValues matches the checksums a block-checksum error quotes.
var checksumValues = regexp.MustCompile(`computed 0x[0-9a-f]+, stored 0x[0-9a-f]+`)

// ldMaskChecksums renders err with the checksum values of a damaged block
// masked: they depend on the table format's bytes, which are not what
// testdata/level_iter is about.
func ldMaskChecksums(err error) string {
	return checksumValues.ReplaceAllString(err.Error(), "computed 0x..., stored 0x...")
}

// ldOpenLogFS records the base names of the files opened for reading.
type ldOpenLogFS struct {
	vfs.FS
	opened []string
}

func (fs *ldOpenLogFS) Open(name string) (vfs.File, error) {
	i := strings.LastIndexByte(name, '/')
	fs.opened = append(fs.opened, name[i+1:])
	return fs.FS.Open(name)
}

// ldParseEntry parses <key>#<seq>,SET:<value> or <key>#<seq>,DEL.
func ldParseEntry(s string) (ikey, value []byte, err error) {
	k, v, _ := strings.Cut(s, ":")
	ikey, err = testutil.ParseKey(k, false)
	if err != nil {
		return nil, nil, err
	}
	if base.Trailer(ikey)&0xff == uint64(base.KindDelete) && v != "" {
		return nil, nil, fmt.Errorf("entry %q: a tombstone has no value", s)
	}
	return ikey, []byte(v), nil
}

func ldFormatKey(ikey []byte) string {
	ukey, seq, kind, ok := base.ParseInternalKey(ikey)
	if !ok {
		return fmt.Sprintf("malformed(%x)", ikey)
	}
	return fmt.Sprintf("%s#%d,%s", ukey, seq, kind)
}
