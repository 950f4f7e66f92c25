package sstable

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/lru"
	"github.com/bloomkv/bloomkv/internal/pslot"
	"github.com/bloomkv/bloomkv/vfs"
)

// TableCache keeps tables open and bounds the file descriptors they hold.
// It is safe for concurrent use.
//
// A table has at most one Reader, hence one descriptor: Find of a table
// that is open, or being opened, returns the same Reader with another
// reference, and a Reader closes with its last reference. A table stays in
// the cache while anyone holds it. At most capacity tables are open, unless
// holders pin more; then only the pinned ones are: the cache closes idle
// tables (held by nobody but the cache), least recently used first, when a
// Find opens a table and when a release leaves an excess table idle. A
// table still held when the cache looked for an idle one counts as used
// then. A table being closed stays in the cache until its descriptor is
// closed; a Find of it waits for that and opens it anew.
//
// Evict and Close drop the cache's reference but not the holders': a
// deleted table that is still held keeps its descriptor until released,
// outside the capacity (it no longer blocks new tables), and Len counts it.
type TableCache struct {
	fs       vfs.FS        // constant after construction
	dir      string        // constant after construction
	capacity int           // constant after construction
	opts     ReaderOptions // constant after construction

	// readers counts Readers opened and not yet closed, cached or not.
	readers atomic.Int64
	// over is set while the LRU list holds more than capacity tables, all
	// idle ones closed: a release that leaves a table idle must then take mu
	// and close the excess. Written under mu, read without it, so a release
	// that keeps the cache within capacity takes no lock.
	over atomic.Bool

	// open maps a file number to its entry once the table is open (loaded
	// without error) and in the LRU list: the lock-free path of Find. Its
	// writes happen under mu, together with entries'.
	open openIndex

	// opens counts the tables opened; reopens those opened before (then
	// closed to stay within capacity); openBytes what the opens read.
	opens, reopens, openBytes atomic.Uint64

	mu sync.Mutex
	// Guarded by mu:
	entries map[uint64]*tableEntry // the LRU list's and those being closed
	// opened holds the tables opened once, until Evict: a later open of
	// one is a re-open.
	opened map[uint64]struct{}
	// lru holds the entries counted against capacity, most recently used
	// first: every entry of entries but those being closed.
	lru    lru.List[*tableEntry]
	closed bool
}

// tableEntry is one open (or opening) table. The cache keeps it while it
// is in the LRU list (state entryLive); every Find holds a reference until
// its release. An entry in the list that no Find holds is idle.
//
// # References
//
// Every Get finds a table or two, so the holders' count is split over
// per-P slots (internal/pslot; a Find's release drops its reference in
// the slot it took it in): readers on several cores take and drop
// references without writing a shared cache line. The count alone cannot
// be claimed atomically, so state says who may still take references:
//
//   - entryLive: the entry is in the cache. A lock-free Find (tryRef) adds
//     1 to its slot, then reads state; seeing anything but entryLive it
//     takes the reference back and goes the locked way. A Find under
//     TableCache.mu adds its reference there: state changes only under mu.
//   - entryProbing: trimLocked, under mu, is checking whether the entry is
//     idle. It sets this, then sums the slots: a Find that added before the
//     store is in the sum, one that adds after it sees entryProbing and
//     backs off (Dekker-style, all sequentially consistent atomics). A zero
//     sum claims the entry (entryDropped, the trimmer closes it); otherwise
//     it goes back to entryLive. A release during the probe that leaves the
//     entry idle trims again once the probing trim is done.
//   - entryDropped: out of the cache for good (claimed idle, evicted, the
//     cache closed, or a failed open). No new references; the release that
//     finds the sum zero closes the reader, as does whoever dropped it if
//     it had no holder then. closeOnce makes it exactly once, and makes a
//     second closer wait for the first.
type tableEntry struct {
	cache   *TableCache // constant
	fileNum uint64      // constant
	holders pslot.Counter
	state   atomic.Int32 // entryLive, entryProbing or entryDropped
	// recent is set by a lock-free hit: the LRU list is not reordered
	// without the lock, so a trim gives a recently used entry a second
	// chance (moves it to the front) instead (the CLOCK approximation).
	recent atomic.Bool
	// loaded is closed once reader and err are set; they never change after.
	loaded chan struct{}
	reader *Reader
	err    error
	// releases[i] drops a reference taken in slot i: bound once per slot
	// when the entry is made, so that Find allocates nothing on a hit.
	releases  []func()
	closeOnce sync.Once

	node lru.Node[*tableEntry] // in TableCache.lru, guarded by TableCache.mu
	// gone is set, under TableCache.mu, when the cache takes the idle entry
	// out of the LRU list to close it, and closed once the reader is closed
	// and the entry has left entries.
	gone chan struct{}
}

