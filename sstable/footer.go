package sstable

import (
	"encoding/binary"

	"github.com/klauspost/crc32"
)

// footer is the fixed-size tail of a table; see the package doc for its
// byte layout.
type footer struct {
	index, filter, props blockHandle
	version              uint32
}

// Footer field offsets.
const (
	footerIndexOff   = 0
	footerFilterOff  = 16
	footerPropsOff   = 32
	footerVersionOff = 48
	footerCRCOff     = 52
	footerMagicOff   = 56
)

// hasFilter reports whether the table has a filter block. A filter block is
// never empty, so the handle (0, 0) means "none".
func (f footer) hasFilter() bool { return f.filter.size != 0 }

// partitioned reports whether the footer's version is one of a
// partitioned table's.
func (f footer) partitioned() bool {
	return f.version == FormatVersionPartitioned || f.version == FormatVersionCompactIndex
}

func (f footer) encode() []byte {
	b := make([]byte, footerLen)
	putHandle := func(off int, h blockHandle) {
		binary.LittleEndian.PutUint64(b[off:], h.offset)
		binary.LittleEndian.PutUint64(b[off+8:], h.size)
	}
	putHandle(footerIndexOff, f.index)
	putHandle(footerFilterOff, f.filter)
	putHandle(footerPropsOff, f.props)
	binary.LittleEndian.PutUint32(b[footerVersionOff:], f.version)
	binary.LittleEndian.PutUint32(b[footerCRCOff:], crc32.Checksum(b[:footerCRCOff], castagnoli))
	copy(b[footerMagicOff:], tableMagic)
	return b
}

// decodeFooter validates the last footerLen bytes of a file of fileSize
// bytes: magic, checksum, version, and that every handle lies inside the
// file before the footer.
func decodeFooter(b []byte, fileSize uint64, loc location) (footer, error) {
	if len(b) != footerLen || fileSize < footerLen {
		return footer{}, loc.corruptf("footer is %d bytes of a %d-byte file, want %d", len(b), fileSize, footerLen)
	}
	if string(b[footerMagicOff:]) != tableMagic {
		return footer{}, loc.corruptf("bad magic %q (not a bloomkv table, or truncated)", b[footerMagicOff:])
	}
	if got, want := crc32.Checksum(b[:footerCRCOff], castagnoli), binary.LittleEndian.Uint32(b[footerCRCOff:]); got != want {
		return footer{}, loc.corruptf("checksum mismatch (computed %#08x, stored %#08x)", got, want)
	}
	handle := func(off int) blockHandle {
		return blockHandle{
			offset: binary.LittleEndian.Uint64(b[off:]),
			size:   binary.LittleEndian.Uint64(b[off+8:]),
		}
	}
	f := footer{
		index:   handle(footerIndexOff),
		filter:  handle(footerFilterOff),
		props:   handle(footerPropsOff),
		version: binary.LittleEndian.Uint32(b[footerVersionOff:]),
	}
	if f.version < FormatVersion || f.version > FormatVersionCompactIndex {
		return footer{}, loc.corruptf("unsupported format version %d (this build reads %d to %d)", f.version, FormatVersion, FormatVersionCompactIndex)
	}
	limit := fileSize - footerLen
	check := func(what string, h blockHandle) error {
		// Written to avoid overflow: offset <= limit and size+trailer <= limit-offset.
		if h.offset > limit || h.size > limit-h.offset || blockTrailerLen > limit-h.offset-h.size {
			return loc.corruptf("%s handle (offset %d, size %d) lies outside the %d bytes before the footer", what, h.offset, h.size, limit)
		}
		return nil
	}
	if err := check("index block", f.index); err != nil {
		return footer{}, err
	}
	if err := check("properties block", f.props); err != nil {
		return footer{}, err
	}
	if f.hasFilter() {
		if err := check("filter block", f.filter); err != nil {
			return footer{}, err
		}
	} else if f.filter.offset != 0 {
		return footer{}, loc.corruptf("empty filter handle with offset %d", f.filter.offset)
	}
	return f, nil
}
