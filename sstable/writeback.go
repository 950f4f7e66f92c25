package sstable

import "github.com/bloomkv/bloomkv/vfs"

// tableWritebackBytes: a table being written asks the operating system to
// start writing back every this many bytes (vfs.StartWriteback, a hint
// with no durability promise). Without it, the fsync in Finish wrote a
// whole 2 MiB table at once, and in WALSync mode the log's fsyncs, which
// writers wait for, queued behind that burst on the same disk.
const tableWritebackBytes = 512 << 10

// writebackFile is what a Writer's buffer writes to: f, with the writeback
// started as the bytes pass.
type writebackFile struct {
	f             vfs.File
	written, from int64 // bytes written; writeback started below from
}

func (w *writebackFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	if w.written-w.from >= tableWritebackBytes {
		vfs.StartWriteback(w.f, w.from, w.written-w.from)
		w.from = w.written
	}
	return n, err
}
