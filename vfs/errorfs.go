package vfs

// ErrorFS: fault injection for deterministic failure tests.
//
// An ErrorFS wraps another FS and passes every call through, except that it
// can fail chosen operations with ErrInjected, and can act as a full disk.
// It counts every operation it sees, so a test can first measure a workload
// and then fail each of its operations in turn:
//
//	for n := 1; ; n++ {
//		mem := vfs.NewMem()
//		efs := vfs.NewErrorFS(mem)
//		efs.FailAfter(n) // the n-th operation of any kind fails
//		err := workload(efs)
//		if efs.Injected() == 0 {
//			// n is past the last operation: the workload ran clean.
//			require(err == nil)
//			break
//		}
//		// The failure surfaced (or was coped with): check that what the
//		// workload acknowledged survives in mem, mem.CrashClone(), ...
//	}
//
// Rules pick operations by kind (Op) and by path, and fail the N-th match,
// or (Sticky) the N-th and every later one:
//
//	// Every write to a table file fails from now on.
//	efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpWrite}, N: 1, Sticky: true,
//		Match: func(path string) bool { return strings.HasSuffix(path, ".sst") }})
//
// A failed operation has no effect on the inner FS (an injected write
// writes nothing). Disk-full mode is separate: SetDiskBudget(b) lets b more
// bytes be written in total, then a write writes what still fits and fails
// with an error wrapping syscall.ENOSPC, as a real short write does.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrInjected is the error an ErrorFS returns for an operation a rule
// failed. It arrives wrapped in an *os.PathError (or *os.LinkError for
// Rename) naming the operation and path; test for it with errors.Is.
var ErrInjected = errors.New("bloomkv/vfs: injected error")

// Op is a kind of file-system operation, as ErrorFS counts and fails them.
type Op int

const (
	OpCreate   Op = iota // FS.Create
	OpOpen               // FS.Open
	OpOpenDir            // FS.OpenDir
	OpRemove             // FS.Remove
	OpRename             // FS.Rename
	OpMkdirAll           // FS.MkdirAll
	OpList               // FS.List
	OpStat               // FS.Stat and File.Stat
	OpLock               // FS.Lock and FS.LockShared
	OpRead               // File.Read and File.ReadAt
	OpWrite              // File.Write
	OpSync               // File.Sync, of files and of directories
	OpClose              // File.Close (the inner file is closed even when it fails)
	OpLink               // FS.Link
	numOps
)

var opNames = [numOps]string{
	OpCreate: "create", OpOpen: "open", OpOpenDir: "opendir", OpRemove: "remove",
	OpRename: "rename", OpMkdirAll: "mkdirall", OpList: "list", OpStat: "stat",
	OpLock: "lock", OpRead: "read", OpWrite: "write", OpSync: "sync", OpClose: "close",
	OpLink: "link",
}

func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// AllOps lists every Op, for rules and counters that cover them all.
func AllOps() []Op {
	ops := make([]Op, numOps)
	for i := range ops {
		ops[i] = Op(i)
	}
	return ops
}

// Rule says which operations an ErrorFS fails.
type Rule struct {
	// Ops are the kinds of operation the rule counts; empty means all.
	Ops []Op
	// Match, if set, restricts the rule to operations on paths it accepts
	// (the path as the caller gave it; for Rename and Link, either name).
	Match func(path string) bool
	// N is which matching operation fails, counting from 1 at the moment
	// the rule is added. Values below 1 mean 1.
	N int
	// Sticky makes every matching operation after the N-th fail too.
	Sticky bool
}

// ruleState is a Rule and its progress. Guarded by ErrorFS.mu.
type ruleState struct {
	Rule
	seen int
}

func (r *ruleState) matches(op Op, path, path2 string) bool {
	if len(r.Ops) > 0 && !slices.Contains(r.Ops, op) {
		return false
	}
	return r.Match == nil || r.Match(path) || (path2 != "" && r.Match(path2))
}

// ErrorFS wraps an FS and fails operations on demand. It is safe for
// concurrent use; rules see operations in the order they take its mutex.
type ErrorFS struct {
	inner  FS
	counts [numOps]atomic.Uint64 // operations seen, failed or not
	// syncLatency (nanoseconds) is how long a file's Sync takes after it
	// made the data durable; see SetSyncLatency.
	syncLatency atomic.Int64

	mu struct {
		sync.Mutex
		rules    []*ruleState
		injected int   // failures injected so far (rules and disk full)
		budget   int64 // bytes writes may still add; < 0 means unlimited
	}
}

