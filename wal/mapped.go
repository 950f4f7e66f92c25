package wal

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/bloomkv/bloomkv/vfs"
)

// A write-through log written through a memory map (WriterOptions.MapLog).
//
// Write-through promises that a record has reached the operating system
// when Append returns, so that it survives kill -9. Copying the record into
// a shared mapping of the file keeps that promise -- the bytes are in the
// kernel's page cache as soon as the copy ends -- without the write system
// call per record that made up half the cost of a write-through Put.
//
// The file is reserved ahead of the records (vfs.WritableMapper.Reserve
// allocates the blocks, so a full disk fails there, not in a store) in
// windows that start at mapWindowMin and double up to mapWindowMax, each
// mapped on its own. Seal (and Close) cut the file back to the bytes
// written. A crash leaves the newest log ending in zeros that were reserved
// and never written; recovery reads those as reserved space
// (internal/record's AllowReservedTail). Every older log was sealed, and so
// ends exactly after its last record, before the next log was created.
//
// Invariants: written <= the mapped window's end <= reserved; the bytes of
// the file past written are zero. A write after seal maps a new window
// from the page holding the end of the file (a log switch that fails after
// sealing the old log goes on writing it).

const (
	// Window sizes are multiples of every page size Linux uses (up to 64
	// KiB) and so of the log's block size: windows start on a page and
	// reserved space ends on a block boundary.
	mapWindowMin = 256 << 10
	mapWindowMax = 4 << 20
	// mapWindowLeast is the smallest window tried when reserving a
	// bigger one fails (a nearly full disk).
	mapWindowLeast = 64 << 10
)

// mappedFile writes a log's bytes through memory-mapped windows.
type mappedFile struct {
	file   vfs.File
	mapper vfs.WritableMapper

	window   []byte       // the mapping of [winStart, winStart+len(window))
	unmap    func() error // releases window; nil when none is mapped
	winStart int64
	written  int64 // bytes stored; the file offset of the next one
	reserved int64 // the file's length: bytes reserved so far
	next     int64 // the size of the next window
}

// errMapUnsupported says the file cannot be written through a map; the
// Writer then writes to it with write calls.
var errMapUnsupported = errors.New("bloomkv/wal: log file cannot be memory-mapped")

// newMappedFile maps the first window of the fresh file f, or fails when f
// cannot be mapped (the caller then writes with write calls).
func newMappedFile(f vfs.File) (*mappedFile, error) {
	m, ok := f.(vfs.WritableMapper)
	if !ok {
		return nil, errMapUnsupported
	}
	mf := &mappedFile{file: f, mapper: m, next: mapWindowMin}
	if err := mf.advance(); err != nil {
		return nil, err
	}
	return mf, nil
}

// advance replaces the used-up (or, after seal, missing) window with the
// next one, starting at the page that holds the next byte, and reserves
// its space first. When the window cannot be reserved whole (a nearly full
// disk), smaller ones are tried, and at worst the window covers just what
// is reserved already.
func (m *mappedFile) advance() error {
	if err := m.release(); err != nil {
		return err
	}
	start := m.written - m.written%int64(os.Getpagesize())
	size := m.next
	for start+size > m.reserved {
		err := m.mapper.Reserve(start + size)
		if err == nil {
			m.reserved = start + size
			break
		}
		if size > mapWindowLeast && start+size/2 > m.written {
			size /= 2
			m.next = size
			continue
		}
		if m.reserved <= m.written {
			return fmt.Errorf("reserve %d bytes: %w", start+size, err)
		}
		size = m.reserved - start
	}
	data, unmap, err := m.mapper.MapWritable(start, size)
	if err != nil {
		return fmt.Errorf("map bytes %d-%d: %w", start, start+size, err)
	}
	m.window, m.unmap, m.winStart = data, unmap, start
	m.next = min(2*size, mapWindowMax)
	return nil
}

// release unmaps the current window, if any.
func (m *mappedFile) release() error {
	if m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.window, m.unmap = nil, nil
	if err != nil {
		return fmt.Errorf("unmap: %w", err)
	}
	return nil
}

// Write stores p after the bytes written so far, mapping more of the file
// as needed. A fault while storing (the file was cut short behind the
// writer's back) is returned as an error, not a crash.
func (m *mappedFile) Write(p []byte) (n int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtime.Error)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("storing at offset %d through the memory map (file cut short?): %v", m.written, re)
		}
	}()
	if need := m.written + int64(len(p)); need > m.reserved {
		// Reserve all of p before storing any of it, so that a full
		// disk fails the write whole rather than leave part of a
		// record behind.
		end := (need + mapWindowLeast - 1) / mapWindowLeast * mapWindowLeast
		if err := m.mapper.Reserve(end); err != nil {
			return 0, fmt.Errorf("reserve %d bytes: %w", end, err)
		}
		m.reserved = end
	}
	for len(p) > 0 {
		if m.window == nil || m.written == m.winStart+int64(len(m.window)) {
			if err := m.advance(); err != nil {
				return n, err
			}
		}
		c := copy(m.window[m.written-m.winStart:], p)
		m.written += int64(c)
		n += c
		p = p[c:]
	}
	return n, nil
}

// seal unmaps the window and cuts the file back to the bytes written, so
// that it ends exactly after its last record. It does not fsync.
func (m *mappedFile) seal() error {
	err := m.release()
	if m.reserved != m.written {
		if terr := m.mapper.Truncate(m.written); terr != nil && err == nil {
			err = fmt.Errorf("truncate to %d bytes: %w", m.written, terr)
		}
		m.reserved = m.written
	}
	return err
}
