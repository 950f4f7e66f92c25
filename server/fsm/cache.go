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
// read key is a map lookup instead of a search of the database's
// memtables and tables (a row cache; issue 29: with GETs of 100,000 keys
// the search was half of the server's CPU time). A Get that misses puts
// what it read, under the epoch rule of filterCache; a write drops its
// keys (tx.stringsBefore). The map holds byte slices, not values: two
// objects per entry, neither with pointers for the garbage collector to
// follow, which a cache of a hundred thousand keys otherwise made it do at
// every cycle. Cached bytes are never modified.
type stringCache struct {
	mu    sync.Mutex
	m     map[string][]byte // guarded by mu
	bytes int               // guarded by mu: the sum of entrySize
	limit int               // constant after init; 0: the cache is off
	epoch uint64            // guarded by mu: batches committed (and restores)
	busy  bool              // guarded by mu: a batch is being applied, its keys dropped (tx.stringsBefore)
}

// entrySize counts a cached string with what holding it costs beside its
// bytes: the key, the map slot and the slice header.
func entrySize(key string, v []byte) int { return len(key) + len(v) + 64 }

func (c *stringCache) init(limit int) {
	c.m = make(map[string][]byte)
	c.limit = limit
}

func (c *stringCache) get(key string) ([]byte, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok, c.epoch
}

// fill inserts v for key, read at epoch, unless something changed since
// or a batch is being applied.
func (c *stringCache) fill(key string, v []byte, epoch uint64) {
	if c.limit == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok || c.epoch != epoch || c.busy {
		return
	}
	c.m[key] = v
	c.bytes += entrySize(key, v)
	for k, old := range c.m { // evict arbitrary entries (map order)
		if c.bytes <= c.limit {
			break
		}
		c.dropLocked(k, old)
	}
}

func (c *stringCache) dropLocked(key string, v []byte) {
	c.bytes -= entrySize(key, v)
	delete(c.m, key)
}

func (c *stringCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = make(map[string][]byte)
	c.bytes = 0
	c.epoch++
}

func (c *stringCache) stats() (n, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}
