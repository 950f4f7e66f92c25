package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// writeLog writes the given records as a wal-framed file and returns its
// path and the records' offsets.
func writeLog(t *testing.T, records ...[]byte) (string, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "MANIFEST-000001")
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := record.NewWriter(f)
	var offsets []int64
	for _, r := range records {
		off, err := w.AddRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, off)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, offsets
}

// scenario is a multi-edit manifest and the state it must replay to.
func scenario() ([]*VersionEdit, *State) {
	f1, f2, f3 := meta(10, "a", "f", 5), meta(11, "g", "k", 6), meta(12, "a", "z", 9)
	f4 := meta(13, "b", "c", 12)
	edits := []*VersionEdit{
		{HasLogNum: true, LogNum: 7, HasNextFileNum: true, NextFileNum: 14, HasLastSeq: true, LastSeq: 9,
			NewFiles: []NewFileEntry{{1, f1}, {1, f2}, {0, f3}}},
		{HasLogNum: true, LogNum: 15, NewFiles: []NewFileEntry{{0, f4}}},
		{DeletedFiles: []DeletedFileEntry{{0, 12}, {0, 13}, {1, 10}},
			NewFiles:        []NewFileEntry{{1, meta(16, "a", "b", 12)}, {1, meta(17, "ba", "fz", 12)}},
			CompactPointers: []CompactPointer{{0, []byte("z")}}},
		{DeletedFiles: []DeletedFileEntry{{1, 11}}, NewFiles: []NewFileEntry{{2, f2}},
			HasLastSeq: true, LastSeq: 40, CompactPointers: []CompactPointer{{1, []byte("k")}, {0, []byte("q")}}},
	}
	v := &Version{}
	v.Levels[1] = []*FileMetadata{meta(16, "a", "b", 12), meta(17, "ba", "fz", 12)}
	v.Levels[2] = []*FileMetadata{f2}
	want := &State{Version: v, LogNum: 15, NextFileNum: 18, LastSeq: 40,
		CompactPointers: map[int][]byte{0: []byte("q"), 1: []byte("k")}}
	return edits, want
}

func encodeAll(edits []*VersionEdit) [][]byte {
	var recs [][]byte
	for _, e := range edits {
		recs = append(recs, e.Encode())
	}
	return recs
}

func checkState(t *testing.T, got, want *State) {
	t.Helper()
	if got.LogNum != want.LogNum || got.NextFileNum != want.NextFileNum || got.LastSeq != want.LastSeq {
		t.Fatalf("counters: got log %d next %d seq %d, want log %d next %d seq %d",
			got.LogNum, got.NextFileNum, got.LastSeq, want.LogNum, want.NextFileNum, want.LastSeq)
	}
	if !reflect.DeepEqual(got.Version.Levels, want.Version.Levels) {
		t.Fatalf("version:\n got %v\nwant %v", got.Version.Levels, want.Version.Levels)
	}
	if !reflect.DeepEqual(got.CompactPointers, want.CompactPointers) {
		t.Fatalf("compact pointers: got %v, want %v", got.CompactPointers, want.CompactPointers)
	}
}

func TestReadManifestMultiEdit(t *testing.T) {
	edits, want := scenario()
	path, _ := writeLog(t, encodeAll(edits)...)
	got, err := ReadManifest(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	checkState(t, got, want)
}

func TestReadManifestDropsTornTail(t *testing.T) {
	edits, _ := scenario()
	recs := encodeAll(edits)
	path, offsets := writeLog(t, recs...)
	// Cut the file inside the last edit: it replays as the first three.
	if err := os.Truncate(path, offsets[3]+3); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	prefix, _ := writeLog(t, recs[:3]...)
	want, err := ReadManifest(vfs.Default, prefix)
	if err != nil {
		t.Fatal(err)
	}
	checkState(t, got, want)
}

func TestReadManifestCorruption(t *testing.T) {
	edits, _ := scenario()
	recs := encodeAll(edits)
	snapshotOnly := &VersionEdit{HasNextFileNum: true, NextFileNum: 3, HasLastSeq: true}
	cases := []struct {
		name    string
		records [][]byte
		bad     int // index of the record the error must name
		want    string
	}{
		{"undecodable edit", [][]byte{recs[0], {0x63}, recs[1]}, 1, "version edit byte 0: unknown tag 99"},
		{"first edit not a snapshot", [][]byte{recs[1], recs[0]}, 0, "first edit is not a snapshot"},
		{"first edit lacks log number", [][]byte{snapshotOnly.Encode()}, 0, "first edit is not a snapshot"},
		{"delete of absent file", [][]byte{recs[0], recs[1], (&VersionEdit{DeletedFiles: []DeletedFileEntry{{3, 10}}}).Encode(), recs[2]}, 2, "deleting file 000010 from level 3"},
		{"re-added file", [][]byte{recs[0], adds(3, meta(11, "a", "b", 1)).Encode()}, 1, "adding file 000011"},
		{"overlap in level 1", [][]byte{recs[0], adds(1, meta(30, "e", "h", 1)).Encode()}, 1, "overlap"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, offsets := writeLog(t, tc.records...)
			_, err := ReadManifest(vfs.Default, path)
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("ReadManifest = %v, want corruption", err)
			}
			where := fmt.Sprintf("bloomkv/manifest: %s at offset ", path)
			if tc.name != "overlap in level 1" {
				where += fmt.Sprintf("%d: ", offsets[tc.bad])
			}
			if !strings.HasPrefix(err.Error(), where) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant prefix %q and %q", err, where, tc.want)
			}
		})
	}
}

