package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// A test record is its first sequence (8 bytes) and count (4 bytes).
func rec(first uint64, count uint32) []byte {
	b := binary.LittleEndian.AppendUint64(nil, first)
	return binary.LittleEndian.AppendUint32(b, count)
}

func sequences(r []byte) (uint64, uint64, error) {
	if len(r) != 12 {
		return 0, 0, fmt.Errorf("record of %d bytes", len(r))
	}
	return binary.LittleEndian.Uint64(r), uint64(binary.LittleEndian.Uint32(r[8:])), nil
}

// writeLogs writes one log per element of recs (each a list of [first,
// count] pairs) and returns them in order.
func writeLogs(t *testing.T, fs vfs.FS, recs ...[][2]uint64) []Log {
	t.Helper()
	var logs []Log
	for i, rs := range recs {
		path := fmt.Sprintf("/%06d.log", i+1)
		f, err := fs.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := record.NewWriter(f)
		for _, r := range rs {
			if _, err := w.AddRecord(rec(r[0], uint32(r[1]))); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, Log{Num: uint64(i + 1), Path: path, Size: w.Size()})
	}
	return logs
}

// damage rewrites log l with fn applied to its bytes.
func damage(t *testing.T, fs vfs.FS, l *Log, fn func([]byte) []byte) {
	t.Helper()
	f, err := fs.Open(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, l.Size)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b = fn(b)
	g, err := fs.Create(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write(b); err != nil {
		t.Fatal(err)
	}
	g.Close()
	l.Size = int64(len(b))
}

func opts(fs vfs.FS, mode RecoveryMode, flushed, synced uint64) Options {
	return Options{FS: fs, Mode: mode, FlushedSeq: flushed, FlushedSeqKnown: true, SyncedSeq: synced, Sequences: sequences}
}

// replayed returns the first sequences of every record Replay yields.
func replayed(t *testing.T, fs vfs.FS, res *Result) []uint64 {
	t.Helper()
	var out []uint64
	for i := range res.Logs {
		err := Replay(fs, &res.Logs[i], func(r []byte) error {
			first, _, _ := sequences(r)
			out = append(out, first)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestCheckCleanLogs(t *testing.T) {
	fs := vfs.NewMem()
	logs := writeLogs(t, fs, [][2]uint64{{11, 2}, {13, 1}}, [][2]uint64{{14, 3}}, nil)
	for _, mode := range []RecoveryMode{TolerateTornTail, AbsoluteConsistency, PointInTime} {
		res, err := Check(opts(fs, mode, 10, 16), logs)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if res.LastSeq != 16 || res.DroppedBytes() != 0 {
			t.Fatalf("%s: last %d, dropped %d", mode, res.LastSeq, res.DroppedBytes())
		}
		if got := fmt.Sprint(replayed(t, fs, res)); got != "[11 13 14]" {
			t.Fatalf("%s: replayed %s", mode, got)
		}
	}
}

func TestCheckTornTail(t *testing.T) {
	fs := vfs.NewMem()
	logs := writeLogs(t, fs, [][2]uint64{{1, 1}}, [][2]uint64{{2, 1}, {3, 1}}, nil)
	damage(t, fs, &logs[1], func(b []byte) []byte { return b[:len(b)-3] })
	// The newest non-empty log (the empty one after it does not count) may
	// be torn: its last record is dropped.
	res, err := Check(opts(fs, TolerateTornTail, 0, 1), logs)
	if err != nil {
		t.Fatal(err)
	}
	if res.LastSeq != 2 || !res.Logs[1].TornTail || res.Logs[1].Dropped() == 0 {
		t.Fatalf("last %d, %+v", res.LastSeq, res.Logs[1])
	}
	// Not when the torn write was recorded as synced, and never in absolute
	// consistency.
	if _, err := Check(opts(fs, TolerateTornTail, 0, 3), logs); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("torn synced write: %v", err)
	}
	if _, err := Check(opts(fs, AbsoluteConsistency, 0, 0), logs); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("absolute consistency: %v", err)
	}
	// An older log is read strictly.
	logs = writeLogs(t, fs, [][2]uint64{{1, 1}, {2, 1}}, [][2]uint64{{3, 1}})
	damage(t, fs, &logs[0], func(b []byte) []byte { return b[:len(b)-3] })
	if _, err := Check(opts(fs, TolerateTornTail, 0, 0), logs); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), logs[0].Path) {
		t.Fatalf("torn older log: %v", err)
	}
}

func TestCheckSequenceGap(t *testing.T) {
	fs := vfs.NewMem()
	logs := writeLogs(t, fs, [][2]uint64{{1, 2}}, [][2]uint64{{7, 1}}, [][2]uint64{{8, 1}})
	_, err := Check(opts(fs, TolerateTornTail, 0, 0), logs)
	if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "writes 3-6 are missing") || !strings.Contains(err.Error(), logs[1].Path) {
		t.Fatalf("gap: %v", err)
	}
	// The first log must start right after the flushed sequence.
	if _, err := Check(opts(fs, TolerateTornTail, 5, 0), logs); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("start after flushed: %v", err)
	}
	// Point in time keeps what comes before the gap, and says where.
	res, err := Check(opts(fs, PointInTime, 0, 0), logs)
	if err != nil {
		t.Fatal(err)
	}
	if res.LastSeq != 2 || res.Logs[1].Err == nil || res.Logs[1].KeepEnd != 0 || res.Logs[2].KeepEnd != 0 {
		t.Fatalf("point in time: last %d, logs %+v", res.LastSeq, res.Logs)
	}
	if got := fmt.Sprint(replayed(t, fs, res)); got != "[1]" {
		t.Fatalf("point in time replayed %s", got)
	}
	// KeepGoing reports the gap and reads on.
	o := opts(fs, TolerateTornTail, 0, 0)
	o.KeepGoing = true
	res, err = Check(o, logs)
	if err != nil || len(res.Logs[1].SeqErrs) != 1 || res.Logs[1].Err != nil || res.Logs[1].Records != 1 ||
		res.Logs[2].SeqErrs != nil || res.Logs[2].Records != 1 || res.LastSeq != 8 {
		t.Fatalf("keep going: %v %+v", err, res)
	}
	// The error says which: a gap, from where to where.
	var se *SequenceError
	if _, err := Check(opts(fs, TolerateTornTail, 0, 0), logs); !errors.As(err, &se) || !se.Gap() ||
		se.Path != logs[1].Path || se.Offset != 0 || se.Got != 7 || se.Want != 3 {
		t.Fatalf("gap: %v (%+v)", err, se)
	}
}

