package vfs

// WritableMapper is implemented by files that a log can be written through
// a shared, writable memory map instead of one write call per record.
//
// Why: a write-through log must hand every record to the operating system
// before the write is acknowledged, so that it survives a crash of the
// process. With write(2) that is one system call per record, about 2 µs on
// the development machine and half the cost of a write-through Put. Bytes
// copied into a MAP_SHARED mapping are in the kernel's page cache the moment
// the copy ends -- they survive kill -9 exactly as written bytes do -- and
// cost a memory copy.
//
// The price is that the file must be longer than what is written: a store
// past the end of a file faults (SIGBUS). So the writer reserves space
// ahead with Reserve (allocating the blocks, so a full disk fails the
// Reserve call instead of faulting a later store), maps the reserved
// range, and at the end cuts the file back to what it wrote with Truncate.
// Until then, and after a crash, the file ends in zeros that were never
// written: internal/record reads those as reserved space, not damage.
//
// Only 64-bit Linux implements it (fallocate reserves the blocks); files of
// other systems, and of the in-memory and fault-injecting file systems,
// do not, and logs there are written with write calls.
type WritableMapper interface {
	// Reserve makes the file at least size bytes long, every byte of it
	// backed by an allocated (zero-filled) disk block.
	Reserve(size int64) error
	// MapWritable maps [off, off+n) of the file read-write and shared; off
	// must be a multiple of the page size and the range inside the file.
	// unmap releases the mapping; nothing may touch data afterwards.
	MapWritable(off, n int64) (data []byte, unmap func() error, err error)
	// Truncate sets the file's size.
	Truncate(size int64) error
}