// NewErrorFS returns an ErrorFS over inner that injects nothing until told.
func NewErrorFS(inner FS) *ErrorFS {
	fs := &ErrorFS{inner: inner}
	fs.mu.budget = -1
	return fs
}

var _ FS = (*ErrorFS)(nil)

// Inject adds a rule. Rules are independent: an operation fails if any rule
// fails it (each matching rule counts it either way).
func (fs *ErrorFS) Inject(r Rule) {
	r.N = max(r.N, 1)
	r.Ops = slices.Clone(r.Ops)
	fs.mu.Lock()
	fs.mu.rules = append(fs.mu.rules, &ruleState{Rule: r})
	fs.mu.Unlock()
}

// FailAfter makes the n-th (1-based) operation from now on whose kind is in
// ops (any kind if ops is empty) fail, once.
func (fs *ErrorFS) FailAfter(n int, ops ...Op) { fs.Inject(Rule{Ops: ops, N: n}) }

// FailAfterSticky makes the n-th matching operation from now on and every
// later one fail, as a device that broke does.
func (fs *ErrorFS) FailAfterSticky(n int, ops ...Op) { fs.Inject(Rule{Ops: ops, N: n, Sticky: true}) }

// SetDiskBudget lets writes add at most bytes more bytes in total; the write
// that crosses the budget writes the part that fits and fails with an error
// wrapping syscall.ENOSPC, and so do all writes after it. Removing files does
// not give space back. A negative budget means unlimited.
func (fs *ErrorFS) SetDiskBudget(bytes int64) {
	fs.mu.Lock()
	fs.mu.budget = bytes
	fs.mu.Unlock()
}

// SetSyncLatency makes every file Sync take d longer, as a disk's fsync
// does. The inner file is synced at the start of the delay, so bytes
// written during it are not covered: a test of concurrent writers then
// catches a write acknowledged by an fsync that began before it.
func (fs *ErrorFS) SetSyncLatency(d time.Duration) { fs.syncLatency.Store(int64(d)) }

// DiskBudget returns the bytes writes may still add (negative: unlimited).
func (fs *ErrorFS) DiskBudget() int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.mu.budget
}

// Heal removes every rule and the disk budget; operations pass through
// again. Counters are kept.
func (fs *ErrorFS) Heal() {
	fs.mu.Lock()
	fs.mu.rules = nil
	fs.mu.budget = -1
	fs.mu.Unlock()
}

// Injected returns how many failures have been injected so far (by rules or
// disk full). Zero after a workload means no rule fired.
func (fs *ErrorFS) Injected() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.mu.injected
}

// Count returns how many operations of kind op this ErrorFS has seen since
// it was made or ResetCounts, including failed ones.
func (fs *ErrorFS) Count(op Op) uint64 { return fs.counts[op].Load() }

// Total returns the number of operations of any kind seen.
func (fs *ErrorFS) Total() uint64 {
	var t uint64
	for i := range fs.counts {
		t += fs.counts[i].Load()
	}
	return t
}

// ResetCounts zeroes the operation counters.
func (fs *ErrorFS) ResetCounts() {
	for i := range fs.counts {
		fs.counts[i].Store(0)
	}
}

// check counts one operation and decides whether a rule fails it. path2 is
// Rename's new name ("" otherwise).
func (fs *ErrorFS) check(op Op, path, path2 string) error {
	fs.counts[op].Add(1)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fail := false
	for _, r := range fs.mu.rules {
		if !r.matches(op, path, path2) {
			continue
		}
		r.seen++
		if r.seen == r.N || (r.Sticky && r.seen > r.N) {
			fail = true
		}
	}
	if !fail {
		return nil
	}
	fs.mu.injected++
	if op == OpRename || op == OpLink {
		return &os.LinkError{Op: op.String(), Old: path, New: path2, Err: ErrInjected}
	}
	return pathError(op.String(), path, ErrInjected)
}

