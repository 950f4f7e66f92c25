package manifest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/vfs"
)

// VersionSet is the one owner of a database's tree state, LevelDB's
// VersionSet being the model: the current version and the references
// readers hold on versions (which tables are live), the sequence numbers
// (last assigned, last visible to reads, last synced to a log), file
// numbers and the durable reservation ahead of them, and the compact
// pointers. It also owns the MANIFEST: it replays it at open, appends each
// version edit (validated, then synced), rolls over to a fresh manifest
// when the current one grows large or a write failed, and points CURRENT
// at the manifest in use. It is the only writer of manifests, for the
// engine and for kvtool alike. The engine keeps no copy of any of this: it
// asks the set.
//
// # Locks
//
// The set takes no lock of its own for its state; the caller's two locks
// guard it (see the package doc, "Locks"):
//
//   - the manifest lock (the engine's DB.manifestMu; for a tool, whatever
//     serializes its calls) is held around every call that writes the
//     manifest or reads the durable state: LogAndApply, WriteSnapshot,
//     State, ManifestNum, Uncertain, SetMaxSize, Close;
//   - the state lock (Options.Mu: the engine's DB.mu) guards the in-memory
//     counters and the current version: methods documented "REQUIRES: the
//     state lock". LogAndApply and WriteSnapshot take it themselves, for
//     short critical sections with no I/O, so their callers must not hold
//     it.
//
// VisibleSeq is an atomic, read without any lock; version references are
// atomics, and the list of live versions has a leaf lock of its own.
type VersionSet struct {
	// Constant after construction.
	fs        vfs.FS
	dir       string
	mu        *sync.Mutex // the state lock
	onRelease func()
	reserve   uint64              // Options.FileNumReserve
	foreign   map[uint64]struct{} // numbers of ForeignFiles: never handed out

	// Guarded by the manifest lock.
	maxSize int64          // roll over to a fresh manifest past this size
	state   *State         // durable; never modified in place: replaced by each edit
	num     uint64         // number of the manifest in use; 0 before the first
	w       *record.Writer // nil before the first manifest and after Close
	// uncertain: a write or sync of the manifest (or of CURRENT) failed,
	// so the files on disk may or may not hold the edit being written.
	// Until a fresh manifest is installed, nothing is appended to the old
	// one, and the caller must delete no file (the edit may name a table
	// that looks unreferenced).
	uncertain bool
	closed    bool

	// Guarded by the state lock. Changed only under both locks, so either
	// one is enough to read them: current, compactPointers, fileNumLimit.
	current *Version // holds the set's reference
	// compactPointers: per level, the largest key of the last compaction
	// there (the durable state's map; never modified in place).
	compactPointers map[int][]byte
	lastSeq         uint64 // last sequence assigned to a write
	// syncedSeq: every write up to it is synced to a log (or in a table);
	// recorded by the next edit, and recovery must find all of them.
	syncedSeq uint64
	// nextFileNum is the next file number to hand out. fileNumLimit is the
	// durable manifest's NextFileNum: numbers below it are reserved, so
	// every file the engine writes is numbered below what the manifest
	// records, and a file at or above it is one the engine never wrote.
	nextFileNum  uint64
	fileNumLimit uint64

	// visibleSeq: every write with a sequence up to it is fully applied
	// (in a memtable or a table); reads use it as their point in time.
	// Stored under the state lock, loaded without any lock.
	visibleSeq atomic.Uint64

	liveMu sync.Mutex // guards live; a leaf lock
	// live: the installed versions with references, whose tables must
	// stay.
	live map[*Version]struct{}
}

