package bloomkv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/klauspost/crc32"
)

// The saved tree filter: Close writes the filter of the last version to
// the file TREEFILTER so that the next Open can load it instead of reading
// every table. It is derived data: Open adopts it only when its checksum
// holds and it names exactly the tables of the recovered version (file
// numbers are never reused, so the same numbers at the same levels are
// the same tables); otherwise it rebuilds from the tables. The byte layout
// is in docs/formats.md ("Tree filter").

const (
	treeFilterFileName = "TREEFILTER"
	treeFilterMagic    = "BKVTREEF"
	// treeFilterVersion 2 adds each table's tag (the level its entries
	// carry) and the level code of the slots. A file of another version
	// is rejected and rebuilt.
	treeFilterVersion = 2
	tfHeaderLen       = 8 + 4 + 4 + 8 + 8 + 8 + 4 // magic, version, shape, code, buckets, entries, tables
	tfTableLen        = 8 + 1 + 1 + 1             // file number, level, range deletions, tag
)

var tfCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeTreeFilter returns t's saved form.
func encodeTreeFilter(t *treeFilter) []byte {
	var tables []levelFile
	for l := range t.v.Levels {
		for _, f := range t.v.Levels[l] {
			tables = append(tables, levelFile{l, f})
		}
	}
	buf := make([]byte, 0, tfHeaderLen+len(tables)*tfTableLen+len(t.buckets)*8+4)
	buf = append(buf, treeFilterMagic...)
	buf = binary.LittleEndian.AppendUint32(buf, treeFilterVersion)
	buf = append(buf, tfSlotBits, tfSlots, tfMaxCode, 0)
	buf = append(buf, t.code.lens[:]...)
	buf = append(buf, make([]byte, 8-len(t.code.lens))...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(t.buckets)))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(t.entries))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(tables)))
	for _, lf := range tables {
		buf = binary.LittleEndian.AppendUint64(buf, lf.f.FileNum)
		rd := byte(0)
		if l, ok := t.rangeDelFiles[lf.f.FileNum]; ok && l == lf.level {
			rd = 1
		}
		buf = append(buf, byte(lf.level), rd, byte(t.tagOf(lf.f.FileNum, lf.level)))
	}
	for _, b := range t.buckets {
		buf = binary.LittleEndian.AppendUint64(buf, b)
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, tfCastagnoli))
}

// savedTable is one table a saved filter names.
type savedTable struct {
	fileNum   uint64
	level     int
	rangeDels bool
	tag       int
}

