package sstable

import "github.com/bloomkv/bloomkv/internal/pslot"

// A table's open blocks survive its closing by the table cache.
//
// Open reads a table's footer and its properties, index, range-deletion
// and filter blocks. When the table cache closes an idle table to stay
// within its capacity, the next read of the table opens it again; reading
// those blocks again cost every absent-key Get at 10M keys (644 tables,
// 500 open) 6,992 bytes of reads. So the cache hands the closing Reader's
// blocks, as Open read them (checksums verified, uncompressed, in buffers
// no one else owns or modifies: readBlock's contract), to the block cache,
// charged at their size and evicted like data blocks. A re-open takes them
// back, decodes them as Open always does, and reads only what is missing.
// The blocks of a deleted table go with its data blocks (EvictFile).
//
// Invariants: an openBlocks is immutable once handed over; it is in the
// block cache or held by one opening Reader, never both (take removes it).

// openBlocksOffset is the cache key offset of a table's open blocks: no
// block starts there.
const openBlocksOffset = ^uint64(0)

// openBlocks are the blocks Open read, by offset in the table (the footer
// at its own offset), with their total size.
type openBlocks struct {
	blocks map[uint64][]byte
	size   int64
}

// keep records a block Open read.
func (b *openBlocks) keep(offset uint64, data []byte) {
	if b.blocks == nil {
		b.blocks = make(map[uint64][]byte, 5)
	}
	b.blocks[offset] = data
	b.size += int64(len(data))
}

// find returns the block at offset, if kept.
func (b *openBlocks) find(offset uint64) ([]byte, bool) {
	if b == nil {
		return nil, false
	}
	data, ok := b.blocks[offset]
	return data, ok
}

// putOpenBlocks caches the open blocks of table fileNum, which is being
// closed (not deleted).
func (c *BlockCache) putOpenBlocks(fileNum uint64, b *openBlocks) {
	if b == nil || len(b.blocks) == 0 {
		return
	}
	c.insert(&cacheEntry{key: cacheKey{fileNum, openBlocksOffset}, open: b, charge: b.size, meta: true})
}

// takeOpenBlocks removes and returns the cached open blocks of table
// fileNum, or nil, counting a hit or a miss.
func (c *BlockCache) takeOpenBlocks(fileNum uint64) *openBlocks {
	k := cacheKey{fileNum, openBlocksOffset}
	h := hashKey(k)
	s := c.shard(h)
	if s.table.Load().find(k, h) == nil { // the common case: no lock
		c.openMisses.Add(pslot.Index(), 1)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.table.Load().find(k, h)
	if e == nil || e.open == nil {
		c.openMisses.Add(pslot.Index(), 1)
		return nil
	}
	c.removeLocked(s, e)
	c.openHits.Add(pslot.Index(), 1)
	return e.open
}

// OpenBlockHits counts table opens that found the table's open blocks
// (footer, properties, index, range deletions, filter) in the cache, kept
// there when the table cache closed the table; OpenBlockMisses those that
// read them from the file.
func (c *BlockCache) OpenBlockHits() uint64   { return uint64(c.openHits.Sum()) }
func (c *BlockCache) OpenBlockMisses() uint64 { return uint64(c.openMisses.Sum()) }
