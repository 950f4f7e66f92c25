package sstable

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/vfs"
)

// TableCache keeps up to n tables open, evicting the least recently used.
// A Reader handed out by Find stays usable until its holder releases it,
// even if the cache evicts it meanwhile: readers are reference counted and
// closed when the last reference goes. It is safe for concurrent use.
type TableCache struct {
	fs       vfs.FS        // constant after construction
	dir      string        // constant after construction
	capacity int           // constant after construction
	opts     ReaderOptions // constant after construction

	mu sync.Mutex
	// Guarded by mu:
	entries map[uint64]*tableEntry
	lru     tableEntry // sentinel: lru.next is the most recently used
	closed  bool
}

// tableEntry is one open (or opening) table. The cache holds one reference
// while the entry is in entries; every Find holds one until its release.
type tableEntry struct {
	fileNum uint64
	refs    atomic.Int32
	// loaded is closed once reader and err are set; they never change after.
	loaded  chan struct{}
	reader  *Reader
	err     error
	release func() // bound once to unref, so Find allocates nothing on a hit

	prev, next *tableEntry // LRU links, guarded by TableCache.mu
}

// ErrTableCacheClosed is returned by Find after Close.
var ErrTableCacheClosed = errors.New("bloomkv/sstable: table cache closed")

// NewTableCache returns a cache of at most n open tables (n < 1 is taken as
// 1) in dir, opened through fs with options o.
func NewTableCache(fs vfs.FS, dir string, n int, o ReaderOptions) *TableCache {
	c := &TableCache{fs: fs, dir: dir, capacity: max(n, 1), opts: o, entries: make(map[uint64]*tableEntry)}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// Find returns an open Reader for the table fileNum of the given size and a
// function that releases it; call the function exactly once when done. size
// is used only to open the table (file numbers are never reused, so a
// cached Reader is the same file). A Find that hits the cache allocates
// nothing.
func (c *TableCache) Find(fileNum uint64, size int64) (*Reader, func(), error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, ErrTableCacheClosed
	}
	if e := c.entries[fileNum]; e != nil {
		e.refs.Add(1)
		c.moveToFrontLocked(e)
		c.mu.Unlock()
		<-e.loaded
		if e.err != nil {
			e.unref()
			return nil, nil, e.err
		}
		return e.reader, e.release, nil
	}
	e := &tableEntry{fileNum: fileNum, loaded: make(chan struct{})}
	e.release = e.unref
	e.refs.Store(2) // the cache's and ours
	c.entries[fileNum] = e
	c.pushFrontLocked(e)
	victims := c.trimLocked()
	c.mu.Unlock()
	for _, v := range victims {
		v.unref()
	}

	// Open outside the lock; concurrent Finds of this table wait on loaded.
	e.reader, e.err = c.open(fileNum, size)
	close(e.loaded)
	if e.err != nil {
		// Forget the failure so a later Find retries.
		c.mu.Lock()
		drop := c.entries[fileNum] == e
		if drop {
			c.removeLocked(e)
		}
		c.mu.Unlock()
		if drop {
			e.unref()
		}
		e.unref()
		return nil, nil, e.err
	}
	return e.reader, e.release, nil
}

func (c *TableCache) open(fileNum uint64, size int64) (*Reader, error) {
	name := base.MakeFilename(base.FileTypeTable, fileNum)
	f, err := c.fs.Open(c.fs.PathJoin(c.dir, name))
	if err != nil {
		return nil, fmt.Errorf("bloomkv/sstable: opening table %s: %w", name, err)
	}
	return Open(f, name, fileNum, size, c.opts)
}

// unref drops a reference and closes the reader with the last one.
func (e *tableEntry) unref() {
	switch n := e.refs.Add(-1); {
	case n == 0 && e.reader != nil:
		e.reader.Close()
	case n < 0:
		panic("bloomkv/sstable: table released more often than found")
	}
}

// Evict forgets table fileNum, which is being deleted, and drops its
// blocks from the block cache. Holders keep their Reader until released.
func (c *TableCache) Evict(fileNum uint64) {
	c.mu.Lock()
	e := c.entries[fileNum]
	if e != nil {
		c.removeLocked(e)
	}
	c.mu.Unlock()
	if e != nil {
		e.unref()
	}
	if c.opts.Cache != nil {
		c.opts.Cache.EvictFile(fileNum)
	}
}

// Len returns the number of tables the cache holds open.
func (c *TableCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
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
		all = append(all, e)
		c.removeLocked(e)
	}
	c.mu.Unlock()
	for _, e := range all {
		e.unref()
	}
	return nil
}

// trimLocked unlinks least recently used entries beyond capacity and
// returns them for the caller to unref outside the lock. REQUIRES: c.mu.
func (c *TableCache) trimLocked() []*tableEntry {
	var victims []*tableEntry
	for len(c.entries) > c.capacity {
		v := c.lru.prev
		c.removeLocked(v)
		victims = append(victims, v)
	}
	return victims
}

// removeLocked unlinks e from the map and the LRU list. REQUIRES: c.mu.
func (c *TableCache) removeLocked(e *tableEntry) {
	delete(c.entries, e.fileNum)
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// pushFrontLocked links e as most recently used. REQUIRES: c.mu.
func (c *TableCache) pushFrontLocked(e *tableEntry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

// moveToFrontLocked marks e most recently used. REQUIRES: c.mu.
func (c *TableCache) moveToFrontLocked(e *tableEntry) {
	if c.lru.next != e {
		e.prev.next, e.next.prev = e.next, e.prev
		c.pushFrontLocked(e)
	}
}
