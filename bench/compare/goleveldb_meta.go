package main

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/golang/snappy"
)

// metaBytes returns the bytes of the filter and index blocks of every live
// table, read from the tables' own footers and metaindex blocks: goleveldb
// keeps both in its block cache and reports neither. Tables that cannot be
// read (a compaction deleting one meanwhile) are skipped.
func (g *goleveldbStore) metaBytes() (filterBytes, indexBytes int64) {
	paths, _ := filepath.Glob(filepath.Join(g.dir, "*.ldb"))
	for _, p := range paths {
		f, i, err := leveldbTableMeta(p)
		if err == nil {
			filterBytes += f
			indexBytes += i
		}
	}
	return filterBytes, indexBytes
}

// LevelDB's table format (shared by goleveldb): the file ends with a 48-byte
// footer holding two block handles (offset and size, varints: the metaindex
// block, the index block), padding, and an 8-byte magic. Each block is
// followed by a 5-byte trailer: a compression type (0 none, 1 snappy) and a
// checksum. The metaindex block maps "filter.<policy name>" to the filter
// block's handle, in the block format: entries of (shared, unshared, value
// length) varints, the key's unshared bytes and the value, then the
// restart offsets (uint32 each) and their count (uint32).
const leveldbFooterLen = 48

func leveldbTableMeta(path string) (filterBytes, indexBytes int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	footer := make([]byte, leveldbFooterLen)
	if _, err := f.ReadAt(footer, st.Size()-leveldbFooterLen); err != nil {
		return 0, 0, err
	}
	metaOff, n1 := binary.Uvarint(footer)
	metaLen, n2 := binary.Uvarint(footer[max(n1, 0):])
	_, n3 := binary.Uvarint(footer[max(n1+n2, 0):])
	idxLen, n4 := binary.Uvarint(footer[max(n1+n2+n3, 0):])
	if n1 <= 0 || n2 <= 0 || n3 <= 0 || n4 <= 0 || metaLen > 1<<20 {
		return 0, 0, errors.New("bad footer")
	}
	indexBytes = int64(idxLen)
	raw := make([]byte, metaLen+5)
	if _, err := f.ReadAt(raw, int64(metaOff)); err != nil {
		return 0, 0, err
	}
	block := raw[:metaLen]
	if raw[metaLen] == 1 {
		if block, err = snappy.Decode(nil, block); err != nil {
			return 0, 0, err
		}
	}
	if len(block) < 4 {
		return 0, 0, errors.New("short metaindex block")
	}
	restarts := int(binary.LittleEndian.Uint32(block[len(block)-4:]))
	end := len(block) - 4 - 4*restarts
	var key []byte
	for p := 0; p >= 0 && p < end; {
		shared, a := binary.Uvarint(block[p:])
		unshared, b := binary.Uvarint(block[p+a:])
		vlen, c := binary.Uvarint(block[p+a+b:])
		p += a + b + c
		if a <= 0 || b <= 0 || c <= 0 || int(shared) > len(key) || p+int(unshared+vlen) > end {
			return 0, 0, errors.New("bad metaindex entry")
		}
		key = append(key[:shared], block[p:p+int(unshared)]...)
		value := block[p+int(unshared) : p+int(unshared+vlen)]
		p += int(unshared + vlen)
		if strings.HasPrefix(string(key), "filter.") {
			_, d := binary.Uvarint(value)
			size, e := binary.Uvarint(value[max(d, 0):])
			if d <= 0 || e <= 0 {
				return 0, 0, errors.New("bad filter handle")
			}
			filterBytes += int64(size)
		}
	}
	return filterBytes, indexBytes, nil
}
