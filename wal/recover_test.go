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
	if err != nil || res.Logs[1].Err == nil || res.Logs[2].Err != nil || res.Logs[2].Records != 1 {
		t.Fatalf("keep going: %v %+v", err, res)
	}
}

func TestCheckMalformedRecord(t *testing.T) {
	fs := vfs.NewMem()
	logs := writeLogs(t, fs, [][2]uint64{{1, 1}, {2, 0}, {2, 1}})
	_, err := Check(opts(fs, TolerateTornTail, 0, 0), logs)
	if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "no writes") {
		t.Fatalf("empty record: %v", err)
	}
}
