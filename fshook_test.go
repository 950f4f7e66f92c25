package bloomkv

// Test hooks on file-system operations: run a function just before chosen
// operations, and tell which part of the engine an operation comes from.
//
// A hook is an ErrorFS rule whose Match calls the function and never
// matches, so it fails nothing. ErrorFS evaluates rules under its own mutex,
// so hooks run one at a time, before the operation reaches the inner FS: a
// MemFS.CrashClone taken in a hook is the state just before the operation.

import (
	"runtime"
	"strings"

	"github.com/bloomkv/bloomkv/vfs"
)

// addHook makes efs call fn(path) before every operation whose kind is in
// ops. For Rename fn may be called twice (old and new name).
func addHook(efs *vfs.ErrorFS, ops []vfs.Op, fn func(path string)) {
	efs.Inject(vfs.Rule{Ops: ops, Match: func(path string) bool {
		fn(path)
		return false
	}})
}

// Engine regions an operation can come from, named by a function of the
// root package that is on the goroutine's stack while the region runs.
const (
	regionLogWrite       = "(*DB).writeToLog"
	regionSwitchMemtable = "(*DB).switchMemtableLocked"
	regionFlush          = "(*DB).flushOldestLocked"
	regionCompaction     = "(*DB).runCompaction"
	regionManifestWrite  = "(*DB).writeNewManifest"
	regionObsolete       = "(*DB).deleteObsoleteFiles"
	regionOpen           = "Open("
)

// inRegion reports whether the calling goroutine is inside region. It reads
// the goroutine's stack, so it costs microseconds: call it only for the
// operations a test cares about.
func inRegion(region string) bool {
	buf := make([]byte, 16<<10)
	n := runtime.Stack(buf, false)
	return strings.Contains(string(buf[:n]), "github.com/bloomkv/bloomkv."+region)
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
