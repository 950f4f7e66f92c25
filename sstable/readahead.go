package sstable

import (
	"fmt"
	"sync"

	"github.com/bloomkv/bloomkv/kv"
)

// compactionReadahead is how many bytes of data blocks a compaction input
// reads at once. A compaction visits every block of its inputs in file
// order, and one pread per ~4 KiB block cost a system call, a pooled read
// buffer and a fresh decompression buffer each; a 2 MiB table now costs
// about a dozen reads and one buffer of each kind.
const compactionReadahead = 256 << 10

// initialReadahead is the first window of an input; each refill doubles
// it up to the full size. A compaction positions every input at once (a
// manual one over a whole level may have thousands), and most of them wait
// a long time before the merge reaches them: they hold a small window, not
// 256 KiB each.
const initialReadahead = 8 << 10

// readaheadWindows recycles the windows of finished compaction inputs.
var readaheadWindows = sync.Pool{New: func() any { return new([]byte) }}

// readahead serves the data blocks of one table iterator from a window of
// the file read ahead of it. Blocks are checked (checksum, then
// decodeBlock) exactly as Reader.dataBlock checks them; they bypass the
// block cache in both directions, which a compaction would not fill anyway.
//
// A block it returns is valid until the next call (or release): a raw block
// aliases the window and a compressed one the reused decompression buffer.
// That is the iterator contract already (Key and Value until the next
// move), and the table iterator drops its block before it loads another.
type readahead struct {
	r      *Reader
	max    int     // the largest refill
	next   int     // bytes the next refill reads (at least one whole block)
	window *[]byte // pooled; the file's bytes from off
	off    uint64
	dec    []byte // snappy output buffer, reused block to block
}

// NewCompactionIter returns a forward-and-backward iterator over the whole
// table like NewIter(false), for a compaction: it reads the data blocks in
// large sequential windows and reuses its buffers, and it neither reads
// nor fills the block cache.
func (r *Reader) NewCompactionIter() kv.Iterator {
	return r.newReadaheadIter(compactionReadahead)
}

func (r *Reader) newReadaheadIter(size int) *tableIter {
	it := &tableIter{r: r, ra: &readahead{r: r, max: size, next: min(size, initialReadahead)}}
	it.index.init(r, false, nil)
	return it
}

// dataBlock returns the data block at h, refilling the window when h is
// not wholly inside it.
func (ra *readahead) dataBlock(h blockHandle) (*block, error) {
	r := ra.r
	if r.closed.Load() {
		return nil, fmt.Errorf("bloomkv/sstable: %s: reader is closed", r.name)
	}
	n := h.size + blockTrailerLen
	if ra.window == nil || h.offset < ra.off || h.offset+n > ra.off+uint64(len(*ra.window)) {
		if err := ra.fill(h.offset, n); err != nil {
			return nil, err
		}
	}
	start := h.offset - ra.off
	stored := (*ra.window)[start : start+n]
	loc := location{r.name, kindData, h.offset}
	raw, err := decodeBlockContentsInto(ra.dec, stored, loc)
	if err != nil {
		return nil, err
	}
	if stored[h.size] != blockTypeRaw {
		ra.dec = raw[:0] // decompressed: keep the (possibly grown) buffer
	}
	return decodeBlock(raw, loc)
}

// fill reads the window starting at off: ra.next bytes, or the n bytes of
// the block there if it is larger, but never past the data blocks (the
// caller's handle was checked to lie among them).
func (ra *readahead) fill(off, n uint64) error {
	end := min(off+uint64(max(ra.next, 1)), ra.r.props.DataSize)
	end = max(end, off+n)
	ra.next = min(2*ra.next, ra.max)
	want := int(end - off)
	if ra.window == nil || cap(*ra.window) < want {
		ra.takeWindow(want)
	}
	*ra.window = (*ra.window)[:want]
	ra.off = off
	if err := ra.r.preadAt(*ra.window, location{ra.r.name, kindData, off}); err != nil {
		*ra.window = (*ra.window)[:0] // nothing valid: the next call reads again
		return err
	}
	return nil
}

// takeWindow gives ra a window of at least want bytes, in place of the
// one it holds. Windows of about the full size come from readaheadWindows;
// smaller ones are allocated to size. Why: a compaction positions all its
// inputs at once, and an input that took a pooled full-size window for its
// first 8 KiB would sit on 256 KiB until the merge reaches it. A level-0
// compaction into a base level of 100 MiB has some 50 inputs: with pooled
// windows they held 24 MiB of the heap at once (peak anonymous RSS of a
// 10M-key fill 171 MiB instead of 113; docs/design-notes.md).
func (ra *readahead) takeWindow(want int) {
	ra.putWindow()
	if want < compactionReadahead/2 {
		w := make([]byte, want)
		ra.window = &w
		return
	}
	ra.window = readaheadWindows.Get().(*[]byte)
	if cap(*ra.window) < want {
		*ra.window = make([]byte, want)
	}
}

// putWindow returns the window to the pool if it is one of the sizes the
// pool hands out (not a small window, nor one huge block's), and drops it.
func (ra *readahead) putWindow() {
	if ra.window == nil {
		return
	}
	if c := cap(*ra.window); c >= compactionReadahead/2 && c <= 2*compactionReadahead {
		*ra.window = (*ra.window)[:0]
		readaheadWindows.Put(ra.window)
	}
	ra.window = nil
}

// release returns the window to the pool; the blocks served from it are
// invalid from here on. The table iterator calls it when it runs off
// either end, so that finished inputs of a long compaction hold nothing; a
// later block read takes a window again.
func (ra *readahead) release() {
	ra.putWindow()
	ra.dec = nil
}
