package fsm

import "sync"

// filterCache keeps decoded values. The FSM has two: one of filters, so
// that a BF.ADD or BF.EXISTS on a large filter does not decode it from the
// database each time, and one of strings, so that a GET of a recently
// written or read key is a map lookup instead of a search of the
// database's memtables and tables (a row cache; issue 29: with GETs of
// 100,000 keys the search was half of the server's CPU time). Cached
// strings are never modified: a write drops the key, a Get that misses
// puts what it read.
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
	busy  bool              // guarded by mu: the string cache is ahead of the database (tx.stringsBefore)
}

// cached is a value and the size counted for it when it was put (filters
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
	if _, ok := c.m[key]; ok || c.epoch != epoch || c.busy {
		return
	}
	c.putLocked(key, v)
	c.evictLocked()
}

func (c *filterCache) putLocked(key string, v *value) {
	if old, ok := c.m[key]; ok {
		c.bytes -= old.size // replaced below: no delete from the map
	}
	size := v.size()
	if v.kind == KindString {
		// A string's bytes are small beside what holding it costs: the
		// key, the map entry and the value's header.
		size += len(key) + 96
	}
	c.m[key] = cached{v, size}
	c.bytes += size
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
