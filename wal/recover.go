package wal

import (
	"errors"
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// RecoveryMode says what damage recovery accepts (see the package doc).
type RecoveryMode int

const (
	TolerateTornTail RecoveryMode = iota
	AbsoluteConsistency
	PointInTime
)

func (m RecoveryMode) String() string {
	switch m {
	case TolerateTornTail:
		return "tolerate-torn-tail"
	case AbsoluteConsistency:
		return "absolute-consistency"
	case PointInTime:
		return "point-in-time"
	}
	return fmt.Sprintf("RecoveryMode(%d)", int(m))
}

// Log is one log file: its number, path and size.
type Log struct {
	Num  uint64
	Path string
	Size int64
}

// Sequences returns the first sequence number of a record and how many it
// holds, or an error when the record is malformed.
type Sequences func(rec []byte) (first, count uint64, err error)

// Options configure Check.
type Options struct {
	FS   vfs.FS
	Mode RecoveryMode
	// FlushedSeq: every write up to it is in tables, so the logs start at
	// FlushedSeq+1. FlushedSeqKnown is false for a manifest that predates
	// it; the first record then sets the start.
	FlushedSeq      uint64
	FlushedSeqKnown bool
	// SyncedSeq: every write up to it must be found.
	SyncedSeq uint64
	Sequences Sequences
	// KeepGoing (for tools) records every problem in its log's result
	// instead of returning the first error. A sequence error does not stop
	// reading: it goes to LogResult.SeqErrs, and the sequence continues
	// from that record. Any other damage (and a log that cannot be opened)
	// goes to LogResult.Err and ends that log; the next log's first record
	// then starts a new sequence.
	KeepGoing bool
	// OnRecord, when set, sees every record kept (with KeepGoing: every
	// record read), with its offset.
	OnRecord func(log *LogResult, offset int64, rec []byte)
}

// LogResult is what Check keeps of one log.
type LogResult struct {
	Log
	Strict   bool   // read with no torn tail allowed
	Records  int    // whole records kept, from the start
	FirstSeq uint64 // sequences of the kept records (0, 0 for none)
	LastSeq  uint64
	// KeepEnd is where the kept records end: bytes from there on are
	// dropped (KeepEnd == Size when nothing is).
	KeepEnd int64
	// TornTail: the dropped bytes are a torn tail the mode accepts.
	TornTail bool
	// Reserved counts the zero bytes after KeepEnd that the log's writer
	// reserved ahead of its records and never used (a log written through
	// a memory map, cut short by a crash): not damage, and not dropped.
	// Only the newest log may end in them.
	Reserved int64
	// reservedOK: this is the newest log, which may end in reserved space.
	reservedOK bool
	// Err is the damage that stopped reading this log (point in time, or
	// KeepGoing), nil otherwise.
	Err error
	// SeqErrs (KeepGoing only) are the records whose sequences do not
	// continue the ones before them, in order. Records, LastSeq and KeepEnd
	// count the records after them too: with KeepGoing they say what was
	// read, not what a recovery would keep.
	SeqErrs []*SequenceError
}

// SequenceError is a record whose first sequence is not the one the
// writes before it (tables, earlier records and logs) lead to: a gap
// (writes are missing) or an overlap (writes are repeated). It wraps
// kv.ErrCorruption.
type SequenceError struct {
	Path   string
	Offset int64  // of the record in the log
	Got    uint64 // the record's first sequence
	Want   uint64 // the sequence it should start with
}

// Gap reports whether writes are missing before the record (Got > Want);
// otherwise the record overlaps writes before it.
func (e *SequenceError) Gap() bool { return e.Got > e.Want }

func (e *SequenceError) Error() string {
	what := "sequence overlap"
	if e.Gap() {
		what = fmt.Sprintf("sequence gap (writes %d-%d are missing: a log was lost)", e.Want, e.Got-1)
	}
	return fmt.Sprintf("bloomkv/wal: %s: record at offset %d: %s: the record starts at sequence %d, expected %d: %v",
		e.Path, e.Offset, what, e.Got, e.Want, base.ErrCorruption)
}

func (e *SequenceError) Unwrap() error { return base.ErrCorruption }

// Dropped returns how many bytes of the log were not kept, reserved space
// aside.
func (r *LogResult) Dropped() int64 { return r.Size - r.KeepEnd - r.Reserved }

// Result is the outcome of Check.
type Result struct {
	Logs []LogResult
	// LastSeq is the last sequence kept (FlushedSeq when no record is).
	LastSeq uint64
	// MissingSynced reports writes up to SyncedSeq that were not found (set
	// in point-in-time mode and with KeepGoing; otherwise Check fails with it).
	MissingSynced error
}

// DroppedBytes returns the bytes of every log that were not kept.
func (r *Result) DroppedBytes() int64 {
	var n int64
	for i := range r.Logs {
		n += r.Logs[i].Dropped()
	}
	return n
}

// Check reads logs (in number order) by the rules of o.Mode and returns
// what to keep. It writes nothing.
func Check(o Options, logs []Log) (*Result, error) {
	res := &Result{Logs: make([]LogResult, len(logs))}
	newest := len(logs) - 1
	for newest > 0 {
		empty, err := holdsNothing(o.FS, logs[newest])
		if err != nil {
			return nil, err
		}
		if !empty {
			break
		}
		newest--
	}
	c := checker{o: o, lastKept: o.FlushedSeq}
	if o.FlushedSeqKnown {
		c.next = o.FlushedSeq + 1
	}
	for i, l := range logs {
		lr := &res.Logs[i]
		*lr = LogResult{Log: l, KeepEnd: l.Size}
		lr.Strict = o.Mode != TolerateTornTail || i < newest
		// Logs after the newest hold nothing but zeros, which read as
		// reserved space.
		lr.reservedOK = i >= newest
		if c.stopped {
			lr.KeepEnd = 0
			continue
		}
		if err := c.checkLog(lr); err != nil {
			return nil, err
		}
	}
	res.LastSeq = c.lastKept
	if o.SyncedSeq > c.lastKept {
		where := "no log holds a record"
		for i := len(res.Logs) - 1; i >= 0; i-- {
			if lr := &res.Logs[i]; lr.Records > 0 || i == 0 {
				where = fmt.Sprintf("%s at offset %d", lr.Path, lr.KeepEnd)
				break
			}
		}
		err := base.CorruptionErrorf("bloomkv/wal: the manifest records every write up to sequence %d as durable, "+
			"but the logs end at sequence %d (%s): a log was deleted, cut short or damaged at its end",
			o.SyncedSeq, c.lastKept, where)
		if o.Mode != PointInTime && !o.KeepGoing {
			return nil, err
		}
		res.MissingSynced = err
	}
	return res, nil
}

// holdsNothing reports whether log l is empty or holds only zeros: space a
// memory-mapped writer reserved and never wrote. Recovery creates its new
// log, and a mapped one reserves its space, before the manifest names it;
// a crash in between leaves such a log after the replayed one, which may
// itself end in reserved space. A log of zeros holds no record, so it says
// nothing about the end of the log before it: the log before it is the
// newest that does.
func holdsNothing(fs vfs.FS, l Log) (bool, error) {
	if l.Size == 0 {
		return true, nil
	}
	f, err := fs.Open(l.Path)
	if err != nil {
		return false, fmt.Errorf("bloomkv/wal: open log %s: %w", l.Path, err)
	}
	defer f.Close()
	buf := make([]byte, 32<<10)
	for off := int64(0); off < l.Size; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), l.Size-off)], off)
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		off += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return false, fmt.Errorf("bloomkv/wal: read log %s at offset %d: %w", l.Path, off, err)
		}
	}
	return true, nil
}