// reserve takes up to n bytes from the disk budget and returns how many it
// got; fewer than n means the disk is full.
func (fs *ErrorFS) reserve(n int) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.mu.budget < 0 || int64(n) <= fs.mu.budget {
		if fs.mu.budget >= 0 {
			fs.mu.budget -= int64(n)
		}
		return n
	}
	got := int(fs.mu.budget)
	fs.mu.budget = 0
	fs.mu.injected++
	return got
}

func (fs *ErrorFS) Create(name string) (File, error) {
	if err := fs.check(OpCreate, name, ""); err != nil {
		return nil, err
	}
	f, err := fs.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{fs: fs, inner: f, name: name}, nil
}

func (fs *ErrorFS) Open(name string) (File, error) {
	if err := fs.check(OpOpen, name, ""); err != nil {
		return nil, err
	}
	f, err := fs.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{fs: fs, inner: f, name: name}, nil
}

func (fs *ErrorFS) OpenDir(name string) (File, error) {
	if err := fs.check(OpOpenDir, name, ""); err != nil {
		return nil, err
	}
	f, err := fs.inner.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{fs: fs, inner: f, name: name}, nil
}

func (fs *ErrorFS) Remove(name string) error {
	if err := fs.check(OpRemove, name, ""); err != nil {
		return err
	}
	return fs.inner.Remove(name)
}

func (fs *ErrorFS) Rename(oldname, newname string) error {
	if err := fs.check(OpRename, oldname, newname); err != nil {
		return err
	}
	return fs.inner.Rename(oldname, newname)
}

func (fs *ErrorFS) Link(oldname, newname string) error {
	if err := fs.check(OpLink, oldname, newname); err != nil {
		return err
	}
	return fs.inner.Link(oldname, newname)
}

func (fs *ErrorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.check(OpMkdirAll, dir, ""); err != nil {
		return err
	}
	return fs.inner.MkdirAll(dir, perm)
}

func (fs *ErrorFS) List(dir string) ([]string, error) {
	if err := fs.check(OpList, dir, ""); err != nil {
		return nil, err
	}
	return fs.inner.List(dir)
}

func (fs *ErrorFS) Stat(name string) (os.FileInfo, error) {
	if err := fs.check(OpStat, name, ""); err != nil {
		return nil, err
	}
	return fs.inner.Stat(name)
}

// Lock passes through to the inner FS, so a lock another holder has fails
// with the inner FS's error wrapping ErrLocked. An injected failure wraps
// ErrInjected and not ErrLocked: it stands for a broken file system, not
// for contention.
func (fs *ErrorFS) Lock(name string) (io.Closer, error) {
	if err := fs.check(OpLock, name, ""); err != nil {
		return nil, err
	}
	return fs.inner.Lock(name)
}

func (fs *ErrorFS) LockShared(name string) (io.Closer, error) {
	if err := fs.check(OpLock, name, ""); err != nil {
		return nil, err
	}
	return fs.inner.LockShared(name)
}

func (fs *ErrorFS) PathJoin(elem ...string) string { return fs.inner.PathJoin(elem...) }

// errorFile routes a file's operations through its ErrorFS.
type errorFile struct {
	fs    *ErrorFS
	inner File
	name  string
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name, ""); err != nil {
		return 0, err
	}
	allowed := f.fs.reserve(len(p))
	n, err := f.inner.Write(p[:allowed])
	if err == nil && allowed < len(p) {
		err = pathError("write", f.name, syscall.ENOSPC)
	}
	return n, err
}

func (f *errorFile) Read(p []byte) (int, error) {
	if err := f.fs.check(OpRead, f.name, ""); err != nil {
		return 0, err
	}
	return f.inner.Read(p)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name, ""); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

func (f *errorFile) Sync() error {
	if err := f.fs.check(OpSync, f.name, ""); err != nil {
		return err
	}
	err := f.inner.Sync()
	if d := time.Duration(f.fs.syncLatency.Load()); d > 0 {
		time.Sleep(d)
	}
	return err
}

func (f *errorFile) Stat() (os.FileInfo, error) {
	if err := f.fs.check(OpStat, f.name, ""); err != nil {
		return nil, err
	}
	return f.inner.Stat()
}

// Close always closes the inner file, so an injected Close failure leaks
// nothing; it then reports the injected error.
func (f *errorFile) Close() error {
	injected := f.fs.check(OpClose, f.name, "")
	err := f.inner.Close()
	if injected != nil {
		return injected
	}
	return err
}
