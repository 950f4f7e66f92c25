package vfs

// MemFS: an in-memory FS that can simulate a power loss.
//
// # The durability model
//
// A file is an inode: a byte slice that only ever grows (Create makes a new
// inode rather than truncating the old one in place) and a synced length.
// A directory maps names to inodes twice: the live entries that every
// operation sees, and the durable entries as of the directory's last sync.
//
//   - File.Write appends to the inode. File.Sync sets the synced length to
//     the current length: the inode's first synced bytes survive power loss.
//   - Create, Rename and Remove change only the live entries of the
//     directories involved. OpenDir(dir).Sync() copies dir's live entries to
//     its durable entries, making every create, rename and remove in it so
//     far durable at once. (A cross-directory rename therefore needs both
//     directories synced; until then a power loss may show the file under
//     both names or neither, as the two syncs happened.)
//   - Directories themselves are durable the moment MkdirAll creates them
//     and gone for good the moment Remove deletes them (only empty ones can
//     be). bloomkv creates its directory once, before anything that matters;
//     modelling lost directories would add cases without finding bugs.
//     Directories cannot be renamed.
//
// CrashClone (power loss) rebuilds every directory from its durable entries
// and every inode from its synced bytes. So a file created but never listed
// by a directory sync is gone, even if the file itself was synced; a rename
// not followed by a sync of the directory is undone (the old name is back,
// the new name holds what it held before or is absent); a removal not
// followed by a directory sync is undone; appends since the last File.Sync
// are dropped; and a file re-created with Create over an old name, with the
// directory unsynced since, still holds the old inode's synced bytes.
//
// ProcessCrashClone (kill -9) keeps everything: the operating system still
// has every write. The copy keeps the durable state too, so a CrashClone of
// it models the machine losing power after the process died.
//
// Neither clone carries open files or held locks: the process that had them
// is gone.
//
// # Paths
//
// Paths are cleaned with path/filepath and resolved from a single root:
// "/db/CURRENT", "db/CURRENT" and "db/../db/./CURRENT" name the same file.
//
// # Concurrency
//
// MemFS.mu guards the directory tree (every directory's entries) and the
// lock table. Each inode has its own RWMutex for its bytes, so ReadAt on one
// file neither waits for other files nor for the namespace. Lock order:
// MemFS.mu before an inode's mu; file handles never take MemFS.mu except to
// sync a directory.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemFS is an in-memory FS with crash simulation; see the model above. It is
// safe for concurrent use. The zero value is not usable; call NewMem.
type MemFS struct {
	mu struct {
		sync.Mutex
		root *memNode
		// locks maps the cleaned paths of locks currently held to -1 for
		// an exclusive lock, or the number of shared holders.
		locks map[string]int
	}
}

// memNode is a directory or a file inode.
type memNode struct {
	isDir bool

	// Directory state, guarded by MemFS.mu. Subdirectories always appear in
	// both maps.
	live    map[string]*memNode
	durable map[string]*memNode

	// File state, guarded by mu. data only grows, so data[:synced] is a
	// stable view of what survives power loss.
	mu      sync.RWMutex
	data    []byte
	synced  int
	modTime time.Time
}

func newDirNode() *memNode {
	return &memNode{isDir: true, live: map[string]*memNode{}, durable: map[string]*memNode{}}
}

func newFileNode() *memNode { return &memNode{modTime: time.Now()} }

// NewMem returns an empty in-memory file system holding only its root
// directory.
func NewMem() *MemFS {
	fs := &MemFS{}
	fs.mu.root = newDirNode()
	fs.mu.locks = map[string]int{}
	return fs
}

var _ FS = (*MemFS)(nil)

// splitPath cleans name and returns its components below the root. ".."
// above the root stays at the root, as it does on Unix.
func splitPath(name string) []string {
	var parts []string
	for _, p := range strings.Split(filepath.ToSlash(filepath.Clean(name)), "/") {
		switch p {
		case "", ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, p)
		}
	}
	return parts
}