// Options configure a VersionSet. The zero value suits a tool that writes
// a manifest for a database no engine has open.
type Options struct {
	// MaxManifestSize: LogAndApply rolls over to a fresh manifest once the
	// one in use reaches it (0: at every edit).
	MaxManifestSize int64
	// Mu is the state lock, the engine's DB mutex; nil gives the set a
	// mutex of its own.
	Mu *sync.Mutex
	// OnRelease is called, without locks, whenever an installed version
	// loses its last reference: its tables may have become obsolete.
	OnRelease func()
	// FileNumReserve is how many file numbers an edit reserves ahead of
	// use when fewer than half of that are left (0: the set reserves
	// nothing, and edits record NextFileNum only when they say it).
	FileNumReserve uint64
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
func LoadVersionSet(fs vfs.FS, dir string, opts Options) (*VersionSet, string, error) {
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
	vs := NewVersionSet(fs, dir, state, opts)
	vs.num = num
	return vs, name, nil
}

// NewVersionSet returns the set of a database whose state is state (as a
// manifest replay or a recovery found it): its version becomes current,
// its counters the set's. Nothing is written until WriteSnapshot or
// LogAndApply. The set keeps its own copy of the version (same tables), so
// state.Version may belong to another set.
func NewVersionSet(fs vfs.FS, dir string, state *State, opts Options) *VersionSet {
	s := state.clone()
	if s.Version == nil {
		s.Version = &Version{}
	}
	s.Version = &Version{Levels: s.Version.Levels}
	if s.CompactPointers == nil {
		s.CompactPointers = make(map[int][]byte)
	}
	vs := &VersionSet{
		fs: fs, dir: dir, mu: opts.Mu, onRelease: opts.OnRelease, reserve: opts.FileNumReserve,
		foreign: map[uint64]struct{}{}, maxSize: opts.MaxManifestSize, state: s,
		compactPointers: s.CompactPointers,
		lastSeq:         s.LastSeq, syncedSeq: s.SyncedSeq,
		nextFileNum: s.NextFileNum, fileNumLimit: s.NextFileNum,
		live: map[*Version]struct{}{},
	}
	if vs.mu == nil {
		vs.mu = new(sync.Mutex)
	}
	for _, name := range s.ForeignFiles {
		if _, num, ok := base.ParseFilename(name); ok {
			vs.foreign[num] = struct{}{}
		}
	}
	vs.visibleSeq.Store(s.LastSeq)
	vs.adopt(s.Version)
	vs.current = s.Version
	return vs
}

// State returns the durable state. It must not be modified; it stays valid
// (and unchanged) after later edits, which replace it.
// REQUIRES: the manifest lock.
func (vs *VersionSet) State() *State { return vs.state }

// SetMaxSize changes the size past which the manifest rolls over.
// REQUIRES: the manifest lock.
func (vs *VersionSet) SetMaxSize(n int64) { vs.maxSize = n }

// ManifestNum returns the number of the manifest in use (0 before the
// first one was written). REQUIRES: the manifest lock.
func (vs *VersionSet) ManifestNum() uint64 { return vs.num }

// Uncertain reports whether a failed write left it unknown whether the last
// edit is on disk. While it is, callers must not delete files.
// REQUIRES: the manifest lock.
func (vs *VersionSet) Uncertain() bool { return vs.uncertain }

// FileNumAllocator hands out a file number for a fresh manifest and returns
// it with the next number not yet handed out.
type FileNumAllocator func() (num, next uint64)

// WriteSnapshot makes the set's state durable as a fresh manifest: it
// writes the snapshot edit, syncs it, points CURRENT at it and closes the
// previous manifest. Open uses it after recovery. alloc, when non-nil,
// chooses the manifest's number and the NextFileNum it records (a tool
// writing a manifest for a database no engine has open); nil takes them
// from the set's own file numbers.
// REQUIRES: the manifest lock; not the state lock.
func (vs *VersionSet) WriteSnapshot(alloc FileNumAllocator) error {
	if alloc == nil {
		alloc = vs.allocManifestNum
	}
	return vs.writeSnapshot(vs.state, alloc)
}

// writeSnapshot replaces the durable state with s, written as a fresh
// manifest (see WriteSnapshot).
func (vs *VersionSet) writeSnapshot(s *State, alloc FileNumAllocator) error {
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
	vs.mu.Lock()
	// The new reservation is durable; the manifest's own number is used.
	vs.fileNumLimit = max(vs.fileNumLimit, s.NextFileNum)
	vs.nextFileNum = max(vs.nextFileNum, num+1)
	vs.mu.Unlock()
	return nil
}

// allocManifestNum is the set's FileNumAllocator: the next number not a
// foreign file's, and a new reservation past it. It may use the last
// number of the reservation, which TakeFileNum leaves for it: a fresh
// manifest cannot wait for a reservation, since it is how one is written.
// REQUIRES: the manifest lock; not the state lock.
func (vs *VersionSet) allocManifestNum() (num, next uint64) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.reserve == 0 {
		// Nothing is reserved: every number below the durable
		// NextFileNum may be in use.
		vs.nextFileNum = max(vs.nextFileNum, vs.state.NextFileNum)
	}
	for {
		num = vs.nextFileNum
		vs.nextFileNum++
		if _, foreign := vs.foreign[num]; !foreign {
			break
		}
	}
	return num, max(vs.fileNumLimit, vs.nextFileNum+vs.reserve)
}

// Install says how LogAndApply publishes the version it made durable.
type Install struct {
	// Prepare, if set, is called with the new version before anyone else
	// can see it, without the state lock (the manifest lock is held): the
	// place to Attach what the engine derives from it.
	Prepare func(nv *Version)
	// Publish, if set, is called under the state lock right after the new
	// version became current, in the same critical section: the place to
	// publish what readers load together with it.
	Publish func()
}

