package sstable

import (
	"fmt"
	"sync"
)

// Recycling the buffers of decoded data blocks.
//
// A Get that misses the block cache decodes a block of a few KiB. Decoded
// into a fresh buffer, every miss costs an allocation, its zeroing and
// garbage for the GC; with two readers the collector runs on the cores
// they need (it was what kept two readers below 1.8x one). Instead the
// buffer of a block the cache evicted is reused, once nobody reads the
// block any more.
//
// Who may still read a block is counted in block.refs: its creator, the
// cache while the block is in it, and every Get that acquired it from the
// cache. The decrement that takes the count to zero returns the buffer to
// the pool. A count that reached zero never rises again: acquire is a
// compare-and-swap from a nonzero count, so a cache hit racing the last
// release either wins (the buffer then waits for the hit's release) or
// fails and is treated as a miss. The cache holds its reference as long as
// the entry is in its table, so a recycled buffer is never reachable from
// the cache; a reader that found the entry in a table just before it was
// removed sees the count at zero. Only the buffer is reused, never the
// block struct, so such a late reader cannot mistake another block's
// count for its own.
//
// Holders that release: Gets (Reader.GetSeqHeld) once the value is
// copied, and iterators made with NewIterReleasing (the database's own
// iterators, whose keys and values are valid only until the next move) as
// they leave each block. A holder that cannot say when it is done (other
// iterators, callers of Reader.Get and GetSeq, whose values alias the
// block for as long as they like) sets keptBit instead of counting: the count then never reaches zero and the
// block is left to the garbage collector. So code that does not opt in to
// releasing is safe by default.
//
// Blocks whose bytes did not come from the pool (index blocks, compaction
// readahead, blocks too large to pool) have buf == nil and are never
// recycled; acquiring them writes nothing.

// keptBit in block.refs marks a block that is never recycled.
const keptBit = 1 << 30

// maxPooledBlock is the largest decoded block whose buffer is recycled:
// data blocks are a few KiB, and an unusually large one would pin its size
// in the pool. A buffer may hold a smaller block than the one it was made
// for, and the cache charges the block's length, not the capacity: with
// one block size per tree the two stay close.
const maxPooledBlock = 64 << 10

// blockBuffers holds the buffers of recycled blocks.
var blockBuffers = sync.Pool{New: func() any { return new([]byte) }}

// recycleHook, when set, is handed every buffer going back to the pool,
// whole (to its capacity). The invariants build tag and the tests set it
// to poison, so that a read of a block after its release returns garbage
// a test notices; tests also count recycles with it. Set it only while no
// reader runs.
var recycleHook func(buf []byte)

// poisonByte fills recycled buffers (poison). Its high bit makes every
// byte a varint continuation, so entry headers read from it decode to
// lengths that run off the block, and values read from it differ from any
// a test wrote.
const poisonByte = 0xA5

// poison overwrites a recycled buffer.
func poison(buf []byte) {
	for i := range buf {
		buf[i] = poisonByte
	}
}

// getBlockBuffer returns a pooled buffer, empty, with whatever capacity a
// recycled block left it.
func getBlockBuffer() *[]byte {
	p := blockBuffers.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

// putBlockBuffer returns p to the pool; nothing may read it afterwards.
func putBlockBuffer(p *[]byte) {
	if recycleHook != nil {
		recycleHook((*p)[:cap(*p)])
	}
	blockBuffers.Put(p)
}

// adoptBuffer makes b's data, held in the pooled holder p, recyclable, and
// gives b its creator's reference: counted (released by the creator) or
// kept. Called before b is published anywhere.
func (b *block) adoptBuffer(p *[]byte, counted bool) {
	if cap(b.data) > maxPooledBlock {
		return // not pooled; buf stays nil
	}
	*p = b.data
	b.buf = p
	if counted {
		b.refs.Store(1)
	} else {
		b.refs.Store(keptBit | 1)
	}
}

// acquire takes a reference to b, counted (to be released) or kept. It
// fails only when b's buffer has been, or is being, recycled.
func (b *block) acquire(counted bool) bool {
	if b.buf == nil {
		return true // never recycled
	}
	for {
		n := b.refs.Load()
		switch {
		case n == 0:
			return false
		case !counted && n&keptBit != 0:
			return true // already kept: no write
		}
		next := n + 1
		if !counted {
			next = n | keptBit
		}
		if b.refs.CompareAndSwap(n, next) {
			return true
		}
	}
}

// addRef adds a counted reference for a holder beside one that already
// has one (the cache taking a block from its creator).
func (b *block) addRef() {
	if b.buf != nil {
		b.refs.Add(1)
	}
}

// release drops a counted reference; the last one recycles the buffer.
func (b *block) release() {
	if b.buf == nil {
		return
	}
	switch n := b.refs.Add(-1); {
	case n == 0:
		// b.buf stays set: a late lookup reads it (to learn that b is
		// pooled) before it finds the count at zero.
		putBlockBuffer(b.buf)
	case n < 0 || n == keptBit-1:
		// A count below zero (or borrowed from keptBit) means a double
		// release: some reader may already use recycled bytes.
		panic(fmt.Sprintf("bloomkv/sstable: data block released more often than acquired (refs %#x)", n))
	}
}

// BlockRef holds a data block for a value returned by Reader.GetSeqHeld:
// the value stays valid until Release, which must be called exactly once.
// The zero BlockRef holds nothing.
type BlockRef struct{ b *block }

// Release lets the block's buffer be recycled once the cache has evicted
// it; the value it held may change from then on.
func (h BlockRef) Release() {
	if h.b != nil {
		h.b.release()
	}
}

// PoisonRecycledBlocks makes every block buffer going back to the pool be
// overwritten (on) or left alone (off), as the invariants build tag does:
// a read of a block after its release then returns garbage a test notices.
// It is for the tests of the packages above this one (the database's own
// TestMain turns it on); call it only while no reader runs.
func PoisonRecycledBlocks(on bool) {
	if on {
		recycleHook = poison
	} else {
		recycleHook = nil
	}
}