func pathError(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// walkLocked returns the node at parts. REQUIRES: fs.mu held.
func (fs *MemFS) walkLocked(op, name string, parts []string) (*memNode, error) {
	n := fs.mu.root
	for _, p := range parts {
		if !n.isDir {
			return nil, pathError(op, name, syscall.ENOTDIR)
		}
		child, ok := n.live[p]
		if !ok {
			return nil, pathError(op, name, os.ErrNotExist)
		}
		n = child
	}
	return n, nil
}

// parentLocked returns the directory that holds name and name's last
// component. REQUIRES: fs.mu held.
func (fs *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", pathError(op, name, syscall.EISDIR) // the root
	}
	dir, err := fs.walkLocked(op, name, parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", pathError(op, name, syscall.ENOTDIR)
	}
	return dir, parts[len(parts)-1], nil
}

// Create creates the named file, or replaces an existing one with a new,
// empty inode (see the model for what a crash then keeps).
func (fs *MemFS) Create(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked("create", name)
	if err != nil {
		return nil, err
	}
	if old, ok := dir.live[base]; ok && old.isDir {
		return nil, pathError("create", name, syscall.EISDIR)
	}
	n := newFileNode()
	dir.live[base] = n
	return &memFile{fs: fs, node: n, name: name, writable: true}, nil
}

// Open opens the named file (or directory) for reading.
func (fs *MemFS) Open(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked("open", name, splitPath(name))
	if err != nil {
		return nil, err
	}
	return &memFile{fs: fs, node: n, name: name}, nil
}

// OpenDir opens a directory; syncing the handle makes the directory's
// entries durable.
func (fs *MemFS) OpenDir(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked("open", name, splitPath(name))
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, pathError("open", name, syscall.ENOTDIR)
	}
	return &memFile{fs: fs, node: n, name: name}, nil
}

// Remove unlinks a file (durable at the next sync of its directory) or
// deletes an empty directory (at once).
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.live[base]
	if !ok {
		return pathError("remove", name, os.ErrNotExist)
	}
	if n.isDir {
		if len(n.live) > 0 {
			return pathError("remove", name, syscall.ENOTEMPTY)
		}
		delete(dir.durable, base)
	}
	delete(dir.live, base)
	return nil
}

// Rename moves a file to newname, replacing any file there. Renaming
// directories is not supported.
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	linkErr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	oldDir, oldBase, err := fs.parentLocked("rename", oldname)
	if err != nil {
		return linkErr(err)
	}
	newDir, newBase, err := fs.parentLocked("rename", newname)
	if err != nil {
		return linkErr(err)
	}
	n, ok := oldDir.live[oldBase]
	if !ok {
		return linkErr(os.ErrNotExist)
	}
	if n.isDir {
		return linkErr(fmt.Errorf("bloomkv/vfs: MemFS cannot rename directories: %w", syscall.EINVAL))
	}
	if target, ok := newDir.live[newBase]; ok && target.isDir {
		return linkErr(syscall.EISDIR)
	}
	if oldDir == newDir && oldBase == newBase {
		return nil
	}
	newDir.live[newBase] = n
	delete(oldDir.live, oldBase)
	return nil
}

// Link makes newname another name of oldname's inode (a hard link):
// durable, like a create, at the next sync of newname's directory.
// Directories cannot be linked.
func (fs *MemFS) Link(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	linkErr := func(err error) error {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	n, err := fs.walkLocked("link", oldname, splitPath(oldname))
	if err != nil {
		return linkErr(os.ErrNotExist)
	}
	if n.isDir {
		return linkErr(syscall.EPERM)
	}
	dir, base, err := fs.parentLocked("link", newname)
	if err != nil {
		return linkErr(err)
	}
	if _, ok := dir.live[base]; ok {
		return linkErr(os.ErrExist)
	}
	dir.live[base] = n
	return nil
}

// MkdirAll creates dir and any missing parents; each is durable at once.
func (fs *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.mu.root
	for _, p := range splitPath(dir) {
		child, ok := n.live[p]
		if !ok {
			child = newDirNode()
			n.live[p] = child
			n.durable[p] = child
		} else if !child.isDir {
			return pathError("mkdir", dir, syscall.ENOTDIR)
		}
		n = child
	}
	return nil
}

// List returns the names in dir, sorted (callers must not rely on order).
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked("open", dir, splitPath(dir))
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, pathError("readdirent", dir, syscall.ENOTDIR)
	}
	names := make([]string, 0, len(n.live))
	for name := range n.live {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Stat describes the named file or directory.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked("stat", name, splitPath(name))
	if err != nil {
		return nil, err
	}
	return n.stat(name), nil
}

