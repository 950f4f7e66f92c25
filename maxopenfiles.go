package bloomkv

import "github.com/bloomkv/bloomkv/vfs"

// The default MaxOpenFiles follows the process's descriptor limit.
//
// Every table a Get may touch should stay open: a table closed to stay
// within MaxOpenFiles is opened again by the next read that needs it,
// which re-reads its footer, properties, index and filter blocks (at 10M
// keys in 644 tables of 2 MiB, a limit of 500 cost every absent-key Get
// 6,992 bytes of such reads, against 46 with every table open, and a third
// of the throughput). The descriptors are what bounds the count, so the
// default takes half of the process's limit -- the other half is left to
// the logs, the manifest and the rest of the program -- within
// [minDefaultOpenFiles, maxDefaultOpenFiles]. A process holding several
// databases, or many other files, sets MaxOpenFiles itself.
const (
	minDefaultOpenFiles = 500
	maxDefaultOpenFiles = 1 << 16
	// fallbackOpenFiles is the default where the limit cannot be read
	// (Pebble's default).
	fallbackOpenFiles = 1000
)

// defaultMaxOpenFiles returns MaxOpenFiles' default for this process.
func defaultMaxOpenFiles() int {
	return maxOpenFilesFor(vfs.DescriptorLimit())
}

// maxOpenFilesFor returns the default for a descriptor limit (0: unknown).
func maxOpenFilesFor(limit uint64) int {
	if limit == 0 {
		return fallbackOpenFiles
	}
	return int(min(max(limit/2, minDefaultOpenFiles), maxDefaultOpenFiles))
}