// decodeTreeFilter parses a saved filter. Damage of any kind (a short
// file, a checksum mismatch, a shape this build does not use, counts that
// do not add up) is an error wrapping ErrCorruption naming name and the
// offset.
func decodeTreeFilter(name string, data []byte) (*treeFilter, []savedTable, error) {
	bad := func(off int, what string) error {
		return base.CorruptionErrorf("bloomkv: tree filter %s: offset %d: %s", name, off, what)
	}
	if len(data) < tfHeaderLen+4 {
		return nil, nil, bad(0, fmt.Sprintf("%d bytes, shorter than a header", len(data)))
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, tfCastagnoli), binary.LittleEndian.Uint32(data[len(body):]); got != want {
		return nil, nil, bad(len(body), fmt.Sprintf("checksum mismatch (stored %#08x, computed %#08x)", want, got))
	}
	if string(body[:8]) != treeFilterMagic {
		return nil, nil, bad(0, "bad magic")
	}
	if v := binary.LittleEndian.Uint32(body[8:]); v != treeFilterVersion {
		return nil, nil, bad(8, fmt.Sprintf("format version %d, want %d", v, treeFilterVersion))
	}
	if body[12] != tfSlotBits || body[13] != tfSlots || body[14] != tfMaxCode || body[15] != 0 {
		return nil, nil, bad(12, fmt.Sprintf("slot shape %v, want [%d %d %d 0]", body[12:16], tfSlotBits, tfSlots, tfMaxCode))
	}
	var lens [manifest.NumLevels]uint8
	copy(lens[:], body[16:])
	code, ok := newTFCode(lens)
	if !ok || body[16+manifest.NumLevels] != 0 {
		return nil, nil, bad(16, fmt.Sprintf("bad level code lengths %v", body[16:24]))
	}
	nb := binary.LittleEndian.Uint64(body[24:])
	entries := binary.LittleEndian.Uint64(body[32:])
	nt := uint64(binary.LittleEndian.Uint32(body[40:]))
	if nb == 0 || nb > uint64(len(body))/8 || uint64(len(body)) != tfHeaderLen+nt*tfTableLen+nb*8 {
		return nil, nil, bad(24, fmt.Sprintf("%d buckets and %d tables do not fill %d bytes", nb, nt, len(body)))
	}
	if entries > nb*tfSlots {
		return nil, nil, bad(32, fmt.Sprintf("%d entries in %d slots", entries, nb*tfSlots))
	}
	t := &treeFilter{buckets: make([]uint64, nb), entries: int(entries), code: code, rangeDelFiles: map[uint64]int{}}
	tables := make([]savedTable, nt)
	off := tfHeaderLen
	for i := range tables {
		st := savedTable{fileNum: binary.LittleEndian.Uint64(body[off:]), level: int(body[off+8]), rangeDels: body[off+9] == 1, tag: int(body[off+10])}
		// A table's entries carry its level or, moved down, a level above.
		if st.level >= manifest.NumLevels || body[off+9] > 1 || st.tag > st.level {
			return nil, nil, bad(off, "bad table entry")
		}
		if st.rangeDels {
			t.setRangeDels(st.fileNum, st.level, true)
		}
		t.setMoved(st.fileNum, st.level, st.tag)
		tables[i] = st
		off += tfTableLen
	}
	var used uint64
	for i := range t.buckets {
		b := binary.LittleEndian.Uint64(body[off:])
		for s := range tfSlots {
			e := uint16(b >> (16 * s))
			if e != 0 {
				used++
				d := code.dec[e>>(tfSlotBits-tfMaxCode)]
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

// matchesVersion reports whether tables are exactly v's tables.
func matchesVersion(tables []savedTable, v *manifest.Version) bool {
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
		if l, ok := at[st.fileNum]; !ok || l != st.level {
			return false
		}
	}
	return true
}

// saveTreeFilter writes the current filter for the next Open: a
// temporary file renamed over TREEFILTER. A failure costs the next Open a
// rebuild, nothing else, so it is logged, not returned.
// REQUIRES: manifestMu held, background work stopped (Close).
func (db *DB) saveTreeFilter(t *treeFilter) {
	if db.opts.ReadOnly {
		return
	}
	name := filepath.Join(db.dirname, treeFilterFileName)
	if err := db.writeTreeFilterFile(name, encodeTreeFilter(t)); err != nil {
		db.opts.Logger.Warn("bloomkv: could not save the tree filter; the next Open rebuilds it", "file", name, "error", err)
	}
}

func (db *DB) writeTreeFilterFile(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := db.fs.Create(tmp)
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
		err = db.fs.Rename(tmp, name)
	}
	if err != nil {
		_ = db.fs.Remove(tmp)
	}
	return err
}

// loadTreeFilter returns the saved filter if it describes v, else nil: no
// file, a stale one (other tables), or a damaged one (logged: the tables
// are the truth and Open rebuilds from them). Open writes nothing, so the
// file stays: it describes these tables for as long as they are the tree's
// (file numbers are never reused), and the next Close replaces it.
func (db *DB) loadTreeFilter(v *manifest.Version) *treeFilter {
	name := filepath.Join(db.dirname, treeFilterFileName)
	f, err := db.fs.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var data []byte
	if err == nil {
		data, err = io.ReadAll(f)
		_ = f.Close()
	}
	if err != nil {
		db.opts.Logger.Warn("bloomkv: could not read the saved tree filter; rebuilding it", "file", name, "error", err)
		return nil
	}
	t, tables, err := decodeTreeFilter(name, data)
	if err != nil {
		db.opts.Logger.Warn("bloomkv: saved tree filter rejected; rebuilding it", "error", err)
		db.tf.rejected.Add(1)
		return nil
	}
	if !matchesVersion(tables, v) {
		return nil // saved before a crash left other tables: stale
	}
	t.v = v
	db.tf.loaded.Add(1)
	return t
}