func TestCheckSequenceOverlap(t *testing.T) {
	fs := vfs.NewMem()
	logs := writeLogs(t, fs, [][2]uint64{{1, 3}}, [][2]uint64{{3, 1}})
	_, err := Check(opts(fs, TolerateTornTail, 0, 0), logs)
	var se *SequenceError
	if !errors.As(err, &se) || se.Gap() || se.Got != 3 || se.Want != 4 || !errors.Is(err, base.ErrCorruption) ||
		strings.Contains(err.Error(), "missing") {
		t.Fatalf("overlap: %v (%+v)", err, se)
	}
}

// TestCheckKeepGoing: a tool sees every problem of every log. Sequence
// errors do not stop a log (the sequence goes on from the record); other
// damage ends it, and the next log starts a new sequence; a log that
// cannot be opened and missing synced writes are recorded, not returned.
func TestCheckKeepGoing(t *testing.T) {
	fs := vfs.NewMem()
	logs := writeLogs(t, fs,
		[][2]uint64{{11, 1}, {20, 2}, {21, 1}, {22, 1}}, // a gap, an overlap
		[][2]uint64{{23, 1}, {24, 1}, {25, 1}},          // damaged in its second record
		[][2]uint64{{40, 1}},                            // after damage: no gap reported
		nil,                                             // cannot be opened
		[][2]uint64{{41, 1}})
	damage(t, fs, &logs[1], func(b []byte) []byte {
		b[19+2] ^= 1 // the checksum of the second record (at offset 19)
		return b
	})
	if err := fs.Remove(logs[3].Path); err != nil {
		t.Fatal(err)
	}
	var seen []string
	o := opts(fs, TolerateTornTail, 10, 50)
	o.KeepGoing = true
	o.OnRecord = func(lr *LogResult, off int64, r []byte) {
		first, _, _ := sequences(r)
		seen = append(seen, fmt.Sprintf("%d@%s:%d", first, lr.Path, off))
	}
	res, err := Check(o, logs)
	if err != nil {
		t.Fatal(err)
	}
	l := res.Logs
	if len(l[0].SeqErrs) != 2 || !l[0].SeqErrs[0].Gap() || l[0].SeqErrs[0].Offset != 19 || l[0].SeqErrs[0].Want != 12 ||
		l[0].SeqErrs[1].Gap() || l[0].SeqErrs[1].Got != 21 || l[0].SeqErrs[1].Want != 22 || l[0].Err != nil ||
		l[0].Records != 4 || l[0].FirstSeq != 11 || l[0].LastSeq != 22 {
		t.Fatalf("log 1: %+v", l[0])
	}
	var ce *record.CorruptionError
	if !errors.As(l[1].Err, &ce) || ce.Offset != 19 || l[1].Records != 1 || l[1].KeepEnd != 19 || l[1].SeqErrs != nil {
		t.Fatalf("log 2: %+v", l[1])
	}
	if l[2].Err != nil || l[2].SeqErrs != nil || l[2].Records != 1 {
		t.Fatalf("log 3: %+v", l[2])
	}
	if l[3].Err == nil || errors.Is(l[3].Err, base.ErrCorruption) || l[3].Records != 0 {
		t.Fatalf("log 4: %+v", l[3])
	}
	if l[4].Err != nil || l[4].Records != 1 || res.LastSeq != 41 {
		t.Fatalf("log 5: %+v, last %d", l[4], res.LastSeq)
	}
	if !errors.Is(res.MissingSynced, base.ErrCorruption) {
		t.Fatalf("missing synced writes: %v", res.MissingSynced)
	}
	want := "[11@/000001.log:0 20@/000001.log:19 21@/000001.log:38 22@/000001.log:57 23@/000002.log:0 40@/000003.log:0 41@/000005.log:0]"
	if got := fmt.Sprint(seen); got != want {
		t.Fatalf("OnRecord saw\n%s\nwant\n%s", got, want)
	}
}

func TestCheckMalformedRecord(t *testing.T) {
	fs := vfs.NewMem()
	logs := writeLogs(t, fs, [][2]uint64{{1, 1}, {2, 0}, {2, 1}})
	_, err := Check(opts(fs, TolerateTornTail, 0, 0), logs)
	if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "/000001.log: record at offset 19: a record with no writes") {
		t.Fatalf("empty record: %v", err)
	}
	// A Sequences error that marks corruption itself is wrapped as it is,
	// so a caller can still find its own error type in it.
	mine := base.CorruptionErrorf("mine")
	o := opts(fs, TolerateTornTail, 0, 0)
	o.Sequences = func([]byte) (uint64, uint64, error) { return 0, 0, mine }
	_, err = Check(o, logs)
	if !errors.Is(err, mine) || err.Error() != "bloomkv/wal: /000001.log: record at offset 0: mine: bloomkv: corruption" {
		t.Fatalf("wrapped: %v", err)
	}
	// Any other Sequences error is corruption too.
	o.Sequences = func([]byte) (uint64, uint64, error) { return 0, 0, errors.New("not a batch") }
	if _, err = Check(o, logs); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "record at offset 0: not a batch") {
		t.Fatalf("plain: %v", err)
	}
}
