package wal

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// Mode says when an appended record reaches the operating system and the
// disk: the durability each write buys, and what it costs.
type Mode int

const (
	// ModeWriteThrough hands every record to the operating system before
	// Append returns: it survives a crash of the process (kill -9).
	ModeWriteThrough Mode = iota
	// ModeBuffered keeps records in memory and hands them to the operating
	// system within WriterOptions.BufferedDelay, or as soon as
	// BufferedBytes are waiting: a crash of the process loses at most the
	// records of that window -- always the newest ones, never a hole.
	ModeBuffered
	// ModeSync fsyncs before Append returns: records survive losing the
	// operating system.
	ModeSync
	// ModeDisabled writes no log at all.
	ModeDisabled
)

func (m Mode) String() string {
	switch m {
	case ModeWriteThrough:
		return "write-through"
	case ModeBuffered:
		return "buffered"
	case ModeSync:
		return "sync"
	case ModeDisabled:
		return "disabled"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Defaults for WriterOptions fields left at zero.
const (
	DefaultBufferedDelay = time.Millisecond
	DefaultBufferedBytes = 64 << 10
	// DefaultWritebackBytes: see WriterOptions.WritebackBytes.
	DefaultWritebackBytes = 256 << 10
)

// WriterOptions configure a Writer.
type WriterOptions struct {
	Mode          Mode
	BufferedDelay time.Duration // ModeBuffered: the longest a record waits
	BufferedBytes int           // ModeBuffered: the most bytes that wait
	// WritebackBytes: in ModeWriteThrough and ModeBuffered, every time
	// this many more bytes have been handed to the file, the writer asks
	// the operating system to start writing them to the disk
	// (vfs.StartWriteback; no durability is promised or waited for). The
	// log is fsynced when the database switches to a new one, with every
	// writer waiting; started early, that fsync finds little left to write.
	// 0 means DefaultWritebackBytes, negative never.
	WritebackBytes int
	// MapLog: in ModeWriteThrough, store records through a shared memory
	// map of the file instead of one write call each, where the file
	// supports it (vfs.WritableMapper: 64-bit Linux). The promise is the
	// same -- a record is in the operating system's hands when Append
	// returns -- at the cost of a memory copy instead of a system call.
	// See mapped.go.
	MapLog bool
}

// Writer appends records to one log file according to its Mode. It is safe
// for concurrent use: in ModeBuffered a timer hands buffered records to the
// file while the next ones are appended.
type Writer struct {
	opts WriterOptions // constant after construction

	mu   sync.Mutex
	file vfs.File       // guarded by mu
	rw   *record.Writer // guarded by mu; writes through bufferedFile
	// pending holds framed bytes not yet handed to file (ModeBuffered).
	pending []byte
	timer   *time.Timer // armed while pending is non-empty
	// written counts the bytes handed to file; writeback started for
	// those below writebackFrom.
	written, writebackFrom int64
	writebackIdle          atomic.Bool // no writeback hint in flight
	// mapped, when not nil, receives the records instead of file
	// (MapLog). guarded by mu.
	mapped *mappedFile
	// err is sticky: once a write or sync failed, the log's tail is
	// unknown and every later call fails.
	err    error
	closed bool
}

// ErrClosed is returned by a Writer used after Close.
var ErrClosed = errors.New("bloomkv/wal: log writer is closed")

// NewWriter writes records to the fresh file f.
func NewWriter(f vfs.File, o WriterOptions) *Writer {
	if o.BufferedDelay <= 0 {
		o.BufferedDelay = DefaultBufferedDelay
	}
	if o.BufferedBytes <= 0 {
		o.BufferedBytes = DefaultBufferedBytes
	}
	if o.WritebackBytes == 0 {
		o.WritebackBytes = DefaultWritebackBytes
	}
	w := &Writer{opts: o, file: f}
	w.writebackIdle.Store(true)
	if o.MapLog && o.Mode == ModeWriteThrough {
		mf, err := newMappedFile(f)
		switch {
		case err == nil:
			w.mapped = mf
		case !errors.Is(err, errMapUnsupported):
			// Space may have been reserved before mapping failed: give
			// it back, since a log written with write calls must end
			// after its last record. If that fails too, refuse writes.
			if terr := f.(vfs.WritableMapper).Truncate(0); terr != nil {
				w.err = fmt.Errorf("bloomkv/wal: map log: %w; undo its reservation: %w", err, terr)
			}
		}
	}
	w.rw = record.NewWriter(bufferedFile{w})
	return w
}

// Mode returns the writer's mode.
func (w *Writer) Mode() Mode { return w.opts.Mode }

// Append adds one record. With sync, or in ModeSync, the record (and every
// one before it) is fsynced before Append returns; otherwise it reaches the
// operating system as the mode says. In ModeDisabled nothing is written.
func (w *Writer) Append(rec []byte, sync bool) error {
	_, err := w.AppendSize(rec, sync)
	return err
}

// AppendSize is Append that also returns how many bytes the record took in
// the log (framing and block padding included), so that a caller counting
// log bytes need not take the lock again for Size.
func (w *Writer) AppendSize(rec []byte, sync bool) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	if w.opts.Mode == ModeDisabled {
		return 0, nil
	}
	before := w.rw.Size()
	if _, err := w.rw.AddRecord(rec); err != nil {
		return 0, w.failLocked(err)
	}
	n := w.rw.Size() - before
	if sync || w.opts.Mode == ModeSync {
		return n, w.syncLocked()
	}
	if w.opts.Mode == ModeBuffered {
		if len(w.pending) >= w.opts.BufferedBytes {
			return n, w.flushLocked()
		}
		if w.timer == nil {
			w.timer = time.AfterFunc(w.opts.BufferedDelay, w.flushFromTimer)
		}
	}
	return n, nil
}

// Flush hands every buffered record to the operating system.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	return w.flushLocked()
}