// LogAndApply applies edit to the durable version, makes it durable and
// installs the new version as current, which it returns.
//
// The set first records in the edit the counters it holds that moved past
// the durable state (unless the edit says more itself): LastSeq, SyncedSeq,
// and NextFileNum when the file-number reservation runs low (fewer than
// half of Options.FileNumReserve numbers left). The edit is then appended
// to the manifest in use and synced, or written as a fresh manifest when
// the current one is full or uncertain. Last, the new version is installed
// (see Install): it becomes current with the set's reference, the previous
// current version loses that reference (after the state lock is released),
// and the reservation and compact pointers follow the durable state.
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
// failure is over; if not, the set stays uncertain (see Uncertain). On any
// error nothing is installed.
//
// REQUIRES: the manifest lock; not the state lock.
func (vs *VersionSet) LogAndApply(edit *VersionEdit, in Install) (*Version, error) {
	if vs.closed {
		return nil, errClosed
	}
	vs.mu.Lock()
	vs.recordCountersLocked(edit)
	vs.mu.Unlock()
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

	if err := vs.write(edit, next); err != nil {
		return nil, err
	}
	vs.install(nv, in)
	return nv, nil
}

// recordCountersLocked fills in the counters of edit that moved past the
// durable state. REQUIRES: the manifest lock and the state lock.
func (vs *VersionSet) recordCountersLocked(edit *VersionEdit) {
	d := vs.state
	if vs.lastSeq > d.LastSeq && (!edit.HasLastSeq || edit.LastSeq < vs.lastSeq) {
		edit.HasLastSeq, edit.LastSeq = true, vs.lastSeq
	}
	if vs.syncedSeq > d.SyncedSeq && (!edit.HasSyncedSeq || edit.SyncedSeq < vs.syncedSeq) {
		edit.HasSyncedSeq, edit.SyncedSeq = true, vs.syncedSeq
	}
	if vs.reserve > 0 {
		want := vs.fileNumLimit
		if want < vs.nextFileNum+vs.reserve/2 {
			want = vs.nextFileNum + vs.reserve
		}
		if want > d.NextFileNum && (!edit.HasNextFileNum || edit.NextFileNum < want) {
			edit.HasNextFileNum, edit.NextFileNum = true, want
		}
	}
}

// write makes edit, which turns the durable state into next, durable.
// REQUIRES: the manifest lock; not the state lock.
func (vs *VersionSet) write(edit *VersionEdit, next *State) error {
	if len(edit.NewFiles) > 0 || edit.HasLogNum {
		if err := vfs.SyncDir(vs.fs, vs.dir); err != nil {
			return fmt.Errorf("bloomkv/manifest: sync directory %s: %w", vs.dir, err)
		}
	}
	if vs.w == nil || vs.uncertain || vs.w.Size() >= vs.maxSize {
		return vs.writeSnapshot(next, vs.allocManifestNum)
	}
	_, err := vs.w.AddRecord(edit.Encode())
	if err != nil {
		err = fmt.Errorf("bloomkv/manifest: write %s: %w", vs.name(), err)
	} else if err = vs.w.Sync(); err != nil {
		err = fmt.Errorf("bloomkv/manifest: sync %s: %w", vs.name(), err)
	}
	if err == nil {
		vs.state = next
		return nil
	}
	vs.uncertain = true
	if ferr := vs.writeSnapshot(next, vs.allocManifestNum); ferr != nil {
		return fmt.Errorf("%w (and starting a fresh manifest failed: %v)", err, ferr)
	}
	return nil
}

// install makes nv, the durable state's version, current.
// REQUIRES: the manifest lock; not the state lock.
func (vs *VersionSet) install(nv *Version, in Install) {
	if in.Prepare != nil {
		in.Prepare(nv)
	}
	vs.adopt(nv)
	vs.mu.Lock()
	old := vs.current
	vs.current = nv
	vs.compactPointers = vs.state.CompactPointers
	vs.fileNumLimit = max(vs.fileNumLimit, vs.state.NextFileNum)
	// An edit may carry a larger LastSeq than the set assigned (a tool's
	// edit, or tables of recovered writes): never hand it out again.
	vs.lastSeq = max(vs.lastSeq, vs.state.LastSeq)
	if in.Publish != nil {
		in.Publish()
	}
	vs.mu.Unlock()
	old.Unref()
}

// adopt makes v one of the set's versions, with the set's reference.
func (vs *VersionSet) adopt(v *Version) {
	v.set = vs
	v.refs.Store(1)
	vs.liveMu.Lock()
	vs.live[v] = struct{}{}
	vs.liveMu.Unlock()
}

