package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/bloomkv/bloomkv"
	"github.com/hashicorp/raft"
)

// Snapshot stream format (docs/server.md at the repository root has the worked example):
//
//	header, 16 bytes:
//	  0   4  magic "BKVS"
//	  4   1  format version, 1
//	  5   3  reserved, zero
//	  8   8  applied index: the last log entry the state includes, uint64 LE
//	records, one per key of the state database except the applied index,
//	in increasing key order:
//	  uvarint key length (>= 1), key, uvarint value length, value
//	end:
//	  1   a zero byte (a key length of 0: keys are never empty)
//	  8   record count, uint64 LE
//	  4   CRC-32C (Castagnoli) of every byte before it, uint32 LE
//
// Keys and values are the state database's own (doc.go): user keys with
// their prefix byte, values with their kind byte, node addresses. Nothing
// may follow the checksum. These constants never change; a new layout gets
// a new version number.
const (
	snapshotMagic   = "BKVS"
	snapshotVersion = 1
	snapshotHeader  = 16
)

// ErrBadSnapshot marks a snapshot stream that is not one Persist wrote.
var ErrBadSnapshot = errors.New("bloomkv/fsm: bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot captures the state as of the last applied entry (raft.FSM). It
// takes a bloomkv snapshot, which costs no copy; Persist streams it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	h, err := f.acquire()
	if err != nil {
		return nil, err
	}
	f.snapshots.Add(1)
	// raft calls Snapshot between applies, so the database holds exactly
	// the entries up to applied.
	return &fsmSnapshot{h: h, snap: h.db.NewSnapshot(), applied: f.applied.Load()}, nil
}

type fsmSnapshot struct {
	h       *handle
	snap    *bloomkv.Snapshot
	applied uint64
}

// Persist writes the snapshot stream to sink.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.writeStream(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// writeStream writes the snapshot stream to w.
func (s *fsmSnapshot) writeStream(w io.Writer) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 256<<10)
	var hdr [snapshotHeader]byte
	copy(hdr[:], snapshotMagic)
	hdr[4] = snapshotVersion
	binary.LittleEndian.PutUint64(hdr[8:], s.applied)
	bw.Write(hdr[:])
	it := s.snap.NewIterator(nil)
	var n uint64
	var lb [binary.MaxVarintLen64]byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if bytes.Equal(k, appliedKey) {
			continue
		}
		bw.Write(lb[:binary.PutUvarint(lb[:], uint64(len(k)))])
		bw.Write(k)
		v := it.Value()
		bw.Write(lb[:binary.PutUvarint(lb[:], uint64(len(v)))])
		bw.Write(v)
		n++
	}
	err := it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bloomkv/fsm: reading the state for a snapshot: %w", err)
	}
	var end [9]byte
	binary.LittleEndian.PutUint64(end[1:], n)
	bw.Write(end[:])
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("bloomkv/fsm: writing a snapshot: %w", err)
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return fmt.Errorf("bloomkv/fsm: writing a snapshot: %w", err)
	}
	return nil
}

// Release lets go of the snapshot's view.
func (s *fsmSnapshot) Release() {
	s.snap.Close()
	s.h.release()
}

// hashReader reads from a bufio.Reader and hashes what it hands out.
type hashReader struct {
	r   *bufio.Reader
	h   hash.Hash32
	off int64
}

func (r *hashReader) ReadByte() (byte, error) {
	b, err := r.r.ReadByte()
	if err == nil {
		r.h.Write([]byte{b})
		r.off++
	}
	return b, err
}

func (r *hashReader) full(p []byte) error {
	n, err := io.ReadFull(r.r, p)
	r.h.Write(p[:n])
	r.off += int64(n)
	return err
}

func (r *hashReader) bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", ErrBadSnapshot, fmt.Sprintf(format, args...), r.off)
}

