package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
)

// cuckooChain is a CF.* value: one or more cuckoo filters, the oldest
// first. filter.Cuckoo has a fixed capacity; RedisBloom grows a full
// cuckoo filter by adding a sub-filter, and so does this: when an add does
// not fit in the newest filter, a new one of capacity × expansion^i (i its
// position) is added and the item goes there. Lookups ask every filter;
// deletes remove from the newest filter that holds the item. expansion 0
// never grows (the filter is full when its one filter is).
//
// Stored form (after the kind byte 'C'):
//
//	uvarint capacity   of the first filter, as reserved
//	uvarint expansion
//	uvarint deleted    successful deletes so far (CF.INFO)
//	uvarint n          filters, 1 to maxCuckooFilters
//	n times: uvarint length, then filter.Cuckoo's encoding
type cuckooChain struct {
	capacity  uint64 // constant after construction
	expansion uint64 // constant after construction

	// mu guards fs and deleted: the apply goroutine changes them while
	// readers (CF.EXISTS, CF.INFO) read them. The filters themselves are
	// safe for concurrent use.
	mu      sync.RWMutex
	fs      []*filter.Cuckoo
	deleted uint64
}

// maxCuckooFilters bounds a chain, so a lookup asks at most that many
// filters (RedisBloom's own limit is similar in spirit).
const maxCuckooFilters = 32

// capacityAt is the capacity of the i-th filter (0-based), or 0 if it
// would pass MaxCapacity.
func (c *cuckooChain) capacityAt(i int) uint64 {
	n := c.capacity
	for range i {
		if c.expansion != 0 && n > MaxCapacity/c.expansion {
			return 0
		}
		n *= c.expansion
	}
	return n
}

func (c *cuckooChain) filters() []*filter.Cuckoo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.fs
}

func (c *cuckooChain) mayContainHash(h uint64) bool {
	for _, f := range c.filters() {
		if f.MayContainHash(h) {
			return true
		}
	}
	return false
}

// MayContain reports whether item may be in any of the filters.
func (c *cuckooChain) MayContain(item []byte) bool { return c.mayContainHash(filter.Hash(item)) }

// Count is the number of fingerprints held (adds less deletes).
func (c *cuckooChain) Count() int {
	n := 0
	for _, f := range c.filters() {
		n += f.Count()
	}
	return n
}

// SizeBytes is the bytes of the filters' tables.
func (c *cuckooChain) SizeBytes() int {
	n := 0
	for _, f := range c.filters() {
		n += f.SizeBytes()
	}
	return n
}

// remove deletes one copy of item from the newest filter holding it.
func (c *cuckooChain) remove(item []byte) bool {
	h := filter.Hash(item)
	fs := c.filters()
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].RemoveHash(h) == nil {
			c.mu.Lock()
			c.deleted++
			c.mu.Unlock()
			return true
		}
	}
	return false
}

// Deleted is the number of successful deletes.
func (c *cuckooChain) Deleted() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.deleted
}

// add adds item (with nx, only if no filter may hold it), growing the
// chain when the newest filter is full. drew reports that an add ran a
// whole eviction chain and failed, drawing from the filter's generator
// (see tx.cfAdd). The outcome depends on the chain's state alone.
func (f *FSM) cuckooAdd(c *cuckooChain, item []byte, nx bool) (added, drew bool, err error) {
	h := filter.Hash(item)
	if nx && c.mayContainHash(h) {
		return false, false, nil
	}
	fs := c.filters()
	err = fs[len(fs)-1].AddHash(h)
	if err == nil {
		return true, false, nil
	}
	if !errors.Is(err, filter.ErrFull) {
		return false, true, err
	}
	if c.expansion == 0 || len(fs) >= maxCuckooFilters {
		return false, true, ErrCuckooFull
	}
	capacity := c.capacityAt(len(fs))
	if capacity == 0 || float64(c.SizeBytes())+cuckooBytes(capacity) > float64(f.opts.MaxFilterBytes) {
		return false, true, errorf("Filter is full: growing it would pass this server's limit of %d bytes", f.opts.MaxFilterBytes)
	}
	next, err := filter.NewCuckoo(int(capacity), CuckooErrorRate)
	if err != nil {
		return false, true, errorf("%v", err)
	}
	if err := next.AddHash(h); err != nil {
		return false, true, ErrCuckooFull
	}
	c.mu.Lock()
	c.fs = append(c.fs, next)
	c.mu.Unlock()
	return true, true, nil
}

func (c *cuckooChain) encode() []byte {
	fs := c.filters()
	out := binary.AppendUvarint(nil, c.capacity)
	out = binary.AppendUvarint(out, c.expansion)
	out = binary.AppendUvarint(out, c.Deleted())
	out = binary.AppendUvarint(out, uint64(len(fs)))
	for _, f := range fs {
		enc, _ := f.MarshalBinary()
		out = binary.AppendUvarint(out, uint64(len(enc)))
		out = append(out, enc...)
	}
	return out
}

// decodeCuckooChain decodes a chain's stored form; key names it in errors.
func decodeCuckooChain(key, body []byte) (*cuckooChain, error) {
	bad := func(what string) error {
		return fmt.Errorf("%w: bloomkv/fsm: cuckoo filter %q: %s", bloomkv.ErrCorruption, key, what)
	}
	var fields [4]uint64
	for i := range fields {
		v, n := binary.Uvarint(body)
		if n <= 0 {
			return nil, bad("bad header")
		}
		fields[i], body = v, body[n:]
	}
	c := &cuckooChain{capacity: fields[0], expansion: fields[1], deleted: fields[2]}
	if c.capacity == 0 || c.capacity > MaxCapacity || fields[3] == 0 || fields[3] > maxCuckooFilters {
		return nil, bad(fmt.Sprintf("capacity %d, %d filters", c.capacity, fields[3]))
	}
	for range fields[3] {
		l, n := binary.Uvarint(body)
		if n <= 0 || l > uint64(len(body)-n) {
			return nil, bad("filter length past the end")
		}
		cf := new(filter.Cuckoo)
		if err := cf.UnmarshalBinary(body[n : n+int(l)]); err != nil {
			return nil, fmt.Errorf("bloomkv/fsm: cuckoo filter %q: %w", key, err)
		}
		c.fs = append(c.fs, cf)
		body = body[n+int(l):]
	}
	if len(body) != 0 {
		return nil, bad("trailing bytes")
	}
	return c, nil
}

// newCuckoo makes a CF.* value, checking the parameters as CF.RESERVE does.
func (f *FSM) newCuckoo(capacity, expansion uint64) (*cuckooChain, *Error) {
	if capacity == 0 || capacity > MaxCapacity {
		return nil, errorf("(capacity should be larger than 0)")
	}
	if expansion > MaxCuckooExpansion {
		return nil, errorf("expansion must be between 0 and %d", MaxCuckooExpansion)
	}
	if b := cuckooBytes(capacity); b > float64(f.opts.MaxFilterBytes) {
		return nil, errorf("a cuckoo filter of capacity %d needs about %.0f bytes, above this server's limit of %d", capacity, b, f.opts.MaxFilterBytes)
	}
	cf, err := filter.NewCuckoo(int(capacity), CuckooErrorRate)
	if err != nil {
		return nil, errorf("%v", err)
	}
	return &cuckooChain{capacity: capacity, expansion: expansion, fs: []*filter.Cuckoo{cf}}, nil
}
