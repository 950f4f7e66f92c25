package manifest

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bloomkv/bloomkv/internal/base"
)

// editDecodeError says where in an encoded edit decoding failed and why.
type editDecodeError struct {
	off    int // byte offset inside the encoded edit
	reason string
}

func (e *editDecodeError) Error() string {
	return fmt.Sprintf("version edit byte %d: %s", e.off, e.reason)
}

// Decode replaces e with the edit encoded in b. It rejects malformed input
// (truncated or overlong varints, unknown or repeated tags, levels out of
// range, lengths past the end, invalid file metadata) with an error wrapping
// base.ErrCorruption. The decoded edit does not alias b.
func (e *VersionEdit) Decode(b []byte) error {
	if err := e.decode(b); err != nil {
		return base.CorruptionErrorf("bloomkv/manifest: %s", err)
	}
	return nil
}

// decode is Decode without the corruption wrapping, so callers that know the
// file and offset can say so in one message.
func (e *VersionEdit) decode(b []byte) *editDecodeError {
	*e = VersionEdit{}
	d := editDecoder{b: b}
	for d.off < len(d.b) {
		tagOff := d.off
		tag, err := d.uvarint("tag")
		if err != nil {
			return err
		}
		switch tag {
		case tagLogNum:
			if e.HasLogNum {
				return &editDecodeError{tagOff, "log number set twice"}
			}
			e.HasLogNum = true
			e.LogNum, err = d.uvarint("log number")
		case tagNextFileNum:
			if e.HasNextFileNum {
				return &editDecodeError{tagOff, "next file number set twice"}
			}
			e.HasNextFileNum = true
			e.NextFileNum, err = d.uvarint("next file number")
		case tagLastSeq:
			if e.HasLastSeq {
				return &editDecodeError{tagOff, "last sequence set twice"}
			}
			e.HasLastSeq = true
			e.LastSeq, err = d.uvarint("last sequence")
		case tagFlushedSeq:
			if e.HasFlushedSeq {
				return &editDecodeError{tagOff, "flushed sequence set twice"}
			}
			e.HasFlushedSeq = true
			e.FlushedSeq, err = d.uvarint("flushed sequence")
		case tagSyncedSeq:
			if e.HasSyncedSeq {
				return &editDecodeError{tagOff, "synced sequence set twice"}
			}
			e.HasSyncedSeq = true
			e.SyncedSeq, err = d.uvarint("synced sequence")
		case tagDBID:
			if e.DBID != nil {
				return &editDecodeError{tagOff, "database identity set twice"}
			}
			e.DBID, err = d.bytes("database identity")
			if err == nil && len(e.DBID) > maxDBIDLen {
				err = &editDecodeError{tagOff, fmt.Sprintf("database identity of %d bytes (at most %d)", len(e.DBID), maxDBIDLen)}
			}
		case tagForeignFile:
			var name []byte
			if name, err = d.bytes("foreign file"); err == nil {
				if verr := checkForeignName(string(name)); verr != nil {
					err = &editDecodeError{tagOff, verr.Error()}
				}
				e.ForeignFiles = append(e.ForeignFiles, string(name))
			}
		case tagCompactPointer:
			var cp CompactPointer
			if cp.Level, err = d.level(); err == nil {
				cp.Key, err = d.bytes("compact pointer key")
			}
			e.CompactPointers = append(e.CompactPointers, cp)
		case tagDeletedFile:
			var df DeletedFileEntry
			if df.Level, err = d.level(); err == nil {
				df.FileNum, err = d.uvarint("deleted file number")
			}
			e.DeletedFiles = append(e.DeletedFiles, df)
		case tagNewFile:
			var nf NewFileEntry
			nf, err = d.newFile()
			e.NewFiles = append(e.NewFiles, nf)
		default:
			return &editDecodeError{tagOff, fmt.Sprintf("unknown tag %d", tag)}
		}
		if err != nil {
			return err
		}
	}
	if e.HasFlushedSeq && e.FlushedSeq > base.MaxSeq || e.HasSyncedSeq && e.SyncedSeq > base.MaxSeq {
		return &editDecodeError{len(b), fmt.Sprintf("sequence out of range (flushed %d, synced %d)", e.FlushedSeq, e.SyncedSeq)}
	}
	return nil
}

// editDecoder reads fields from an encoded edit, tracking the offset for
// error messages.
type editDecoder struct {
	b   []byte
	off int
}

func (d *editDecoder) uvarint(what string) (uint64, *editDecodeError) {
	v, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		return 0, &editDecodeError{d.off, fmt.Sprintf("%s: truncated varint", what)}
	case n < 0:
		return 0, &editDecodeError{d.off, fmt.Sprintf("%s: varint overflows 64 bits", what)}
	}
	d.off += n
	return v, nil
}

func (d *editDecoder) level() (int, *editDecodeError) {
	off := d.off
	v, err := d.uvarint("level")
	if err != nil {
		return 0, err
	}
	if v >= NumLevels {
		return 0, &editDecodeError{off, fmt.Sprintf("level %d out of range [0, %d)", v, NumLevels)}
	}
	return int(v), nil
}

// bytes reads a length-prefixed byte string and returns a copy of it.
func (d *editDecoder) bytes(what string) ([]byte, *editDecodeError) {
	off := d.off
	n, err := d.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)-d.off) || n > math.MaxInt32 {
		return nil, &editDecodeError{off, fmt.Sprintf("%s: length %d runs past the end (%d bytes left)", what, n, len(d.b)-d.off)}
	}
	p := make([]byte, n)
	copy(p, d.b[d.off:])
	d.off += int(n)
	return p, nil
}

func (d *editDecoder) newFile() (NewFileEntry, *editDecodeError) {
	start := d.off
	var nf NewFileEntry
	var err *editDecodeError
	m := &FileMetadata{}
	nf.Meta = m
	if nf.Level, err = d.level(); err != nil {
		return nf, err
	}
	if m.FileNum, err = d.uvarint("file number"); err != nil {
		return nf, err
	}
	if m.Size, err = d.uvarint("file size"); err != nil {
		return nf, err
	}
	if m.Smallest, err = d.bytes("smallest key"); err != nil {
		return nf, err
	}
	if m.Largest, err = d.bytes("largest key"); err != nil {
		return nf, err
	}
	if m.SmallestSeq, err = d.uvarint("smallest sequence"); err != nil {
		return nf, err
	}
	if m.LargestSeq, err = d.uvarint("largest sequence"); err != nil {
		return nf, err
	}
	if verr := m.validate(); verr != nil {
		return nf, &editDecodeError{start, verr.Error()}
	}
	return nf, nil
}