// The states of a tableEntry (see there).
const (
	entryLive int32 = iota
	entryProbing
	entryDropped
)

// ErrTableCacheClosed is returned by Find after Close.
var ErrTableCacheClosed = errors.New("bloomkv/sstable: table cache closed")

// NewTableCache returns a cache of at most n open tables (n < 1 is taken as
// 1) in dir, opened through fs with options o. Table f is the file
// NNNNNN.sst in dir: f in decimal, zero-padded to six digits.
func NewTableCache(fs vfs.FS, dir string, n int, o ReaderOptions) *TableCache {
	return &TableCache{fs: fs, dir: dir, capacity: max(n, 1), opts: o,
		entries: make(map[uint64]*tableEntry), opened: make(map[uint64]struct{})}
}

// Find returns an open Reader for the table id.FileNum of size id.Size and
// a function that releases it; call the function exactly once when done.
// The table is opened on a miss, and then checked against id (see
// Reader.CheckIdentity; the cache's ReaderOptions.DBID stands in for a nil
// id.DBID): file numbers are never reused, so a cached Reader is the same,
// already checked, file. While the table is held, every Find of it returns
// the same Reader; concurrent Finds of a table being opened wait for that
// one open. A Find that hits the cache allocates nothing.
func (c *TableCache) Find(id Identity) (*Reader, func(), error) {
	return c.FindWithStats(id, nil)
}

// FindWithStats is Find that, when it has to open the table, counts the
// open in stats.TableOpens and the bytes it read in stats.BytesRead (stats
// may be nil): a read that re-opens a table pays for it.
func (c *TableCache) FindWithStats(id Identity, stats *ReadStats) (*Reader, func(), error) {
	return c.FindAt(pslot.Index(), id, stats)
}

