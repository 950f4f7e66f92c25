package bloomkv

import (
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/pslot"
)

// readState is what a read needs: the memtables and the current version,
// captured together so that they form a consistent view. While anyone
// holds a reference, the state holds one on its version (so the version's
// tables are not deleted).
//
// # References without a shared write
//
// Every Get takes and drops a reference, so the count is split over per-P
// slots (internal/pslot): readers on two cores write two cache lines of
// their own, not one line that bounces between them. A holder drops its
// reference in the slot it took it in, so every slot stays >= 0. The state
// is released (its version reference dropped) once it has been replaced
// (retired) and no holder is left; the two sides meet Dekker-style on the
// slot and the retired flag, both sequentially consistent atomics:
//
//   - ref adds 1 to its slot, then reads retired. Seeing it set, it gives
//     the reference back (as unref does) and the caller loads the newer
//     state; seeing it clear, its add came before retire's store, so every
//     later sum over the slots counts it until its unref.
//   - retire sets retired, then sums the slots; so does an unref that sees
//     retired set. A zero sum means no holder is left and none can come
//     (later refs see retired): that caller releases. Several may see zero;
//     the released flag lets exactly one of them drop the version.
type readState struct {
	refs     pslot.Counter // holders, per P
	retired  atomic.Bool   // replaced: no new references
	released atomic.Bool   // the version reference was dropped
	mem      *memTable
	imm      []*memTable // newest first
	v        *version
}

// ref takes a reference in slot i unless the state is retired.
func (s *readState) ref(i int) bool {
	s.refs.Add(i, 1)
	if s.retired.Load() {
		s.unref(i)
		return false
	}
	return true
}

// unref drops a reference taken in slot i.
func (s *readState) unref(i int) {
	s.refs.Add(i, -1)
	if s.retired.Load() {
		s.maybeRelease()
	}
}

// retire marks a replaced state: it is released once its last holder is
// gone, now if there is none.
func (s *readState) retire() {
	s.retired.Store(true)
	s.maybeRelease()
}

// maybeRelease drops the version reference, once, if no holder is left.
// REQUIRES: retired is set.
func (s *readState) maybeRelease() {
	if s.refs.Sum() == 0 && s.released.CompareAndSwap(false, true) {
		s.v.unref()
	}
}

// loadReadState returns the current read state with a reference the caller
// must drop with unref(slot). It takes no lock and writes only the calling
// P's slot: a state replaced between the load and the reference is simply
// loaded again.
func (db *DB) loadReadState() (s *readState, slot int) {
	slot = pslot.Index()
	for {
		if s := db.readState.Load(); s.ref(slot) {
			return s, slot
		}
	}
}

// updateReadStateLocked publishes a read state for the current memtables and
// version, and retires the one it replaces. REQUIRES: db.mu held.
func (db *DB) updateReadStateLocked() {
	s := &readState{mem: db.mu.mem, v: db.mu.current}
	s.refs.Init()
	for i := len(db.mu.imm) - 1; i >= 0; i-- {
		s.imm = append(s.imm, db.mu.imm[i])
	}
	s.v.ref()
	if old := db.readState.Swap(s); old != nil {
		old.retire()
	}
}
