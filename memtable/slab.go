package memtable

// The bytes of entries (user key | trailer | value, see entry) are carved
// out of large slabs rather than allocated one by one: a memtable of 4 MiB
// holds some 30,000 small entries, and an allocation each cost the write
// path a malloc and the garbage collector 30,000 objects to find and mark
// per memtable. A slab holds no pointers, so the collector never scans it;
// entries are never freed one at a time (a memtable is dropped whole once
// flushed), so a bump allocator loses nothing but a slab's unused end.
const (
	slabSize = 64 << 10
	// Entries above slabMaxEntry get an allocation of their own, so that a
	// large value neither wastes the rest of a slab nor pins one.
	slabMaxEntry = slabSize / 8
)

// slab is a bump allocator. It is used by Add only, which the caller
// serializes; the bytes it hands out are never written again once the
// entry is in the tree.
type slab struct {
	buf []byte // the current slab; buf[len(buf):cap(buf)] is free
}

// alloc returns n fresh bytes, capped at n so that appending to them can
// never reach a neighbour.
func (s *slab) alloc(n int) []byte {
	if n > slabMaxEntry {
		return make([]byte, n)
	}
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]byte, 0, slabSize)
	}
	off := len(s.buf)
	s.buf = s.buf[:off+n]
	return s.buf[off : off+n : off+n]
}
