package manifest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// VersionSet owns a database's MANIFEST: it replays it at open, appends each
// version edit (validated, then synced), rolls over to a fresh manifest when
// the current one grows large or a write failed, and points CURRENT at the
// manifest in use. It is the only writer of manifests, for the engine and
// for kvtool alike.
//
// The state it holds is the durable one: the effect of every edit it wrote.
// It is not safe for concurrent use; callers serialize (the engine holds
// its manifest mutex around every call).
type VersionSet struct {
	fs      vfs.FS // constant after construction
	dir     string // constant after construction
	maxSize int64  // roll over to a fresh manifest past this size

	state *State         // never modified in place: replaced by each edit
	num   uint64         // number of the manifest in use; 0 before the first
	w     *record.Writer // nil before the first manifest and after Close
	// uncertain: a write or sync of the manifest (or of CURRENT) failed,
	// so the files on disk may or may not hold the edit being written.
	// Until a fresh manifest is installed, nothing is appended to the old
	// one, and the caller must delete no file (the edit may name a table
	// that looks unreferenced).
	uncertain bool
	closed    bool
}

// NewDBID returns a fresh database identity: 16 random bytes, hex encoded.
func NewDBID() []byte {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("bloomkv/manifest: no randomness for a database identity: " + err.Error())
	}
	return []byte(hex.EncodeToString(b[:]))
}

