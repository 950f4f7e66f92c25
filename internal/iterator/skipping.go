package iterator

import "github.com/bloomkv/bloomkv/internal/base"

// SkipSeeker is a child iterator whose SeekGE or SeekLT may skip entries
// outside the caller's bounds without reading them (the engine's level
// iterator skips tables on their range filters). When SeekSkipped reports
// that the last seek did, the child may be exhausted while holding
// entries beyond the bounds or before the seek key, which breaks the
// invariant cheap direction switches rely on ("an exhausted child's
// nearest entry is its First or Last"); the merging iterator then turns
// around by re-seeking every child, as after a prefix seek.
type SkipSeeker interface {
	base.InternalIterator
	SeekSkipped() bool
}

// skipSeekers returns the children that implement SkipSeeker, found once
// so that each seek costs no type assertions.
func skipSeekers(iters []base.InternalIterator) []SkipSeeker {
	var out []SkipSeeker
	for _, it := range iters {
		if s, ok := it.(SkipSeeker); ok {
			out = append(out, s)
		}
	}
	return out
}

// anySkipped reports whether a child skipped entries in the last seek.
func (m *mergingIter) anySkipped() bool {
	for _, s := range m.skippers {
		if s.SeekSkipped() {
			return true
		}
	}
	return false
}
