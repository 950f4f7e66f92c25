package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Reader reads the records of a log in order. It is not safe for concurrent
// use.
type Reader struct {
	r    io.Reader // constant after construction
	name string    // constant after construction; used in errors
	// strict: no damage is taken for a torn tail (see SetStrict).
	strict bool
	// reservedOK: zeros from the end of the last record to the end of the
	// file are unused space (see AllowReservedTail).
	reservedOK bool

	// block holds the bytes of the current block read so far: BlockSize of
	// them, or fewer for the file's last block.
	block      []byte
	blockStart int64 // file offset of block[0]
	pos        int   // next unread byte in block
	lastBlock  bool  // nothing follows block in the file
	started    bool  // the first block has been read

	// rec assembles a record split over several fragments; reused.
	rec []byte
	// recordOffset is the start offset of the record Next last returned;
	// recordEnd is the offset just past it, where a torn tail would begin.
	recordOffset int64
	recordEnd    int64

	// err is sticky: io.EOF at the end (clean or torn), or the error that
	// stopped the reader.
	err error

	torn       bool
	tornOffset int64
	// reserved: the file ended in reserved space starting at
	// reservedOffset (the end of the last record).
	reserved       bool
	reservedOffset int64
}

// NewReader reads records from r; name is used in error messages.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{r: r, name: name, block: make([]byte, 0, BlockSize)}
}

// SetStrict makes the reader take no damage for a torn tail: a log that does
// not end cleanly after its last whole record is corruption too. Recovery
// reads every log but the newest this way (an older log was synced and
// closed before a newer one took a write), and every log when asked for
// absolute consistency. Call it before the first Next.
func (r *Reader) SetStrict() { r.strict = true }

// AllowReservedTail lets the log end in space its writer reserved but never
// used: every byte from the end of the last whole record to the end of the
// file zero (a log written through a memory map is extended ahead of its
// records; see vfs.WritableMapper). That is a clean end, in strict mode
// too, reported by Reserved rather than TornTail. Recovery allows it in the
// newest log only: a writer cuts every other log back to its records
// before a newer one takes a write. Call it before the first Next.
func (r *Reader) AllowReservedTail() { r.reservedOK = true }

// Reserved reports whether the log ended in reserved space, and where it
// begins: the end of the last whole record.
func (r *Reader) Reserved() (reserved bool, offset int64) {
	return r.reserved, r.reservedOffset
}

// EndOfLastRecord returns the offset just past the last record Next
// returned (0 before the first): everything from there on was not read as
// a record.
func (r *Reader) EndOfLastRecord() int64 { return r.recordEnd }

// TornTail reports whether the reader dropped a torn tail, and at which
// offset: the end of the last whole record, from where every byte was
// dropped (truncating the file there removes exactly the tail).
func (r *Reader) TornTail() (dropped bool, offset int64) {
	return r.torn, r.tornOffset
}

// RecordOffset returns the start offset of the record Next last returned,
// the value AddRecord returned when writing it.
func (r *Reader) RecordOffset() int64 { return r.recordOffset }

// Next returns the next whole record (valid until the next call). It returns
// io.EOF at a clean end AND after dropping a torn tail. Damage before the
// tail returns an error wrapping base.ErrCorruption that names the file and
// the byte offset.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	return rec, nil
}

// next walks fragments until a record is whole. See doc.go for the rules it
// enforces and the torn-tail rule it applies through stop.
func (r *Reader) next() ([]byte, error) {
	if !r.started {
		r.started = true
		if err := r.readBlock(); err != nil {
			return nil, err
		}
	}
	inRecord := false
	var start int64 // offset of the record being assembled
	r.rec = r.rec[:0]
	for {
		if BlockSize-r.pos < headerSize {
			// Block tail too small for a header (padding), or the
			// block is used up.
			if err := r.skipPadding(inRecord); err != nil {
				return nil, err
			}
			continue
		}
		at := r.blockStart + int64(r.pos)
		avail := len(r.block) - r.pos
		if avail == 0 {
			// The file ends at this fragment boundary.
			if inRecord {
				return nil, r.stopIn(inRecord, at, "record is missing its last fragment")
			}
			return nil, io.EOF
		}
		if avail < headerSize {
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("truncated fragment header (%d of %d bytes)", avail, headerSize))
		}
		h := parseHeader(r.block[r.pos:])
		end := r.pos + headerSize + h.length
		switch {
		case !h.typ.valid():
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("invalid fragment type %d", h.typ))
		case end > BlockSize:
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("fragment length %d crosses the block boundary", h.length))
		case end > len(r.block):
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("truncated fragment payload (%d of %d bytes)", len(r.block)-r.pos-headerSize, h.length))
		}
		payload := r.block[r.pos+headerSize : end]
		if fragmentChecksum(h.typ, payload) != h.checksum {
			return nil, r.stopIn(inRecord, at, "checksum mismatch")
		}
		// The fragment is intact; check it fits the writer's layout.
		if (h.typ == typeFirst || h.typ == typeMiddle) && end != BlockSize {
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("%s fragment does not fill its block", h.typ))
		}
		if (h.typ == typeMiddle || h.typ == typeLast) && r.pos != 0 {
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("%s fragment does not start a block", h.typ))
		}
		startsRecord := h.typ == typeFull || h.typ == typeFirst
		if startsRecord && inRecord {
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("record at offset %d is missing its last fragment", start))
		}
		if !startsRecord && !inRecord {
			return nil, r.stopIn(inRecord, at, fmt.Sprintf("%s fragment without a first fragment", h.typ))
		}
		r.pos = end
		switch h.typ {
		case typeFull:
			r.recordOffset, r.recordEnd = at, r.blockStart+int64(end)
			return payload, nil
		case typeFirst:
			inRecord, start = true, at
			r.rec = append(r.rec, payload...)
		case typeMiddle:
			r.rec = append(r.rec, payload...)
		case typeLast:
			r.recordOffset, r.recordEnd = start, r.blockStart+int64(end)
			r.rec = append(r.rec, payload...)
			return r.rec, nil
		}
	}
}

