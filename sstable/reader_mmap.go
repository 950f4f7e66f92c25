package sstable

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/bloomkv/bloomkv/vfs"
)

// Reading a table through a memory map (ReaderOptions.Mmap).
//
// Blocks are copied out of the mapping into the same buffers a pread would
// fill, so the rest of the reader is unchanged and no slice into the
// mapping outlives a read: Close may unmap as soon as the table cache
// closes the reader, which it does only once nobody holds it.
//
// The mapping covers the bytes the file held at Open (at most the size the
// manifest records), so a read past them is "truncated" corruption, as
// with pread. A file cut shorter after it was mapped makes the copy fault
// (SIGBUS); the fault is recovered into an error rather than a crash.

// mapFile maps the table when its file supports it; otherwise (or on any
// failure) the reader keeps using pread.
func (r *Reader) mapFile() {
	m, ok := r.file.(vfs.Mapper)
	if !ok {
		return
	}
	size := r.size
	if st, err := r.file.Stat(); err == nil && st.Size() < size {
		size = st.Size() // truncated: reads past it report so
	}
	if size <= 0 {
		return
	}
	data, unmap, err := m.Map(size)
	if err != nil {
		return
	}
	r.mapped, r.unmap = data, unmap
}

// unmapFile releases the mapping, once.
func (r *Reader) unmapFile() {
	if r.unmap != nil {
		r.unmap()
		r.mapped, r.unmap = nil, nil
	}
}

// readMapped fills buf from the mapping at loc.offset.
func (r *Reader) readMapped(buf []byte, loc location) (err error) {
	size := uint64(len(r.mapped))
	end := loc.offset + uint64(len(buf))
	if end > size || end < loc.offset {
		have := size - min(loc.offset, size) // what pread would have returned
		return loc.corruptf("truncated: read %d of %d bytes", min(have, uint64(len(buf))), len(buf))
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if re, ok := p.(runtime.Error); ok {
				err = fmt.Errorf("bloomkv/sstable: %s: reading %s at offset %d from the mapped file (cut short since it was opened?): %v",
					r.name, loc.kind, loc.offset, re)
				return
			}
			panic(p)
		}
	}()
	copy(buf, r.mapped[loc.offset:end])
	return nil
}
