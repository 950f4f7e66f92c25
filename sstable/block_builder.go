package sstable

import (
	"encoding/binary"
)

// blockBuilder encodes one data or index block: prefix-compressed entries,
// then the restart array and its length. Keys must be added in increasing
// order; the builder does not check (the Writer does).
type blockBuilder struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	sinceRestart    int // entries added since the last restart point
	numEntries      int
	lastKey         []byte
}

func newBlockBuilder(restartInterval int) blockBuilder {
	b := blockBuilder{restartInterval: max(1, restartInterval)}
	b.reset()
	return b
}

// reset empties the builder, keeping its buffers.
func (b *blockBuilder) reset() {
	b.buf = b.buf[:0]
	// Every block, even an empty one, has restart point 0.
	b.restarts = append(b.restarts[:0], 0)
	b.sinceRestart = 0
	b.numEntries = 0
	b.lastKey = b.lastKey[:0]
}

func (b *blockBuilder) empty() bool { return b.numEntries == 0 }

// add appends an entry. The first entry and every restartInterval-th one
// after a restart store the whole key (shared = 0) so a reader can binary
// search the restart points.
func (b *blockBuilder) add(key, value []byte) {
	shared := b.sharedWith(key)
	if b.sinceRestart == b.restartInterval {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.sinceRestart = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.sinceRestart++
	b.numEntries++
}

// sharedWith returns the bytes of key that add would take from the
// previous key: 0 at a restart point.
func (b *blockBuilder) sharedWith(key []byte) int {
	if b.numEntries == 0 || b.sinceRestart == b.restartInterval {
		return 0
	}
	shared, n := 0, min(len(key), len(b.lastKey))
	for shared < n && key[shared] == b.lastKey[shared] {
		shared++
	}
	return shared
}

// estimatedSize is the size finish would return now.
func (b *blockBuilder) estimatedSize() int {
	return len(b.buf) + 4*len(b.restarts) + 4
}

// finish appends the restart array and returns the encoded block, which
// stays valid until the next reset or add.
func (b *blockBuilder) finish() []byte {
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	return b.buf
}