// checker carries the sequence order across logs.
type checker struct {
	o        Options
	next     uint64 // the sequence the next record must start with; 0: any
	lastKept uint64
	stopped  bool // point in time: damage found, the rest is dropped
}

// checkLog reads one log, filling lr. It returns an error only when
// recovery must fail.
func (c *checker) checkLog(lr *LogResult) error {
	// damage decides what a damage at offset at means in this mode.
	damage := func(at int64, err error) error {
		lr.Err = err
		switch {
		case c.o.Mode == PointInTime && errors.Is(err, base.ErrCorruption):
			lr.KeepEnd, c.stopped = at, true
			return nil
		case c.o.KeepGoing:
			lr.KeepEnd = at
			c.next = 0 // resynchronize on the next log's first record
			return nil
		}
		return err
	}
	err := readLog(c.o.FS, lr, -1, func(r *record.Reader, rec []byte) (bool, error) {
		at := r.RecordOffset()
		first, count, err := c.o.Sequences(rec)
		switch {
		case err != nil && errors.Is(err, base.ErrCorruption):
			err = fmt.Errorf("bloomkv/wal: %s: record at offset %d: %w", lr.Path, at, err)
		case err != nil:
			err = base.CorruptionErrorf("bloomkv/wal: %s: record at offset %d: %v", lr.Path, at, err)
		case count == 0:
			err = base.CorruptionErrorf("bloomkv/wal: %s: record at offset %d: a record with no writes", lr.Path, at)
		case c.next != 0 && first != c.next:
			se := &SequenceError{Path: lr.Path, Offset: at, Got: first, Want: c.next}
			if !c.o.KeepGoing || c.o.Mode == PointInTime {
				err = se
				break
			}
			lr.SeqErrs = append(lr.SeqErrs, se) // and read on from here
		}
		if err != nil {
			return false, damage(at, err)
		}
		if lr.Records == 0 {
			lr.FirstSeq = first
		}
		lr.Records++
		lr.LastSeq = first + count - 1
		c.next, c.lastKept = first+count, first+count-1
		if c.o.OnRecord != nil {
			c.o.OnRecord(lr, at, rec)
		}
		return true, nil
	}, func(r *record.Reader, err error) error {
		return damage(r.EndOfLastRecord(), err)
	})
	if err != nil && c.o.KeepGoing && lr.Err == nil {
		// Only the log's opening fails here with KeepGoing.
		lr.Err, lr.KeepEnd, c.next = err, 0, 0
		return nil
	}
	return err
}