// Sync hands every buffered record to the operating system and fsyncs the
// file.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	return w.syncLocked()
}

// Seal ends the log: it hands every buffered record to the operating
// system, gives back the space reserved ahead of the records (a mapped
// log; see mapped.go) so that the file ends exactly after its last record,
// and fsyncs. The database seals a log before it starts the next one,
// since recovery reads every log but the newest strictly. Appending after
// Seal works (a switch that failed after sealing goes on with this log):
// a mapped log reserves space again.
func (w *Writer) Seal() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if err := w.flushLocked(); err != nil {
		return err
	}
	if w.mapped != nil {
		if err := w.mapped.seal(); err != nil {
			return w.failLocked(fmt.Errorf("bloomkv/wal: seal mapped log: %w", err))
		}
	}
	return w.syncLocked()
}

// Size returns the bytes appended so far, buffered ones included.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rw.Size()
}

// Close hands buffered records to the operating system and closes the
// file. It does not fsync: call Sync first for that.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	var err error
	if w.err == nil {
		err = w.flushLocked()
	}
	if w.mapped != nil {
		// Cut the file back to its records (a no-op when sealed
		// already), without an fsync.
		if serr := w.mapped.seal(); serr != nil && err == nil {
			err = fmt.Errorf("bloomkv/wal: close mapped log: %w", serr)
		}
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if cerr := w.rw.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *Writer) usableLocked() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

func (w *Writer) failLocked(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// flushFromTimer is the buffered mode's deadline.
func (w *Writer) flushFromTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.closed || w.err != nil {
		return
	}
	_ = w.flushLocked() // a failure is sticky: the next Append reports it
}

// flushLocked writes pending to the file. REQUIRES: w.mu held.
func (w *Writer) flushLocked() error {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if len(w.pending) == 0 {
		return nil
	}
	n, err := w.file.Write(w.pending)
	w.wroteLocked(n)
	if err == nil && n < len(w.pending) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(w.pending))
	}
	if err != nil {
		return w.failLocked(fmt.Errorf("bloomkv/wal: write: %w", err))
	}
	w.pending = w.pending[:0]
	if cap(w.pending) > 4*w.opts.BufferedBytes {
		w.pending = nil // do not pin the memory of one huge record
	}
	return nil
}

// wroteLocked counts n bytes handed to the file and starts their writeback
// once WritebackBytes have gathered. REQUIRES: w.mu held.
//
// The hint is issued from a goroutine of its own: sync_file_range submits
// the I/O before it returns (about 0.4 ms per 256 KiB here), which on the
// write path cost write-through Puts about 0.25 us each on average. One
// hint at a time; while one runs, the bytes wait for the next.
func (w *Writer) wroteLocked(n int) {
	w.written += int64(n)
	if w.opts.WritebackBytes <= 0 || w.opts.Mode == ModeSync ||
		w.written-w.writebackFrom < int64(w.opts.WritebackBytes) ||
		!w.writebackIdle.CompareAndSwap(true, false) {
		return
	}
	f, off, size := w.file, w.writebackFrom, w.written-w.writebackFrom
	w.writebackFrom = w.written
	go func() {
		// A hint racing with Close does no harm: the OS file holds its
		// descriptor until the call returns, and a closed file refuses it.
		vfs.StartWriteback(f, off, size)
		w.writebackIdle.Store(true)
	}()
}

// syncLocked flushes and fsyncs. REQUIRES: w.mu held.
func (w *Writer) syncLocked() error {
	if err := w.flushLocked(); err != nil {
		return err
	}
	if err := w.rw.Sync(); err != nil {
		return w.failLocked(err)
	}
	w.writebackFrom = w.written // nothing left to start
	return nil
}

// bufferedFile is the file the record writer writes to: in ModeBuffered it
// gathers the bytes in Writer.pending, otherwise it writes them at once.
// Its methods run with Writer.mu held (the record writer is only used under
// it).
type bufferedFile struct{ w *Writer }

func (b bufferedFile) Write(p []byte) (int, error) {
	if b.w.opts.Mode == ModeBuffered {
		b.w.pending = append(b.w.pending, p...)
		return len(p), nil
	}
	var n int
	var err error
	if b.w.mapped != nil {
		n, err = b.w.mapped.Write(p)
	} else {
		n, err = b.w.file.Write(p)
	}
	b.w.wroteLocked(n)
	return n, err
}

func (b bufferedFile) Sync() error                             { return b.w.file.Sync() }
func (b bufferedFile) Close() error                            { return b.w.file.Close() }
func (b bufferedFile) Read(p []byte) (int, error)              { return b.w.file.Read(p) }
func (b bufferedFile) ReadAt(p []byte, off int64) (int, error) { return b.w.file.ReadAt(p, off) }
func (b bufferedFile) Stat() (os.FileInfo, error)              { return b.w.file.Stat() }
