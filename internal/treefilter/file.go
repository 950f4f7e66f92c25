package treefilter

// The saved filter, the file TREEFILTER: encoding, decoding and the check
// that a decoded filter describes a version. The byte layout is in
// docs/formats.md ("Tree filter"); these constants are wire values. Also
// the file's safe write (a temporary file renamed over it) and its read.

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/vfs"
	"github.com/klauspost/crc32"
)

// FileName is the saved filter's file name in the database directory.
const FileName = "TREEFILTER"

const (
	magic = "BKVTREEF"
	// formatVersion 2 adds each table's tag (the level its entries
	// carry) and the level code of the slots. A file of another version
	// is rejected.
	formatVersion = 2
	headerLen     = 8 + 4 + 4 + 8 + 8 + 8 + 4 // magic, version, shape, code, buckets, entries, tables
	tableLen      = 8 + 1 + 1 + 1             // file number, level, range deletions, tag
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the saved form of t, describing the tables of v (the
// version t was made for).
func (t *Filter) Encode(v *manifest.Version) []byte {
	nt := 0
	for l := range v.Levels {
		nt += len(v.Levels[l])
	}
	buf := make([]byte, 0, headerLen+nt*tableLen+len(t.buckets)*8+4)
	buf = append(buf, magic...)
	buf = binary.LittleEndian.AppendUint32(buf, formatVersion)
	buf = append(buf, slotBits, slots, maxCode, 0)
	buf = append(buf, t.code.lens[:]...)
	buf = append(buf, make([]byte, 8-len(t.code.lens))...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(t.buckets)))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(t.entries))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(nt))
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			buf = binary.LittleEndian.AppendUint64(buf, f.FileNum)
			rd := byte(0)
			if rl, ok := t.rangeDelFiles[f.FileNum]; ok && rl == l {
				rd = 1
			}
			buf = append(buf, byte(l), rd, byte(t.TagOf(f.FileNum, l)))
		}
	}
	for _, b := range t.buckets {
		buf = binary.LittleEndian.AppendUint64(buf, b)
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// Table is one table a saved filter names.
type Table struct {
	FileNum   uint64
	Level     int
	RangeDels bool // it holds range tombstones
	Tag       int  // the level its entries carry
}

// Decode parses a saved filter. Damage of any kind (a short file, a
// checksum mismatch, a shape this build does not use, counts that do not
// add up) is an error wrapping ErrCorruption naming name and the offset.
func Decode(name string, data []byte) (*Filter, []Table, error) {
	bad := func(off int, what string) error {
		return base.CorruptionErrorf("bloomkv: tree filter %s: offset %d: %s", name, off, what)
	}
	if len(data) < headerLen+4 {
		return nil, nil, bad(0, fmt.Sprintf("%d bytes, shorter than a header", len(data)))
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(body):]); got != want {
		return nil, nil, bad(len(body), fmt.Sprintf("checksum mismatch (stored %#08x, computed %#08x)", want, got))
	}
	if string(body[:8]) != magic {
		return nil, nil, bad(0, "bad magic")
	}
	if v := binary.LittleEndian.Uint32(body[8:]); v != formatVersion {
		return nil, nil, bad(8, fmt.Sprintf("format version %d, want %d", v, formatVersion))
	}
	if body[12] != slotBits || body[13] != slots || body[14] != maxCode || body[15] != 0 {
		return nil, nil, bad(12, fmt.Sprintf("slot shape %v, want [%d %d %d 0]", body[12:16], slotBits, slots, maxCode))
	}
	var lens [manifest.NumLevels]uint8
	copy(lens[:], body[16:])
	code, ok := newCode(lens)
	if !ok || body[16+manifest.NumLevels] != 0 {
		return nil, nil, bad(16, fmt.Sprintf("bad level code lengths %v", body[16:24]))
	}
	nb := binary.LittleEndian.Uint64(body[24:])
	entries := binary.LittleEndian.Uint64(body[32:])
	nt := uint64(binary.LittleEndian.Uint32(body[40:]))
	if nb == 0 || nb > uint64(len(body))/8 || uint64(len(body)) != headerLen+nt*tableLen+nb*8 {
		return nil, nil, bad(24, fmt.Sprintf("%d buckets and %d tables do not fill %d bytes", nb, nt, len(body)))
	}
	if entries > nb*slots {
		return nil, nil, bad(32, fmt.Sprintf("%d entries in %d slots", entries, nb*slots))
	}
	t := &Filter{buckets: make([]uint64, nb), entries: int(entries), built: int(entries), code: code, rangeDelFiles: map[uint64]int{}}
	tables := make([]Table, nt)
	off := headerLen
	for i := range tables {
		st := Table{FileNum: binary.LittleEndian.Uint64(body[off:]), Level: int(body[off+8]), RangeDels: body[off+9] == 1, Tag: int(body[off+10])}
		// A table's entries carry its level or, moved down, a level above.
		if st.Level >= manifest.NumLevels || body[off+9] > 1 || st.Tag > st.Level {
			return nil, nil, bad(off, "bad table entry")
		}
		if st.RangeDels {
			t.SetRangeDels(st.FileNum, st.Level, true)
		}
		t.SetMoved(st.FileNum, st.Level, st.Tag)
		tables[i] = st
		off += tableLen
	}
	var used uint64
	for i := range t.buckets {
		b := binary.LittleEndian.Uint64(body[off:])
		for s := range slots {
			e := uint16(b >> (16 * s))
			if e != 0 {
				used++
				d := code.dec[e>>(slotBits-maxCode)]
				if d.len == 0 {
					return nil, nil, bad(off, fmt.Sprintf("bucket %d slot %d: bad entry %#04x", i, s, e))
				}
				t.byTag[d.level]++
			}
		}
		t.buckets[i] = b
		off += 8
	}
	if used != entries {
		return nil, nil, bad(32, fmt.Sprintf("%d entries recorded, %d slots used", entries, used))
	}
	return t, tables, nil
}

// MatchesVersion reports whether tables are exactly v's tables, at the
// same levels (file numbers are never reused, so the same numbers at the
// same levels are the same tables).
func MatchesVersion(tables []Table, v *manifest.Version) bool {
	n := 0
	at := map[uint64]int{}
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			at[f.FileNum] = l
			n++
		}
	}
	if n != len(tables) {
		return false
	}
	for _, st := range tables {
		if l, ok := at[st.FileNum]; !ok || l != st.Level {
			return false
		}
	}
	return true
}

// WriteFile writes data (from Encode) to name through a temporary file,
// synced and renamed over it, so name is always a whole file or absent.
func WriteFile(fs vfs.FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, name)
	}
	if err != nil {
		_ = fs.Remove(tmp)
	}
	return err
}

// ReadFile returns the contents of name (for Decode); an error wrapping
// os.ErrNotExist when there is none.
func ReadFile(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return data, err
}
