package sstable

import (
	"bytes"
	"fmt"
	"runtime/debug"

	"github.com/bloomkv/bloomkv/vfs"
)

// Reading a table through a memory map (ReaderOptions.Mmap).
//
// A block is checked and decompressed straight from the mapping: copying
// the stored bytes into a buffer first was half the memmove time of random
// Gets. No slice into the mapping outlives a read, because Close may unmap
// as soon as the table cache closes the reader (which it does only once
// nobody holds it): a block stored raw is copied out, and a decompressed
// one is in a buffer of its own anyway.
//
// The mapping covers the bytes the file held at Open (at most the size the
// manifest records), so a read past them is "truncated" corruption, as
// with pread. A file cut shorter after it was mapped makes any touch of
// the lost pages fault (SIGBUS), in the copy or in the decoder alike; the
// fault is recovered into an error rather than a crash.

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

// mappedRange returns the n mapped bytes at loc.offset, or the truncation
// error a pread of them would give.
func (r *Reader) mappedRange(loc location, n uint64) ([]byte, error) {
	size := uint64(len(r.mapped))
	end := loc.offset + n
	if end > size || end < loc.offset {
		have := size - min(loc.offset, size) // what pread would have returned
		return nil, loc.corruptf("truncated: read %d of %d bytes", min(have, n), n)
	}
	return r.mapped[loc.offset:end:end], nil
}

// recoverFault turns a memory fault (the mapped file shrank) recovered
// from p into an error; any other panic is a bug and goes on.
func (r *Reader) recoverFault(p any, loc location) error {
	// SetPanicOnFault's panics carry the faulting address; an index out of
	// range in a decoder does not, and must not pass for a cut file.
	if fe, ok := p.(interface {
		error
		Addr() uintptr
	}); ok {
		return fmt.Errorf("bloomkv/sstable: %s: reading %s at offset %d from the mapped file (cut short since it was opened?): %v",
			r.name, loc.kind, loc.offset, fe)
	}
	panic(p)
}

// readMapped fills buf from the mapping at loc.offset.
func (r *Reader) readMapped(buf []byte, loc location) (err error) {
	src, err := r.mappedRange(loc, uint64(len(buf)))
	if err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = r.recoverFault(p, loc)
		}
	}()
	copy(buf, src)
	return nil
}

// readBlockMapped is readBlockInto for a mapped table: the n stored bytes
// (block and trailer) at loc are verified and decoded where they lie.
func (r *Reader) readBlockMapped(dst []byte, loc location, n uint64) (out []byte, err error) {
	stored, err := r.mappedRange(loc, n)
	if err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, r.recoverFault(p, loc)
		}
	}()
	if n > blockTrailerLen && stored[n-blockTrailerLen] == blockTypeZstd {
		// The zstd decoder may hand work to goroutines of its own, where a
		// fault would not be recovered: give it a copy.
		stored = bytes.Clone(stored)
	}
	out, err = decodeBlockContentsInto(dst, stored, loc)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 && &out[0] == &stored[0] { // stored raw: out aliases the mapping
		out = append(dst[:0], out...)
	}
	return out, nil
}