// PathJoin joins path elements as filepath.Join does.
func (fs *MemFS) PathJoin(elem ...string) string { return filepath.Join(elem...) }

// Lock creates the named file if needed and takes an exclusive lock on it.
// Like the OS lock, a second Lock of the same file fails, with an error
// wrapping ErrLocked, until the first is released by closing it.
func (fs *MemFS) Lock(name string) (io.Closer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked("lock", name)
	if err != nil {
		return nil, err
	}
	key := strings.Join(splitPath(name), "/")
	if _, held := fs.mu.locks[key]; held {
		return nil, fmt.Errorf("bloomkv/vfs: lock %s: already held: %w", name, ErrLocked)
	}
	if n, ok := dir.live[base]; !ok {
		dir.live[base] = newFileNode()
	} else if n.isDir {
		return nil, pathError("lock", name, syscall.EISDIR)
	}
	fs.mu.locks[key] = -1
	return &memLock{fs: fs, key: key, name: name}, nil
}

// LockShared takes a shared lock on the named file, which must exist. Like
// the OS lock, it fails while an exclusive lock is held, and Lock fails
// while shared locks are.
func (fs *MemFS) LockShared(name string) (io.Closer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked("lock", name, splitPath(name))
	if err != nil {
		return nil, err
	}
	if n.isDir {
		return nil, pathError("lock", name, syscall.EISDIR)
	}
	key := strings.Join(splitPath(name), "/")
	if fs.mu.locks[key] < 0 {
		return nil, fmt.Errorf("bloomkv/vfs: shared lock %s: held exclusively: %w", name, ErrLocked)
	}
	fs.mu.locks[key]++
	return &memLock{fs: fs, key: key, name: name, shared: true}, nil
}

type memLock struct {
	fs       *MemFS
	key      string
	name     string
	shared   bool
	released atomic.Bool
}

func (l *memLock) Close() error {
	if l.released.Swap(true) {
		return fmt.Errorf("bloomkv/vfs: unlock %s: %w", l.name, os.ErrClosed)
	}
	l.fs.mu.Lock()
	if l.shared && l.fs.mu.locks[l.key] > 1 {
		l.fs.mu.locks[l.key]--
	} else {
		delete(l.fs.mu.locks, l.key)
	}
	l.fs.mu.Unlock()
	return nil
}

// CrashClone returns a new MemFS holding what a machine would have after
// losing power now: every file's contents as of its last Sync (unsynced
// appends dropped), and every directory's entries as of its last directory
// sync (a file created or renamed into a dir never synced since is gone or
// back at its old name; a removal not synced is undone). In the clone,
// everything it holds is durable.
func (fs *MemFS) CrashClone() *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c := NewMem()
	c.mu.root = cloneDir(fs.mu.root, true, map[*memNode]*memNode{})
	return c
}

// ProcessCrashClone returns what survives a kill -9: everything written,
// synced or not, with the durable state (synced lengths, durable directory
// entries) copied as it is, so that a later CrashClone of the copy also
// models losing power after the process died. The copy shares nothing with
// fs, which can keep running.
func (fs *MemFS) ProcessCrashClone() *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c := NewMem()
	c.mu.root = cloneDir(fs.mu.root, false, map[*memNode]*memNode{})
	return c
}

