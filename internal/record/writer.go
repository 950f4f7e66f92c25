package record

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/vfs"
)

// writeChunk bounds the bytes a Writer gathers before handing them to the
// file, so a record of many megabytes is not duplicated whole in memory.
const writeChunk = 1 << 20

// errWriterClosed is returned by a Writer used after Close.
var errWriterClosed = errors.New("bloomkv/record: writer is closed")

// Writer appends records to a fresh log file. It is not safe for concurrent
// use: the caller serializes writers (group commit happens above this
// package).
type Writer struct {
	f vfs.File // constant after construction

	// offset is the number of bytes handed to f.Write so far; offset %
	// BlockSize is the position inside the current block.
	offset int64
	// buf gathers the framed bytes of one record; reused between records.
	buf []byte
	// err is sticky: after a failed write the file's tail is unknown, so
	// every later call fails rather than write after a hole.
	err    error
	closed bool
}

// NewWriter writes records to f from offset 0 (f is a fresh file).
func NewWriter(f vfs.File) *Writer {
	return &Writer{f: f}
}

// AddRecord writes one record. When it returns nil, the bytes have been
// passed to f.Write (no user-space buffering is left), so they survive a
// kill -9 of the process. Returns the record's start offset: the offset of
// its first fragment header, after any block padding.
func (w *Writer) AddRecord(p []byte) (offset int64, err error) {
	if w.closed {
		return 0, errWriterClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	w.buf = w.buf[:0]
	pos := w.offset // file offset of the next byte appended to buf
	start := int64(-1)
	first := true
	for {
		left := BlockSize - int(pos%BlockSize)
		if left < headerSize {
			// Too small for a header: pad with zeros to the boundary.
			w.buf = append(w.buf, make([]byte, left)...)
			pos += int64(left)
			left = BlockSize
		}
		if start < 0 {
			start = pos
		}
		n := min(len(p), left-headerSize)
		last := n == len(p)
		t := fragmentTypeFor(first, last)
		h := len(w.buf)
		w.buf = append(w.buf, make([]byte, headerSize)...)
		putHeader(w.buf[h:], t, p[:n])
		w.buf = append(w.buf, p[:n]...)
		pos += int64(headerSize + n)
		p = p[n:]
		first = false
		if last {
			break
		}
		if len(w.buf) >= writeChunk {
			if err := w.write(); err != nil {
				return 0, err
			}
		}
	}
	if err := w.write(); err != nil {
		return 0, err
	}
	return start, nil
}

func fragmentTypeFor(first, last bool) fragmentType {
	switch {
	case first && last:
		return typeFull
	case first:
		return typeFirst
	case last:
		return typeLast
	}
	return typeMiddle
}

// write hands buf to the file and empties it.
func (w *Writer) write() error {
	n, err := w.f.Write(w.buf)
	w.offset += int64(n)
	if err == nil && n < len(w.buf) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(w.buf))
	}
	if err != nil {
		w.err = fmt.Errorf("bloomkv/record: write at offset %d: %w", w.offset, err)
		return w.err
	}
	w.buf = w.buf[:0]
	if cap(w.buf) > 2*writeChunk {
		// Do not pin the memory of one huge record for the file's life.
		w.buf = nil
	}
	return nil
}

// Sync makes every record added so far durable (fsync of the file).
func (w *Writer) Sync() error {
	if w.closed {
		return errWriterClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		// A failed fsync may have dropped dirty pages: nothing written
		// since the last good sync can be trusted any more.
		w.err = fmt.Errorf("bloomkv/record: sync: %w", err)
		return w.err
	}
	return nil
}

// Size returns the number of bytes written to the file so far, padding
// included.
func (w *Writer) Size() int64 { return w.offset }

// Close closes the file. It does not sync: call Sync first for durability
// against an operating-system crash.
func (w *Writer) Close() error {
	if w.closed {
		return errWriterClosed
	}
	w.closed = true
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("bloomkv/record: close: %w", err)
	}
	return nil
}