func TestReadManifestEmptyIsCorruption(t *testing.T) {
	path, _ := writeLog(t)
	if _, err := ReadManifest(vfs.Default, path); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "no version edits") {
		t.Fatalf("empty manifest: %v", err)
	}
}

func TestReadManifestDamagedFrame(t *testing.T) {
	// A manifest big enough to span blocks, damaged in its first block.
	edits, _ := scenario()
	recs := encodeAll(edits[:1])
	for i := range 8000 {
		recs = append(recs, (&VersionEdit{HasLastSeq: true, LastSeq: uint64(100 + i)}).Encode())
	}
	path, _ := writeLog(t, recs...)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2*record.BlockSize {
		t.Fatalf("manifest only %d bytes", len(data))
	}
	data[100] ^= 0x10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadManifest(vfs.Default, path)
	if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), path) {
		t.Fatalf("damaged manifest: %v", err)
	}
}

func TestReadManifestRaisesCounters(t *testing.T) {
	// A later edit adds file 40 and log 50 without moving NextFileNum.
	e0 := &VersionEdit{HasLogNum: true, LogNum: 2, HasNextFileNum: true, NextFileNum: 3, HasLastSeq: true, LastSeq: 5}
	e1 := adds(0, meta(40, "a", "b", 77))
	e1.HasLogNum, e1.LogNum = true, 50
	path, _ := writeLog(t, e0.Encode(), e1.Encode())
	s, err := ReadManifest(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	if s.NextFileNum != 51 || s.LastSeq != 77 {
		t.Fatalf("NextFileNum %d LastSeq %d, want 51 and 77", s.NextFileNum, s.LastSeq)
	}
}

func TestReadManifestMissingFile(t *testing.T) {
	_, err := ReadManifest(vfs.Default, filepath.Join(t.TempDir(), "MANIFEST-000009"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing manifest: %v", err)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	dir := t.TempDir()
	for i := range 30 {
		want := &State{
			Version: randomVersion(t, rng), LogNum: 500 + rng.Uint64N(10),
			LastSeq: 1000 + rng.Uint64N(10), CompactPointers: map[int][]byte{},
		}
		want.NextFileNum = want.LogNum + 1 + rng.Uint64N(5)
		for l := range rng.IntN(NumLevels) {
			want.CompactPointers[l] = []byte(userKey(rng.IntN(100)))
		}
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(sub, base.MakeFilename(base.FileTypeManifest, 1))
		vs := NewVersionSet(vfs.Default, sub, want, Options{MaxManifestSize: 1 << 20})
		if err := vs.WriteSnapshot(func() (uint64, uint64) { return 1, want.NextFileNum }); err != nil {
			t.Fatal(err)
		}
		extra := adds(6, meta(499, "zz", "zzz", 3))
		if _, err := vs.LogAndApply(extra, Install{}); err != nil {
			t.Fatal(err)
		}
		if _, err := vs.LogAndApply(adds(6, meta(1, "z", "a", 1)), Install{}); err == nil {
			t.Fatal("LogAndApply accepted an invalid edit")
		}
		if err := vs.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := ReadManifest(vfs.Default, path)
		if err != nil {
			t.Fatal(err)
		}
		b := NewBuilder(want.Version)
		if err := b.Apply(extra); err != nil {
			t.Fatal(err)
		}
		if want.Version, err = b.Finish(); err != nil {
			t.Fatal(err)
		}
		checkState(t, got, want)
	}
}

func TestSnapshotEditOrder(t *testing.T) {
	s := &State{Version: &Version{}, CompactPointers: map[int][]byte{3: []byte("c"), 1: []byte("a")}}
	s.Version.Levels[0] = []*FileMetadata{meta(2, "a", "b", 9), meta(1, "a", "b", 3)}
	s.Version.Levels[4] = []*FileMetadata{meta(3, "a", "b", 1)}
	e := SnapshotEdit(s)
	if !e.HasLogNum || !e.HasNextFileNum || !e.HasLastSeq {
		t.Fatal("snapshot lacks counters")
	}
	var nums []uint64
	for _, nf := range e.NewFiles {
		nums = append(nums, nf.Meta.FileNum)
	}
	if !reflect.DeepEqual(nums, []uint64{2, 1, 3}) || e.CompactPointers[0].Level != 1 || e.CompactPointers[1].Level != 3 {
		t.Fatalf("snapshot order: files %v, pointers %v", nums, e.CompactPointers)
	}
	if !bytes.Equal(e.Encode(), SnapshotEdit(s).Encode()) {
		t.Fatal("SnapshotEdit is not deterministic")
	}
}
