package sstable

import "sync"

// maxPooledRead is the largest stored block (with its trailer) read into a
// pooled buffer. Data blocks are a few KiB; index and filter blocks, read
// once per table open, may be far larger and would pin their size in the
// pool, so they get buffers of their own.
const maxPooledRead = 256 << 10

// readBuffers holds buffers for the stored bytes of blocks between the read
// and the decode; see Reader.readBlock.
var readBuffers = sync.Pool{New: func() any { return new([]byte) }}

// getReadBuffer returns a pooled buffer of length n (n <= maxPooledRead).
func getReadBuffer(n int) *[]byte {
	p := readBuffers.Get().(*[]byte)
	if cap(*p) < n {
		*p = make([]byte, n, max(n, 8<<10))
	}
	*p = (*p)[:n]
	return p
}

// putReadBuffer returns p to the pool; nothing may alias it afterwards.
func putReadBuffer(p *[]byte) { readBuffers.Put(p) }