// LoadVersionSet replays the manifest CURRENT names in dir. It returns the
// set and the manifest's base name. A missing CURRENT is an error for which
// errors.Is(err, os.ErrNotExist) holds; CURRENT naming a manifest that is
// missing is ErrCorruption (CURRENT has no checksum: that is how damage to it
// usually shows). The set writes nothing until its first edit or snapshot,
// which starts a fresh manifest.
func LoadVersionSet(fs vfs.FS, dir string, maxSize int64) (*VersionSet, string, error) {
	name, err := ReadCurrent(fs, dir)
	if err != nil {
		return nil, "", err
	}
	state, err := ReadManifest(fs, fs.PathJoin(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", base.CorruptionErrorf("bloomkv/manifest: %s: CURRENT names %s, which does not exist", dir, name)
	}
	if err != nil {
		return nil, "", err
	}
	_, num, _ := base.ParseFilename(name)
	// The loaded manifest is not appended to (w stays nil): the first write
	// starts a fresh one, so a torn tail dropped by the replay never ends up
	// in the middle of a manifest.
	return &VersionSet{fs: fs, dir: dir, maxSize: maxSize, state: state, num: num}, name, nil
}

// NewVersionSet returns the set of a database that has no manifest yet,
// starting from state. Nothing is written until WriteSnapshot.
func NewVersionSet(fs vfs.FS, dir string, maxSize int64, state *State) *VersionSet {
	if state.Version == nil {
		state.Version = &Version{}
	}
	if state.CompactPointers == nil {
		state.CompactPointers = make(map[int][]byte)
	}
	return &VersionSet{fs: fs, dir: dir, maxSize: maxSize, state: state}
}

// State returns the durable state. It must not be modified; it stays valid
// (and unchanged) after later edits, which replace it.
func (vs *VersionSet) State() *State { return vs.state }

// SetMaxSize changes the size past which the manifest rolls over.
func (vs *VersionSet) SetMaxSize(n int64) { vs.maxSize = n }

// ManifestNum returns the number of the manifest in use (0 before the
// first one was written).
func (vs *VersionSet) ManifestNum() uint64 { return vs.num }

// Uncertain reports whether a failed write left it unknown whether the last
// edit is on disk. While it is, callers must not delete files.
func (vs *VersionSet) Uncertain() bool { return vs.uncertain }

// FileNumAllocator hands out a file number for a fresh manifest and returns
// it with the next number not yet handed out.
type FileNumAllocator func() (num, next uint64)

// WriteSnapshot replaces the state with s and makes it durable as a fresh
// manifest: it writes the snapshot edit, syncs it, points CURRENT at it and
// closes the previous manifest. Open uses it after recovery; LogAndApply
// when it rolls over.
func (vs *VersionSet) WriteSnapshot(s *State, alloc FileNumAllocator) error {
	if vs.closed {
		return errClosed
	}
	num, next := alloc()
	s = s.clone()
	s.NextFileNum = max(s.NextFileNum, next)
	if s.Version == nil {
		s.Version = &Version{}
	}
	name := vs.fs.PathJoin(vs.dir, base.MakeFilename(base.FileTypeManifest, num))
	f, err := vs.fs.Create(name)
	if err != nil {
		vs.uncertain = true
		return fmt.Errorf("bloomkv/manifest: create %s: %w", name, err)
	}
	w := record.NewWriter(f)
	fail := func(err error) error {
		_ = w.Close()
		// CURRENT may already name the new manifest, which holds s.
		vs.uncertain = true
		return err
	}
	edit := SnapshotEdit(s)
	if err := edit.Validate(); err != nil {
		return fail(err)
	}
	if _, err := w.AddRecord(edit.Encode()); err != nil {
		return fail(fmt.Errorf("bloomkv/manifest: write %s: %w", name, err))
	}
	if err := w.Sync(); err != nil {
		return fail(fmt.Errorf("bloomkv/manifest: sync %s: %w", name, err))
	}
	if err := SetCurrent(vs.fs, vs.dir, num); err != nil {
		return fail(err)
	}
	if vs.w != nil {
		_ = vs.w.Close()
	}
	vs.w, vs.num, vs.state, vs.uncertain = w, num, s, false
	return nil
}

// LogAndApply applies edit to the durable version and makes it durable:
// appended to the manifest in use and synced, or as a fresh manifest when
// the current one is full or uncertain. It returns the new version, which
// State then also holds. The caller fills in the edit's counters (LastSeq,
// NextFileNum, FlushedSeq, SyncedSeq).
//
// New tables and a new log number were synced by their writers, but their
// directory entries become durable only with the directory, so it is synced
// first: otherwise a power loss could leave the manifest naming a file that
// is gone.
//
// A failed append or sync may still have left the whole edit on disk (a sync
// error says nothing about what reached the file), and the caller would then
// delete the edit's new tables as failed output. So the edit is retried at
// once as a fresh manifest: if that works the edit is committed and the
// failure is over; if not, the set stays uncertain (see Uncertain).
func (vs *VersionSet) LogAndApply(edit *VersionEdit, alloc FileNumAllocator) (*Version, error) {
	if vs.closed {
		return nil, errClosed
	}
	if err := edit.Validate(); err != nil {
		return nil, err
	}
	if err := vs.state.checkMonotonic(edit); err != nil {
		return nil, fmt.Errorf("bloomkv/manifest: invalid version edit: %w", err)
	}
	b := NewBuilder(vs.state.Version)
	if err := b.Apply(edit); err != nil {
		return nil, err
	}
	nv, err := b.Finish()
	if err != nil {
		return nil, err
	}
	next := vs.state.clone()
	next.apply(edit, nv)

	if len(edit.NewFiles) > 0 || edit.HasLogNum {
		if err := vfs.SyncDir(vs.fs, vs.dir); err != nil {
			return nil, fmt.Errorf("bloomkv/manifest: sync directory %s: %w", vs.dir, err)
		}
	}
	if vs.w == nil || vs.uncertain || vs.w.Size() >= vs.maxSize {
		if err := vs.WriteSnapshot(next, alloc); err != nil {
			return nil, err
		}
		return nv, nil
	}
	_, err = vs.w.AddRecord(edit.Encode())
	if err != nil {
		err = fmt.Errorf("bloomkv/manifest: write %s: %w", vs.name(), err)
	} else if err = vs.w.Sync(); err != nil {
		err = fmt.Errorf("bloomkv/manifest: sync %s: %w", vs.name(), err)
	}
	if err == nil {
		vs.state = next
		return nv, nil
	}
	vs.uncertain = true
	if ferr := vs.WriteSnapshot(next, alloc); ferr != nil {
		return nil, fmt.Errorf("%w (and starting a fresh manifest failed: %v)", err, ferr)
	}
	return nv, nil
}

// errClosed is returned by LogAndApply after Close.
var errClosed = errors.New("bloomkv/manifest: version set closed")

// IsClosed reports whether err says the set was closed.
func IsClosed(err error) bool { return errors.Is(err, errClosed) }

// Close closes the manifest in use (every edit written was synced). Later
// edits fail.
func (vs *VersionSet) Close() error {
	vs.closed = true
	if vs.w == nil {
		return nil
	}
	err := vs.w.Close()
	vs.w = nil
	return err
}

func (vs *VersionSet) name() string {
	return base.MakeFilename(base.FileTypeManifest, vs.num)
}