// Replay reads the records Check kept of log lr and calls fn with each.
// The record passed to fn is valid until fn returns.
func Replay(fs vfs.FS, lr *LogResult, fn func(rec []byte) error) error {
	if lr.Records == 0 {
		return nil
	}
	copyLR := *lr
	return readLog(fs, &copyLR, lr.Records, func(_ *record.Reader, rec []byte) (bool, error) {
		return true, fn(rec)
	}, func(_ *record.Reader, err error) error {
		return fmt.Errorf("bloomkv/wal: %s changed during recovery: %w", lr.Path, err)
	})
}

// readLog reads log lr and calls rec for each whole record until it
// returns false or limit records were read (limit < 0: no limit). A torn
// tail sets lr.KeepEnd and lr.TornTail; a read error goes to damage, whose
// result is readLog's.
func readLog(fs vfs.FS, lr *LogResult, limit int, rec func(*record.Reader, []byte) (bool, error), damage func(*record.Reader, error) error) error {
	f, err := fs.Open(lr.Path)
	if err != nil {
		return fmt.Errorf("bloomkv/wal: open log %s: %w", lr.Path, err)
	}
	defer f.Close()
	r := record.NewReader(f, lr.Path)
	if lr.Strict {
		r.SetStrict()
	}
	if lr.reservedOK {
		r.AllowReservedTail()
	}
	for n := 0; limit < 0 || n < limit; n++ {
		b, err := r.Next()
		if err == io.EOF {
			if torn, off := r.TornTail(); torn {
				lr.KeepEnd, lr.TornTail = off, true
			}
			if reserved, off := r.Reserved(); reserved {
				lr.KeepEnd, lr.Reserved = off, lr.Size-off
			}
			return nil
		}
		if err != nil {
			return damage(r, err)
		}
		more, err := rec(r, b)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
