package bloomkv

// Test hooks on file-system operations: run a function just before chosen
// operations, and tell which part of the engine an operation comes from.
//
// A hook is an ErrorFS rule whose Match calls the function and never
// matches, so it fails nothing. ErrorFS evaluates rules under its own mutex,
// so hooks run one at a time, before the operation reaches the inner FS: a
// MemFS.CrashClone taken in a hook is the state just before the operation.
//
// Regions are attributed explicitly, through the engine's testHooks: the
// engine names the cause of every table it creates and of every manifest
// edit it writes (see hooks.go), and a regionTracker maps each operation's
// path to a region from that.

import (
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// addHook makes efs call fn(op, path) before every operation whose kind is
// in ops. For Rename fn may be called twice (old and new name).
func addHook(efs *vfs.ErrorFS, ops []vfs.Op, fn func(op vfs.Op, path string)) {
	for _, op := range ops {
		efs.Inject(vfs.Rule{Ops: []vfs.Op{op}, Match: func(path string) bool {
			fn(op, path)
			return false
		}})
	}
}

// region is a part of the engine that file-system operations come from.
type region string

const (
	regionAny            region = ""
	regionLogWrite       region = "log-write"       // writes and syncs of a log
	regionSwitchMemtable region = "switch-memtable" // creating a new log
	regionFlush          region = "flush"           // a flush's table and manifest edit
	regionCompaction     region = "compaction"      // a compaction's tables and manifest edit
	regionManifestWrite  region = "manifest"        // any manifest, CURRENT or temp-file operation
	regionObsolete       region = "obsolete"        // removing files
)

// regionTracker attributes operations to regions from what the engine says
// through its test hooks. Install it with o.testHooks = rt.hooks().
type regionTracker struct {
	mu     sync.Mutex
	tables map[uint64]writeCause // table number -> why it was written
	// edit is the cause of the manifest edit being written (set with
	// manifestMu held, read by the same goroutine's operations).
	edit atomic.Int32
}

func newRegionTracker() *regionTracker {
	rt := &regionTracker{tables: map[uint64]writeCause{}}
	rt.edit.Store(-1)
	return rt
}

func (rt *regionTracker) hooks() *testHooks {
	return &testHooks{
		beforeTable: func(num uint64, cause writeCause) {
			rt.mu.Lock()
			rt.tables[num] = cause
			rt.mu.Unlock()
		},
		beforeEdit: func(cause writeCause) { rt.edit.Store(int32(cause)) },
	}
}

// tableCause says why the table at path was written.
func (rt *regionTracker) tableCause(path string) (writeCause, bool) {
	t, num, ok := base.ParseFilename(filepath.Base(path))
	if !ok || t != base.FileTypeTable {
		return 0, false
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	c, ok := rt.tables[num]
	return c, ok
}

// isManifestOp reports whether path is written only by the version set: a
// manifest, CURRENT, its temporary file, or the directory it syncs.
func isManifestOp(path string) bool {
	t, _, ok := base.ParseFilename(filepath.Base(path))
	return ok && (t == base.FileTypeManifest || t == base.FileTypeCurrent || t == base.FileTypeTemp)
}

// made reports whether the table at path, or the manifest edit path belongs
// to, was written for cause.
func (rt *regionTracker) made(cause writeCause, path string) bool {
	if c, ok := rt.tableCause(path); ok {
		return c == cause
	}
	return isManifestOp(path) && rt.edit.Load() == int32(cause)
}

// in reports whether operation op on path comes from r.
func (rt *regionTracker) in(r region, op vfs.Op, path string) bool {
	switch r {
	case regionAny:
		return true
	case regionLogWrite:
		return isLogPath(path) && (op == vfs.OpWrite || op == vfs.OpSync)
	case regionSwitchMemtable:
		return isLogPath(path) && op == vfs.OpCreate && rt.edit.Load() != int32(causeRecovery)
	case regionFlush:
		return rt.made(causeFlush, path)
	case regionCompaction:
		return rt.made(causeCompaction, path)
	case regionManifestWrite:
		return isManifestOp(path)
	case regionObsolete:
		return op == vfs.OpRemove
	}
	panic("unknown region " + string(r))
}

// writeOps are the operations that change what a crash leaves behind.
var writeOps = []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpRemove}

// cloneAtomically returns a crash image of mem (a power loss when
// powerLoss, else a kill -9) taken while efs holds every other operation
// back, so that the image is one instant of the whole file system even
// while background work is writing. (MemFS's clones block namespace
// changes but not appends to open files.)
func cloneAtomically(efs *vfs.ErrorFS, mem *vfs.MemFS, powerLoss bool) *vfs.MemFS {
	const trigger = "/.bloomkv-test-clone-trigger"
	var c *vfs.MemFS
	efs.Inject(vfs.Rule{Ops: []vfs.Op{vfs.OpStat}, Match: func(path string) bool {
		if path == trigger && c == nil {
			if powerLoss {
				c = mem.CrashClone()
			} else {
				c = mem.ProcessCrashClone()
			}
		}
		return false
	}})
	_, _ = efs.Stat(trigger)
	return c
}

// syncHookFS wraps an FS and calls onSync(name) before every File.Sync,
// without holding any lock (unlike ErrorFS hooks), so a hook may block.
type syncHookFS struct {
	vfs.FS
	onSync func(name string)
}

type syncHookFile struct {
	vfs.File
	name string
	fs   *syncHookFS
}

func (fs *syncHookFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &syncHookFile{File: f, name: name, fs: fs}, nil
}

func (f *syncHookFile) Sync() error {
	if h := f.fs.onSync; h != nil {
		h(f.name)
	}
	return f.File.Sync()
}