// Restore replaces the state with the snapshot in rc (raft.FSM).
//
// When the state already includes the snapshot's applied index (raft
// restores the newest snapshot each time it starts, and the state database
// survived the restart), the state is kept: it is the snapshot's state
// with later entries applied, and raft's replay of those entries is
// skipped by index. Otherwise the stream is loaded into a new database
// beside the current one, checked to its checksum, and switched in with
// one atomic rename of CURRENT; a stream that fails changes nothing.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := &hashReader{r: bufio.NewReaderSize(rc, 256<<10), h: crc32.New(castagnoli)}
	var hdr [snapshotHeader]byte
	if err := r.full(hdr[:]); err != nil {
		return r.bad("header: %v", err)
	}
	if string(hdr[:4]) != snapshotMagic || hdr[4] != snapshotVersion || hdr[5]|hdr[6]|hdr[7] != 0 {
		return fmt.Errorf("%w: header %x is not a version %d bloomkv snapshot", ErrBadSnapshot, hdr[:8], snapshotVersion)
	}
	applied := binary.LittleEndian.Uint64(hdr[8:])
	if applied <= f.applied.Load() {
		f.restoresSkipped.Add(1)
		f.opts.Logger.Info("bloomkv/fsm: state already includes the snapshot; keeping it", "snapshot_index", applied, "applied", f.applied.Load())
		return nil
	}

	f.stateMu.Lock()
	seq := f.dbSeq + 1
	f.stateMu.Unlock()
	dir := filepath.Join(f.dir, dbDirName(seq))
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("bloomkv/fsm: %w", err)
	}
	if err := f.load(dir, r, applied); err != nil {
		os.RemoveAll(dir)
		return err
	}
	db, err := bloomkv.Open(dir, f.opts.DB)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("bloomkv/fsm: reopening the restored state: %w", err)
	}
	if err := writeCurrent(f.dir, dbDirName(seq)); err != nil {
		db.Close()
		os.RemoveAll(dir)
		return err
	}
	f.stateMu.Lock()
	old := f.cur
	f.cur = newHandle(db, dir, f.opts.Logger)
	f.dbSeq = seq
	f.stateMu.Unlock()
	f.cache.reset()
	f.strings.reset()
	// Counted before the applied index moves: whoever sees the new index
	// (a follower's catch-up check, a test) must also see the restore.
	f.restores.Add(1)
	f.setApplied(applied)
	if old != nil {
		old.retire(true)
	}
	return nil
}

// load writes the records of r into a new database in dir, without a
// write-ahead log (Close flushes it), and checks the stream's end.
func (f *FSM) load(dir string, r *hashReader, applied uint64) error {
	var o bloomkv.Options
	if f.opts.DB != nil {
		o = *f.opts.DB
	}
	o.WALMode, o.Sync = bloomkv.WALDisabled, false
	db, err := bloomkv.Open(dir, &o)
	if err != nil {
		return fmt.Errorf("bloomkv/fsm: creating a database to restore into: %w", err)
	}
	err = f.loadRecords(db, r, applied)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *FSM) loadRecords(db *bloomkv.DB, r *hashReader, applied uint64) error {
	b := bloomkv.NewBatch()
	size := 0
	var prev []byte
	var n uint64
	for {
		klen, err := binary.ReadUvarint(r)
		if err != nil {
			return r.bad("key length: %v", err)
		}
		if klen == 0 {
			break
		}
		if klen > bloomkv.MaxKeySize {
			return r.bad("key length %d", klen)
		}
		key := make([]byte, klen)
		if err := r.full(key); err != nil {
			return r.bad("key: %v", err)
		}
		if prev != nil && bytes.Compare(key, prev) <= 0 {
			return r.bad("key %q is not above the previous key %q", key, prev)
		}
		vlen, err := binary.ReadUvarint(r)
		if err != nil || vlen > bloomkv.MaxValueSize {
			return r.bad("value length %d: %v", vlen, err)
		}
		val := make([]byte, vlen)
		if err := r.full(val); err != nil {
			return r.bad("value: %v", err)
		}
		b.Put(key, val)
		prev = key
		n++
		if size += len(key) + len(val); size >= 4<<20 {
			if err := db.Write(b); err != nil {
				return fmt.Errorf("bloomkv/fsm: restoring: %w", err)
			}
			b, size = bloomkv.NewBatch(), 0
		}
	}
	var cnt [8]byte
	if err := r.full(cnt[:]); err != nil {
		return r.bad("record count: %v", err)
	}
	if got := binary.LittleEndian.Uint64(cnt[:]); got != n {
		return r.bad("record count %d, but %d records", got, n)
	}
	want := r.h.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(r.r, sum[:]); err != nil {
		return r.bad("checksum: %v", err)
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return r.bad("checksum %08x, computed %08x", got, want)
	}
	if _, err := r.r.ReadByte(); err != io.EOF {
		return r.bad("bytes after the checksum")
	}
	b.Put(appliedKey, binary.LittleEndian.AppendUint64(nil, applied))
	if err := db.Write(b); err != nil {
		return fmt.Errorf("bloomkv/fsm: restoring: %w", err)
	}
	return nil
}