// FindAt is FindWithStats taking its reference in slot. Any int is
// correct; the engine passes the per-P slot index (internal/pslot) it
// already holds, so that a Get finds several tables with the slot of its
// read-state reference and cores do not share a counter.
func (c *TableCache) FindAt(slot int, id Identity, stats *ReadStats) (*Reader, func(), error) {
	fileNum := id.FileNum
	slot &= pslot.N - 1
	// The common case takes no lock and writes no shared cache line: an
	// open table, referenced in the calling P's slot. Readers on several
	// cores then share no mutex and no counter.
	if e := c.open.load(fileNum); e != nil {
		if e.tryRef(slot) {
			if !e.recent.Load() {
				e.recent.Store(true)
			}
			return e.reader, e.releases[slot], nil
		}
	}
	c.mu.Lock()
	e := c.entries[fileNum]
	for e != nil && e.gone != nil {
		// Being closed: wait, so that the table never has two descriptors.
		gone := e.gone
		c.mu.Unlock()
		<-gone
		c.mu.Lock()
		e = c.entries[fileNum]
	}
	if c.closed {
		c.mu.Unlock()
		return nil, nil, ErrTableCacheClosed
	}
	if e != nil {
		e.holders.Add(slot, 1) // under mu: e is live, in the LRU list
		c.lru.MoveToFront(&e.node)
		c.mu.Unlock()
		<-e.loaded
		if e.err != nil {
			e.unref(slot)
			return nil, nil, e.err
		}
		return e.reader, e.releases[slot], nil
	}
	e = newTableEntry(c, fileNum)
	e.holders.Add(slot, 1)
	c.entries[fileNum] = e
	c.lru.PushFront(&e.node)
	_, reopen := c.opened[fileNum]
	c.opened[fileNum] = struct{}{}
	victims := c.trimLocked(nil)
	c.mu.Unlock()
	c.closeVictims(victims)

	// Open outside the lock; concurrent Finds of this table wait on loaded.
	r, err := c.openTable(id)
	if err == nil {
		c.readers.Add(1)
		n := r.OpenBytes()
		c.opens.Add(1)
		c.openBytes.Add(n)
		if reopen {
			c.reopens.Add(1)
		}
		if stats != nil {
			stats.TableOpens.Add(1)
			stats.BytesRead.Add(n)
		}
	}
	e.reader, e.err = r, err
	close(e.loaded)
	if err == nil {
		c.mu.Lock()
		if c.entries[fileNum] == e && e.gone == nil && !c.closed {
			c.open.storeLocked(e)
		}
		c.mu.Unlock()
	}
	if err != nil {
		// Forget the failure so a later Find retries.
		c.mu.Lock()
		drop := c.entries[fileNum] == e
		if drop {
			c.removeLocked(e)
		}
		c.mu.Unlock()
		if drop {
			e.maybeClose()
		}
		e.unref(slot)
		return nil, nil, err
	}
	return r, e.releases[slot], nil
}

// newTableEntry returns a live entry for table fileNum, not yet loaded.
func newTableEntry(c *TableCache, fileNum uint64) *tableEntry {
	e := &tableEntry{cache: c, fileNum: fileNum, loaded: make(chan struct{})}
	e.holders.Init()
	e.releases = make([]func(), pslot.N)
	for i := range e.releases {
		e.releases[i] = func() { e.unref(i) }
	}
	e.node.Value = e
	return e
}

