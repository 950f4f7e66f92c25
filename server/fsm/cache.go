package fsm

import "sync"

// filterCache keeps decoded filters, so that a BF.ADD or BF.EXISTS on a
// large filter does not decode it from the database each time.
//
// The apply goroutine mutates cached filters in place (the filter types
// are safe for concurrent use), so a read may see an add whose batch is
// not yet written to the database: it was committed by raft before it was
// applied, so a reader may see it. Readers fill the cache on a miss only
// if no batch committed (epoch unchanged) between their database read and
// their insert, so that a slow reader never puts back a stale filter.
type filterCache struct {
	mu    sync.Mutex
	m     map[string]cached // guarded by mu
	bytes int               // guarded by mu: the sum of the sizes counted
	limit int               // constant after init
	epoch uint64            // guarded by mu: batches committed (and restores)
}

// cached is a filter and the size counted for it when it was put (filters
// grow in place).
type cached struct {
	v    *value
	size int
}

func (c *filterCache) init(limit int) {
	c.m = make(map[string]cached)
	c.limit = limit
}

func (c *filterCache) get(key string) (*value, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key].v, c.epoch
}

// fill inserts v for key, read at epoch, unless something changed since.
func (c *filterCache) fill(key string, v *value, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok || c.epoch != epoch {
		return
	}
	c.putLocked(key, v)
	c.evictLocked()
}

func (c *filterCache) putLocked(key string, v *value) {
	if old, ok := c.m[key]; ok {
		c.bytes -= old.size // replaced below: no delete from the map
	}
	c.m[key] = cached{v, v.size()}
	c.bytes += v.size()
}

func (c *filterCache) deleteLocked(key string) {
	if old, ok := c.m[key]; ok {
		c.bytes -= old.size
		delete(c.m, key)
	}
}

// evictLocked drops arbitrary entries (map order) until within the limit.
func (c *filterCache) evictLocked() {
	for k := range c.m {
		if c.bytes <= c.limit {
			return
		}
		c.deleteLocked(k)
	}
}

// reset drops everything (Restore).
func (c *filterCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = make(map[string]cached)
	c.bytes = 0
	c.epoch++
}

func (c *filterCache) stats() (n, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}

// stringCache keeps string values for Get, so that a GET of a recently
// read or written key, or of a key read and found absent, is a hash table
// lookup instead of a search of the database's
// memtables and tables (a row cache; issue 29: with GETs of 100,000 keys
// the search was half of the server's CPU time). A Get that misses puts
// what it read, under the epoch rule of filterCache; a write drops its
// keys before it is applied and puts its strings after (tx.stringsBefore,
// tx.commit). The table (strTable) holds each key and its
// value in one allocation without pointers, so that a cache of a hundred
// thousand keys costs the garbage collector one pointer per key. Cached
// bytes are never modified.
type stringCache struct {
	mu    sync.Mutex
	t     strTable // guarded by mu
	bytes int      // guarded by mu: the sum of entrySize
	limit int      // constant after init; 0: the cache is off
	epoch uint64   // guarded by mu: batches committed (and restores)
	busy  bool     // guarded by mu: a batch is being applied, its keys dropped (tx.stringsBefore)
}

// entrySize counts a cached string with what holding it costs beside its
// bytes: the slot, its share of the empty slots, and the allocation's
// header.
func entrySize(klen, vlen int) int { return klen + vlen + 64 }

func (c *stringCache) init(limit int) {
	c.t = newStrTable()
	c.limit = limit
}

// get returns key's cached value: hit is cacheString (v is the value),
// cacheAbsent (the database does not hold key) or cacheMiss.
func (c *stringCache) get(key []byte) (v []byte, hit cacheHit, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, absent, ok := c.t.get(key)
	switch {
	case !ok:
		return nil, cacheMiss, c.epoch
	case absent:
		return nil, cacheAbsent, c.epoch
	}
	return v, cacheString, c.epoch
}

type cacheHit uint8

const (
	cacheMiss cacheHit = iota
	cacheString
	cacheAbsent
)

// fill inserts a copy of v for key, or with absent a negative entry,
// read at epoch, unless something changed since or a batch is being
// applied.
func (c *stringCache) fill(key, v []byte, absent bool, epoch uint64) {
	if c.limit == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch || c.busy || c.t.find(key) >= 0 {
		return
	}
	c.t.insert(key, v, absent)
	if absent {
		v = nil
	}
	c.bytes += entrySize(len(key), len(v))
	for c.bytes > c.limit && c.t.len() > 0 {
		c.bytes -= entrySize(c.t.evictOne())
	}
}

// dropLocked removes key if it is cached.
func (c *stringCache) dropLocked(key string) {
	if i := c.t.findString(key); i >= 0 {
		c.bytes -= entrySize(c.t.remove(i))
	}
}

func (c *stringCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = newStrTable()
	c.bytes = 0
	c.epoch++
}

func (c *stringCache) stats() (n, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t.len(), c.bytes
}
