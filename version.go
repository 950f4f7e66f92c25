package bloomkv

import (
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// version is a reference-counted manifest.Version. A version stays in the
// DB's liveVersions while referenced, which keeps its tables' files from
// being deleted. (manifest.VersionSet owns the durable history; this is
// the in-memory set of versions readers still hold.)
type version struct {
	*manifest.Version
	refs atomic.Int32
	set  *liveVersions
	// treeFilter is this version's tree-wide filter (treefilter_db.go),
	// nil without Options.TreeFilter or while one is being rebuilt. Set
	// before the version is published, or later by a rebuild (any filter
	// stored here describes this version).
	treeFilter atomic.Pointer[treeFilter]
}

func (v *version) ref() { v.refs.Add(1) }

func (v *version) unref() {
	if n := v.refs.Add(-1); n == 0 {
		v.set.remove(v)
	} else if n < 0 {
		panic("bloomkv: version reference count below zero")
	}
}

// liveVersions is the set of versions with references.
type liveVersions struct {
	mu sync.Mutex // guards m; a leaf lock
	m  map[*version]struct{}
	// onRelease is called (without locks) when a version is released, so
	// that obsolete files can be collected.
	onRelease func()
}

func (l *liveVersions) newVersion(mv *manifest.Version) *version {
	v := &version{Version: mv, set: l}
	v.refs.Store(1)
	l.mu.Lock()
	l.m[v] = struct{}{}
	l.mu.Unlock()
	return v
}

func (l *liveVersions) remove(v *version) {
	l.mu.Lock()
	delete(l.m, v)
	l.mu.Unlock()
	if l.onRelease != nil {
		l.onRelease()
	}
}

// addLiveFiles adds every table number of every live version to live.
func (l *liveVersions) addLiveFiles(live map[uint64]struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for v := range l.m {
		for level := range v.Levels {
			for _, f := range v.Levels[level] {
				live[f.FileNum] = struct{}{}
			}
		}
	}
}