// cloneDir deep-copies a directory. With powerLoss, only durable entries
// and synced bytes are kept, and they become the clone's live and durable
// state alike. memo maps original inodes to their copies so that an inode
// reachable under two names stays one inode. REQUIRES: MemFS.mu held.
func cloneDir(d *memNode, powerLoss bool, memo map[*memNode]*memNode) *memNode {
	c := newDirNode()
	cloneEntry := func(n *memNode) *memNode {
		if n.isDir {
			return cloneDir(n, powerLoss, memo)
		}
		if cn, ok := memo[n]; ok {
			return cn
		}
		cn := cloneFile(n, powerLoss)
		memo[n] = cn
		return cn
	}
	if powerLoss {
		for name, n := range d.durable {
			cn := cloneEntry(n)
			c.live[name] = cn
			c.durable[name] = cn
		}
		return c
	}
	for name, n := range d.live {
		c.live[name] = cloneEntry(n)
	}
	for name, n := range d.durable {
		if n.isDir {
			c.durable[name] = c.live[name] // subdirectories are in both maps
		} else {
			c.durable[name] = cloneEntry(n)
		}
	}
	return c
}

func cloneFile(n *memNode, powerLoss bool) *memNode {
	n.mu.RLock()
	defer n.mu.RUnlock()
	keep := n.data
	if powerLoss {
		keep = n.data[:n.synced]
	}
	return &memNode{data: slices.Clone(keep), synced: min(n.synced, len(keep)), modTime: n.modTime}
}

// memFile is an open file or directory. Writes always append (files are
// written sequentially); Read has its own offset; ReadAt may be called by
// many goroutines at once.
type memFile struct {
	fs       *MemFS
	node     *memNode
	name     string
	writable bool
	closed   atomic.Bool

	mu   sync.Mutex // guards rpos
	rpos int64
}

var _ File = (*memFile)(nil)

func (f *memFile) checkOpen(op string) error {
	if f.closed.Load() {
		return pathError(op, f.name, os.ErrClosed)
	}
	if f.node.isDir && op != "sync" && op != "stat" && op != "close" {
		return pathError(op, f.name, syscall.EISDIR)
	}
	return nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.checkOpen("write"); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, pathError("write", f.name, syscall.EBADF)
	}
	n := f.node
	n.mu.Lock()
	n.data = append(n.data, p...)
	n.modTime = time.Now()
	n.mu.Unlock()
	return len(p), nil
}

func (f *memFile) Read(p []byte) (int, error) {
	if err := f.checkOpen("read"); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt(p, f.rpos)
	f.rpos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil // Read reports EOF only when it returns no bytes
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.checkOpen("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathError("readat", f.name, syscall.EINVAL)
	}
	return f.readAt(p, off)
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	n := f.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	if off >= int64(len(n.data)) {
		return 0, io.EOF
	}
	c := copy(p, n.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

// Sync makes the file's bytes durable, or for a directory its entries.
func (f *memFile) Sync() error {
	if err := f.checkOpen("sync"); err != nil {
		return err
	}
	n := f.node
	if n.isDir {
		f.fs.mu.Lock()
		clear(n.durable)
		for name, child := range n.live {
			n.durable[name] = child
		}
		f.fs.mu.Unlock()
		return nil
	}
	n.mu.Lock()
	n.synced = len(n.data)
	n.mu.Unlock()
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if err := f.checkOpen("stat"); err != nil {
		return nil, err
	}
	return f.node.stat(f.name), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathError("close", f.name, os.ErrClosed)
	}
	return nil
}

// stat describes the node; name is the path it was reached by.
func (n *memNode) stat(name string) os.FileInfo {
	base := filepath.Base(filepath.Clean(name))
	if n.isDir {
		return memFileInfo{name: base, mode: os.ModeDir | 0o755}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return memFileInfo{name: base, size: int64(len(n.data)), mode: 0o644, modTime: n.modTime}
}

type memFileInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (i memFileInfo) Name() string       { return i.name }
func (i memFileInfo) Size() int64        { return i.size }
func (i memFileInfo) Mode() os.FileMode  { return i.mode }
func (i memFileInfo) ModTime() time.Time { return i.modTime }
func (i memFileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memFileInfo) Sys() any           { return nil }