// release drops v, whose last reference is gone, from the live versions.
func (vs *VersionSet) release(v *Version) {
	vs.liveMu.Lock()
	delete(vs.live, v)
	vs.liveMu.Unlock()
	if vs.onRelease != nil {
		vs.onRelease()
	}
}

// AddLiveFiles adds to live the number of every table of every version
// that still has references: the tables that must not be deleted. It
// takes only the set's leaf lock, so it may be called with or without the
// caller's locks.
func (vs *VersionSet) AddLiveFiles(live map[uint64]struct{}) {
	vs.liveMu.Lock()
	defer vs.liveMu.Unlock()
	for v := range vs.live {
		for level := range v.Levels {
			for _, f := range v.Levels[level] {
				live[f.FileNum] = struct{}{}
			}
		}
	}
}

// LiveVersions returns how many installed versions have references.
func (vs *VersionSet) LiveVersions() int {
	vs.liveMu.Lock()
	defer vs.liveMu.Unlock()
	return len(vs.live)
}

// Current returns the current version. It stays current, and referenced by
// the set, while the caller holds either lock; to keep it longer, Ref it.
// REQUIRES: the state lock or the manifest lock.
func (vs *VersionSet) Current() *Version { return vs.current }

// CompactPointers returns, per level, the largest key of the last
// compaction there (round-robin positions). The map must not be modified.
// REQUIRES: the state lock or the manifest lock.
func (vs *VersionSet) CompactPointers() map[int][]byte { return vs.compactPointers }

// LastSeq returns the last sequence assigned. REQUIRES: the state lock.
func (vs *VersionSet) LastSeq() uint64 { return vs.lastSeq }

// AssignSeqs assigns n sequences to a write: first up to last (last =
// first-1 when n is 0). REQUIRES: the state lock.
func (vs *VersionSet) AssignSeqs(n uint64) (first, last uint64) {
	first = vs.lastSeq + 1
	vs.lastSeq += n
	return first, vs.lastSeq
}

// NoteSeq raises the last sequence to at least seq (recovery found writes
// up to seq in the logs). REQUIRES: the state lock.
func (vs *VersionSet) NoteSeq(seq uint64) { vs.lastSeq = max(vs.lastSeq, seq) }

// VisibleSeq returns the sequence reads see: every write up to it is fully
// applied. Safe without any lock.
func (vs *VersionSet) VisibleSeq() uint64 { return vs.visibleSeq.Load() }

// PublishSeq makes the writes up to seq visible to reads. seq must be at
// most LastSeq and at least the visible sequence.
// REQUIRES: the state lock.
func (vs *VersionSet) PublishSeq(seq uint64) {
	if seq > vs.lastSeq || seq < vs.visibleSeq.Load() {
		panic(fmt.Sprintf("bloomkv/manifest: publish sequence %d: visible %d, last assigned %d",
			seq, vs.visibleSeq.Load(), vs.lastSeq))
	}
	vs.visibleSeq.Store(seq)
}

// MarkSynced records that every write up to seq is synced to a log (or in
// a table); the next edit records it. REQUIRES: the state lock.
func (vs *VersionSet) MarkSynced(seq uint64) { vs.syncedSeq = max(vs.syncedSeq, seq) }

// TakeFileNum hands out the next reserved file number that is not a
// foreign file's: one below the durable manifest's NextFileNum. ok is false
// when the reservation is used up; the caller then writes an edit (any
// edit, an empty one will do), which reserves more, and asks again. The
// last reserved number is never handed out here: it is kept for a fresh
// manifest (see LogAndApply). REQUIRES: the state lock.
func (vs *VersionSet) TakeFileNum() (num uint64, ok bool) {
	for {
		n := vs.nextFileNum
		if n+1 >= vs.fileNumLimit {
			return 0, false
		}
		vs.nextFileNum++
		if _, foreign := vs.foreign[n]; !foreign {
			return n, true
		}
	}
}

// NextFileNum returns the next file number to hand out: every number the
// set handed out is below it, and a file created from now on may have it.
// REQUIRES: the state lock.
func (vs *VersionSet) NextFileNum() uint64 { return vs.nextFileNum }

// NoteFileNum marks num as used: numbers handed out from now on are
// above it. REQUIRES: the state lock.
func (vs *VersionSet) NoteFileNum(num uint64) { vs.nextFileNum = max(vs.nextFileNum, num+1) }

// IsForeign reports whether num is the number of a file the engine did not
// write (State.ForeignFiles when the set was made): never handed out, and
// such a file is never deleted. Safe without any lock.
func (vs *VersionSet) IsForeign(num uint64) bool {
	_, ok := vs.foreign[num]
	return ok
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