func (c *TableCache) openTable(id Identity) (*Reader, error) {
	name := base.MakeFilename(base.FileTypeTable, id.FileNum)
	f, err := c.fs.Open(c.fs.PathJoin(c.dir, name))
	if err != nil {
		return nil, fmt.Errorf("bloomkv/sstable: opening table %s: %w", name, err)
	}
	var pre *openBlocks
	if c.opts.Cache != nil {
		pre = c.opts.Cache.takeOpenBlocks(id.FileNum)
	}
	r, err := openWith(f, name, id.FileNum, id.Size, c.opts, pre)
	if err != nil {
		return nil, err
	}
	if id.DBID == nil {
		id.DBID = c.opts.DBID
	}
	if err := r.CheckIdentity(id); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// tryRef takes a reference in slot i, without the cache's lock, unless
// the entry is no longer live (see tableEntry).
func (e *tableEntry) tryRef(i int) bool {
	e.holders.Add(i, 1)
	if e.state.Load() == entryLive {
		return true
	}
	e.unref(i)
	return false
}

// closeReader closes the reader, once; a concurrent second call returns
// when the first has closed it. REQUIRES: e is dropped and no one holds
// it (claimed idle by a trim, or the holders' sum seen zero).
func (e *tableEntry) closeReader() {
	e.closeOnce.Do(func() {
		if e.reader != nil {
			e.reader.Close()
			e.cache.readers.Add(-1)
		}
	})
}

// maybeClose closes the reader of a dropped entry if no one holds it.
func (e *tableEntry) maybeClose() {
	if e.holders.Sum() == 0 {
		e.closeReader()
	}
}

// unref drops a reference taken in slot i. The last one of a dropped entry
// closes the reader; one that leaves a live entry idle while the cache is
// over capacity closes the excess.
func (e *tableEntry) unref(i int) {
	if e.holders.Add(i, -1) < 0 {
		panic("bloomkv/sstable: table released more often than found")
	}
	if e.state.Load() == entryDropped {
		e.maybeClose()
		return
	}
	// Live, or being probed by a trim that may have summed before this
	// release. Reading over after the decrement pairs with trimLocked
	// setting it before probing: either the trim saw e idle or we see over
	// set and trim again (after the running trim, on mu). The sum is read
	// only then: the cache is rarely over.
	if e.cache.over.Load() && e.holders.Sum() == 0 {
		e.cache.trim()
	}
}

// trim closes idle tables beyond capacity.
func (c *TableCache) trim() {
	var buf [4]*tableEntry
	c.mu.Lock()
	victims := c.trimLocked(buf[:0])
	c.mu.Unlock()
	c.closeVictims(victims)
}

// closeVictims closes the tables trimLocked took out, then lets Finds
// waiting for them go on. REQUIRES: c.mu not held.
func (c *TableCache) closeVictims(victims []*tableEntry) {
	if len(victims) == 0 {
		return
	}
	for _, v := range victims {
		// Closed for room, not deleted: its next open finds what this one
		// read in the block cache (open_blocks.go).
		if v.reader != nil && c.opts.Cache != nil {
			c.opts.Cache.putOpenBlocks(v.fileNum, v.reader.keptOpenBlocks())
		}
		v.closeReader() // trimLocked claimed it idle
	}
	c.mu.Lock()
	for _, v := range victims {
		if c.entries[v.fileNum] == v { // Close may have cleared entries
			delete(c.entries, v.fileNum)
		}
	}
	c.mu.Unlock()
	for _, v := range victims {
		close(v.gone)
	}
}

// Evict forgets table fileNum, which is being deleted, and drops its
// blocks from the block cache. Holders keep their Reader, and its
// descriptor, until they release it; it no longer counts toward capacity.
// A later Find of fileNum would open the file anew.
func (c *TableCache) Evict(fileNum uint64) {
	c.mu.Lock()
	e := c.entries[fileNum]
	if e != nil && e.gone != nil {
		e = nil // being closed already
	}
	if e != nil {
		c.removeLocked(e)
	}
	delete(c.opened, fileNum)
	c.mu.Unlock()
	if e != nil {
		e.maybeClose()
	}
	if c.opts.Cache != nil {
		c.opts.Cache.EvictFile(fileNum)
	}
}

// OpenCounts returns the tables opened since NewTableCache, how many of
// those were re-opens (of a table the cache had closed to stay within its
// capacity), and the bytes the opens read (Reader.OpenBytes).
func (c *TableCache) OpenCounts() (opens, reopens, bytes uint64) {
	return c.opens.Load(), c.reopens.Load(), c.openBytes.Load()
}

// IsOpen reports whether table fileNum is open in the cache now: its
// index and filter are in memory.
func (c *TableCache) IsOpen(fileNum uint64) bool { return c.openReader(fileNum) != nil }

// FilterMemory returns the filter bytes table fileNum's Reader holds in
// memory (Reader.FilterMemory), or 0 when the table is not open.
func (c *TableCache) FilterMemory(fileNum uint64) int {
	if r := c.openReader(fileNum); r != nil {
		return r.FilterMemory()
	}
	return 0
}

// RangeFilterMemory returns the range-filter bytes table fileNum's Reader
// holds in memory (Reader.RangeFilterMemory), or 0 when the table is not
// open or has no range filter.
func (c *TableCache) RangeFilterMemory(fileNum uint64) int {
	if r := c.openReader(fileNum); r != nil {
		return r.RangeFilterMemory()
	}
	return 0
}

// IndexMemory returns the index bytes table fileNum's Reader holds in
// memory (Reader.IndexMemory), or 0 when the table is not open.
func (c *TableCache) IndexMemory(fileNum uint64) int {
	if r := c.openReader(fileNum); r != nil {
		return r.IndexMemory()
	}
	return 0
}

// openReader returns table fileNum's Reader if the cache holds it open
// now (loaded without error, not being closed), else nil. It takes no
// reference: the caller may only read what stays valid after a close.
func (c *TableCache) openReader(fileNum uint64) *Reader {
	c.mu.Lock()
	e := c.entries[fileNum]
	closing := e != nil && e.gone != nil
	c.mu.Unlock()
	if e == nil || closing {
		return nil
	}
	select {
	case <-e.loaded:
		if e.err == nil {
			return e.reader
		}
	default:
	}
	return nil
}

// Len returns the number of table Readers open: those the cache holds and
// those evicted (or left by Close) but still held, not yet released. It
// equals the descriptors the cache's tables hold, but for tables being
// opened at that moment.
func (c *TableCache) Len() int {
	return int(c.readers.Load())
}

// Close drops every cached table; tables still held close when released.
// Later Finds fail with ErrTableCacheClosed.
func (c *TableCache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrTableCacheClosed
	}
	c.closed = true
	var all []*tableEntry
	for _, e := range c.entries {
		if e.gone == nil { // those being closed are their trimmer's
			all = append(all, e)
			c.removeLocked(e)
		}
	}
	clear(c.entries)
	c.open.clearLocked()
	c.mu.Unlock()
	for _, e := range all {
		e.maybeClose()
	}
	return nil
}