// skipPadding checks the zero padding at the end of the current block and
// moves to the next block.
func (r *Reader) skipPadding(inRecord bool) error {
	at := r.blockStart + int64(r.pos)
	padding := r.block[r.pos:]
	for _, b := range padding {
		if b != 0 {
			return r.stop(at, "non-zero block padding")
		}
	}
	if err := r.readBlock(); err != nil {
		return err
	}
	if len(r.block) > 0 {
		return nil
	}
	// The file ends in the padding or exactly at the block boundary.
	if inRecord {
		return r.stop(r.blockStart, "record is missing its last fragment")
	}
	if len(padding) > 0 {
		// The writer pads only in the same write as the fragment that
		// follows, so padding at the end means that write was cut.
		r.torn, r.tornOffset = true, r.recordEnd
	}
	return io.EOF
}

// readBlock replaces the current block with the next one. At the end of the
// file the new block is empty.
func (r *Reader) readBlock() error {
	r.blockStart += int64(len(r.block))
	r.pos = 0
	r.block = r.block[:0]
	if r.lastBlock {
		return nil
	}
	n, err := io.ReadFull(r.r, r.block[:BlockSize])
	r.block = r.block[:n]
	switch {
	case err == nil:
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		r.lastBlock = true
	default:
		return fmt.Errorf("bloomkv/record: %s: read at offset %d: %w", r.name, r.blockStart+int64(n), err)
	}
	return nil
}

// stopIn is stop for a fragment at offset at that the reader cannot
// accept, inRecord saying whether it is inside a record. Outside one, every
// byte from the end of the last record to at is zero (block padding, which
// skipPadding checked), so when reserved space is allowed and nothing but
// zeros follows either, the log ends there cleanly.
func (r *Reader) stopIn(inRecord bool, at int64, reason string) error {
	if !r.reservedOK || inRecord {
		return r.stop(at, reason)
	}
	zeros, intact, err := r.scanRest(at)
	switch {
	case err != nil:
		return err
	case zeros:
		r.reserved, r.reservedOffset = true, r.recordEnd
		return io.EOF
	case r.strict:
		return &CorruptionError{File: r.name, Offset: at, Reason: reason}
	case intact:
		return &CorruptionError{File: r.name, Offset: at, Reason: reason, IntactAfter: true}
	}
	r.torn, r.tornOffset = true, r.recordEnd
	return io.EOF
}

// scanRest reads the rest of the file from offset at (in the current block)
// and reports whether every byte of it is zero, and whether an intact
// fragment starts anywhere in it.
func (r *Reader) scanRest(at int64) (zeros, intact bool, err error) {
	zeros = true
	from := int(at - r.blockStart)
	for {
		rest := r.block[min(from, len(r.block)):]
		if zeros && !allZero(rest) {
			zeros = false
		}
		if !zeros && intactFragmentIn(r.block, from) {
			return false, true, nil
		}
		if err := r.readBlock(); err != nil {
			return false, false, err
		}
		if len(r.block) == 0 {
			return zeros, false, nil
		}
		from = 0
	}
}

// allZero reports whether b holds only zero bytes.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// stop ends reading at a fragment the reader cannot accept, at offset at.
// It applies the torn-tail rule of doc.go: if an intact fragment starts
// anywhere at or after at, the log goes on past the damage and this is
// corruption; otherwise everything after the last whole record is a torn
// tail, dropped, and the reader reports io.EOF. A strict reader reports
// corruption either way.
func (r *Reader) stop(at int64, reason string) error {
	if r.strict {
		return &CorruptionError{File: r.name, Offset: at, Reason: reason}
	}
	corrupt, err := r.intactFragmentFrom(at)
	if err != nil {
		return err
	}
	if corrupt {
		return &CorruptionError{File: r.name, Offset: at, Reason: reason, IntactAfter: true}
	}
	r.torn, r.tornOffset = true, r.recordEnd
	return io.EOF
}

// intactFragmentFrom reports whether an intact fragment starts at any
// offset at or after at (at lies in the current block). It consumes the
// rest of the file. Fragments never cross a block boundary, so each block
// is searched on its own.
func (r *Reader) intactFragmentFrom(at int64) (bool, error) {
	if intactFragmentIn(r.block, int(at-r.blockStart)) {
		return true, nil
	}
	for {
		if err := r.readBlock(); err != nil {
			return false, err
		}
		if len(r.block) == 0 {
			return false, nil
		}
		if intactFragmentIn(r.block, 0) {
			return true, nil
		}
	}
}

// CorruptionError reports damage in a log that cannot be a crash's torn
// tail. It wraps base.ErrCorruption.
type CorruptionError struct {
	File   string
	Offset int64 // where the first fragment the reader could not accept starts
	Reason string
	// IntactAfter: an intact fragment follows the damage (so the damage
	// is not at the end of the log).
	IntactAfter bool
}

func (e *CorruptionError) Error() string {
	after := ""
	if e.IntactAfter {
		after = " (intact records follow)"
	}
	return fmt.Sprintf("bloomkv/record: %s at offset %d: %s%s: %v", e.File, e.Offset, e.Reason, after, base.ErrCorruption)
}

func (e *CorruptionError) Unwrap() error { return base.ErrCorruption }