// trimLocked takes idle entries out of the LRU list, least recently used
// first, until at most capacity remain or none is idle, marks them gone
// (they stay in entries, so that Finds wait for their close), appends them
// to victims for closeVictims, and sets over. Entries in use that it passes
// move to the front, so that repeated trims while many tables are pinned do
// not walk the same ones again. REQUIRES: c.mu.
func (c *TableCache) trimLocked(victims []*tableEntry) []*tableEntry {
	if c.lru.Len() <= c.capacity {
		c.over.Store(false)
		return victims
	}
	// Set over before reading any refs: a release racing with the scan
	// either drops its reference before we read it (and we see the entry
	// idle) or reads over afterwards and trims again.
	c.over.Store(true)
	// Each entry gets at most two looks: a recently used one moves to the
	// front with its mark cleared, and is taken on the second look if still
	// idle and unmarked.
	for n := 2 * c.lru.Len(); n > 0 && c.lru.Len() > c.capacity; n-- {
		v := c.lru.Back().Value
		if v.recent.Swap(false) {
			c.lru.MoveToFront(&v.node)
			continue
		}
		if v.claimIdle() {
			c.lru.Remove(&v.node)
			c.open.deleteLocked(v)
			v.gone = make(chan struct{})
			victims = append(victims, v)
		} else {
			c.lru.MoveToFront(&v.node)
		}
	}
	c.over.Store(c.lru.Len() > c.capacity)
	return victims
}

// claimIdle drops e if no one holds it: no Find can take it afterwards.
// Otherwise e stays live. REQUIRES: c.mu, e live.
func (e *tableEntry) claimIdle() bool {
	e.state.Store(entryProbing)
	if e.holders.Sum() == 0 {
		e.state.Store(entryDropped)
		return true
	}
	e.state.Store(entryLive)
	return false
}

// removeLocked takes e, which is in the LRU list, out of the cache: it is
// dropped, and closes with its last holder's release (or the caller's
// maybeClose if it has none). REQUIRES: c.mu.
func (c *TableCache) removeLocked(e *tableEntry) {
	e.state.Store(entryDropped)
	delete(c.entries, e.fileNum)
	c.open.deleteLocked(e)
	c.lru.Remove(&e.node)
	c.over.Store(c.lru.Len() > c.capacity)
}
