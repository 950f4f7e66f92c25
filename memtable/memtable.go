package memtable

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/rangedel"
)

// btreeDegree sets node fan-out: nodes hold up to 2*degree-1 items of 40
// bytes, about 2.5 KiB. Wider nodes mean fewer levels to miss the cache on
// but longer binary searches and costlier copy-on-write copies after a
// Clone; 16, 32 and 64 measured within noise of each other on BenchmarkAdd
// and BenchmarkGet, so this is the middle.
const btreeDegree = 32

// EntryOverhead is the per-entry cost that ApproximateSize adds to the key,
// trailer and value bytes: the 40-byte item in its B-tree node, the node's
// slack (nodes run between half and fully occupied), and allocator rounding
// of the entry's buffer. It is an estimate for the flush trigger, not an
// exact account.
const EntryOverhead = 64

// Memtable is a sorted in-memory table of internal keys. See the package
// documentation for the concurrency contract.
type Memtable struct {
	// mu guards the tree: Add holds it exclusively, Get shares it, and
	// NewIter holds it only long enough to take (or reuse) a clone.
	mu struct {
		sync.RWMutex
		tree *btree.BTreeG[entry]
		// snapshot is a clone of tree taken since the last Add, shared by
		// every iterator created before the next Add (nil when stale). An
		// immutable memtable thus clones once, not once per iterator, and
		// readers of a quiet table never take the exclusive lock.
		snapshot *btree.BTreeG[entry]
		// codec made the prefixes of tree's entries (and of snapshot's:
		// a new codec comes with a new tree and clears snapshot). nil is
		// the empty codec; Add sets it once (tune), and only Add writes
		// it, so Add reads it without the lock.
		codec *keyCodec
	}
	// tuned says Add has chosen the codec (tune); Add's alone.
	tuned bool
	// size and count mirror the tree's totals so that the flush trigger
	// and Len can read them without the lock.
	size  atomic.Int64
	count atomic.Int64

	// slab holds the bytes of entries (slab.go); Add's alone.
	slab slab

	// filter, when set, holds every user key added (and its prefixOf, when
	// set), added before the entry enters the tree: a key it says is absent
	// is not in the tree, so Get and prefix seeks skip the search and its
	// lock. Constant after construction.
	filter   *filter.Bloom
	prefixOf func([]byte) []byte

	// Range tombstones live beside the tree, not in it: rangeDels holds
	// them as added (guarded by rangeMu, which Add never takes), rangeAdded
	// their count, and fragmented the fragmented list of the first n of
	// them, rebuilt by the first read that finds n < rangeAdded. fragmented
	// is nil while the memtable holds no tombstone, so reads of a memtable
	// without any pay one atomic load.
	//
	// The list and the count it covers live in one pointer, so that a
	// reader judges a list by the list itself: with a separate "dirty" flag
	// a reader could load an old list, lose the race to another reader's
	// rebuild (which clears the flag), then see the flag clear and return
	// the old list without a tombstone added before it was called.
	rangeMu    sync.Mutex
	rangeDels  []rangedel.Tombstone
	rangeAdded atomic.Int64
	fragmented atomic.Pointer[fragmentedRangeDels]
}

// testHookRangeDelsLoaded, set by tests only, runs in RangeDels between
// loading the list and judging it, where another reader's rebuild is the
// race that matters.
var testHookRangeDelsLoaded func(*Memtable)

// fragmentedRangeDels is an immutable fragmented list of a memtable's first
// n range tombstones.
type fragmentedRangeDels struct {
	list *rangedel.List
	n    int64
}

// New returns an empty memtable.
func New() *Memtable {
	m := &Memtable{}
	m.mu.tree = btree.NewG(btreeDegree, lessEntries)
	return m
}

// memtableFilterProbes is the probe count of memtable filters: they are
// sized by bytes, not by keys, so the optimum is unknown; 6 suits the 10-20
// bits per entry a ratio of a few percent gives typical entries.
const memtableFilterProbes = 6

// NewWithFilter returns an empty memtable with a filter of filterBytes
// bytes over its user keys and, when prefixOf is set, their prefixes (the
// database's FilterKey), so that absent keys and prefixes skip the tree.
func NewWithFilter(filterBytes int, prefixOf func([]byte) []byte) *Memtable {
	m := New()
	if filterBytes > 0 {
		f, err := filter.NewBloomWithShape(uint64(filterBytes)*8, memtableFilterProbes)
		if err != nil {
			panic("bloomkv/memtable: " + err.Error()) // the shape is ours and valid
		}
		m.filter, m.prefixOf = f, prefixOf
	}
	return m
}

// MayContainPrefix reports whether the memtable may hold a key whose
// prefix (prefixOf) is prefix: false only with a filter over prefixes that
// says so.
func (m *Memtable) MayContainPrefix(prefix []byte) bool {
	return m.filter == nil || m.prefixOf == nil || m.filter.MayContain(prefix)
}

// Add inserts one entry, copying ukey and value into a single allocation.
// Calls to Add must be serialized by the caller (one writer at a time) but
// may run concurrently with Get, NewIter and iteration by any number of
// readers. Sequence numbers are unique per database; adding the same
// (ukey, seq, kind) twice replaces the first entry.
//
// Add panics if seq exceeds kv.MaxSeq or kind is not a stored kind: both
// are programming errors upstream, and storing them would corrupt the order.
func (m *Memtable) Add(seq uint64, kind kv.Kind, ukey, value []byte) {
	if seq > kv.MaxSeq {
		panic(fmt.Sprintf("bloomkv/memtable: sequence %d exceeds MaxSeq", seq))
	}
	if kind != kv.KindSet && kind != kv.KindDelete {
		panic(fmt.Sprintf("bloomkv/memtable: cannot store kind %s", kind))
	}
	// Copy outside the lock so readers wait only for the tree insert.
	if !m.tuned && m.mu.tree.Len() >= tuneAt {
		m.tune()
	}
	e := newEntryIn(m.slab.alloc(len(ukey)+kv.TrailerLen+len(value)), seq, kind, ukey, value)
	e.prefix = m.mu.codec.prefix(ukey)
	if m.filter != nil {
		// Before the insert: a reader that finds the entry in the tree
		// must find its key in the filter too.
		m.filter.Add(ukey)
		if m.prefixOf != nil {
			m.filter.Add(m.prefixOf(ukey))
		}
	}

	m.mu.Lock()
	old, replaced := m.mu.tree.ReplaceOrInsert(e)
	m.mu.snapshot = nil
	m.mu.Unlock()

	delta := int64(e.size() + EntryOverhead)
	if replaced {
		delta -= int64(old.size() + EntryOverhead)
	} else {
		m.count.Add(1)
	}
	m.size.Add(delta)
}

// tuneAt is the number of entries at which Add chooses the tree's codec
// (keyCodec): enough to see which prefix most keys share, few enough that
// rebuilding the tree costs little (some 0.2 ms, once per memtable).
const tuneAt = 1024

// tune chooses the codec from the entries so far and, when it is not the
// empty codec, rebuilds the tree with it. Add calls it once.
func (m *Memtable) tune() {
	m.tuned = true
	m.mu.RLock()
	es := make([]entry, 0, m.mu.tree.Len())
	m.mu.tree.Ascend(func(e entry) bool {
		es = append(es, e)
		return true
	})
	m.mu.RUnlock()
	c := tuneCodec(es)
	if len(c.common) == 0 {
		return
	}
	t := btree.NewG(btreeDegree, lessEntries)
	for _, e := range es {
		e.prefix = c.prefix(e.ukey)
		t.ReplaceOrInsert(e)
	}
	m.mu.Lock()
	m.mu.tree, m.mu.codec, m.mu.snapshot = t, c, nil
	m.mu.Unlock()
}

// AddRangeDel adds the range tombstone [start, end)#seq (start < end),
// copying the keys. Like Add, calls are serialized by the caller and may
// run concurrently with reads.
func (m *Memtable) AddRangeDel(seq uint64, start, end []byte) {
	if seq > kv.MaxSeq {
		panic(fmt.Sprintf("bloomkv/memtable: sequence %d exceeds MaxSeq", seq))
	}
	buf := make([]byte, len(start)+len(end))
	copy(buf, start)
	copy(buf[len(start):], end)
	t := rangedel.Tombstone{Start: buf[:len(start):len(start)], End: buf[len(start):], Seq: seq}
	m.rangeMu.Lock()
	m.rangeDels = append(m.rangeDels, t)
	// Count before publishing: a reader that loads the list below and then
	// the count sees a count of at least the list's n.
	m.rangeAdded.Store(int64(len(m.rangeDels)))
	// Publish a list at once (rebuilt lazily after) so that a reader that
	// sees this tombstone's sequence as visible finds a non-nil list.
	if m.fragmented.Load() == nil {
		m.fragmented.Store(&fragmentedRangeDels{list: rangedel.Fragment(m.rangeDels), n: int64(len(m.rangeDels))})
	}
	m.rangeMu.Unlock()
	m.count.Add(1)
	m.size.Add(int64(len(buf) + kv.TrailerLen + EntryOverhead))
}

// RangeDels returns the memtable's range tombstones, fragmented, or nil
// when it holds none. The list is immutable: later AddRangeDels make a new
// one.
//
// The list holds every tombstone whose AddRangeDel returned before the call
// began: a list is returned without the lock only when the count of
// tombstones, loaded after the list, equals the count the list covers, and
// the count only grows.
func (m *Memtable) RangeDels() *rangedel.List {
	f := m.fragmented.Load()
	if f == nil {
		return nil
	}
	if testHookRangeDelsLoaded != nil {
		testHookRangeDelsLoaded(m)
	}
	if f.n == m.rangeAdded.Load() {
		return f.list
	}
	m.rangeMu.Lock()
	defer m.rangeMu.Unlock()
	f = m.fragmented.Load()
	if n := int64(len(m.rangeDels)); f.n != n {
		f = &fragmentedRangeDels{list: rangedel.Fragment(m.rangeDels), n: n}
		m.fragmented.Store(f)
	}
	return f.list
}

// Get returns the newest entry for ukey with sequence <= seq. found reports
// whether such an entry exists, whatever its kind: a tombstone is found with
// kind kv.KindDelete and an empty value. The value slice is owned by the
// memtable and immutable: callers copy it before returning it to users.
func (m *Memtable) Get(ukey []byte, seq uint64) (value []byte, kind kv.Kind, found bool) {
	value, kind, _, found = m.GetSeq(ukey, seq)
	return value, kind, found
}

// GetSeq is Get that also returns the sequence of the entry found. It
// looks at point entries only: the caller consults RangeDels.
func (m *Memtable) GetSeq(ukey []byte, seq uint64) (value []byte, kind kv.Kind, vseq uint64, found bool) {
	if seq > kv.MaxSeq {
		seq = kv.MaxSeq
	}
	if m.filter != nil && !m.filter.MayContain(ukey) {
		return nil, 0, 0, false // no lock, no search
	}
	// The pivot sorts before every version of ukey with sequence <= seq
	// and after every newer one, so the first entry at or after it is the
	// answer if its user key matches.
	var hit entry
	var ok bool
	m.mu.RLock()
	p := m.mu.codec.pivot(ukey, kv.MakeTrailer(seq, kv.KindSeek))
	m.mu.tree.AscendGreaterOrEqual(p, func(e entry) bool {
		hit, ok = e, true
		return false
	})
	m.mu.RUnlock()
	if !ok || !bytes.Equal(hit.ukey, ukey) {
		return nil, 0, 0, false
	}
	return hit.value(), hit.kind(), hit.trailer >> 8, true
}

// ApproximateSize returns the bytes of keys, trailers and values held plus
// EntryOverhead per entry; the DB flushes when it passes MemtableSize.
func (m *Memtable) ApproximateSize() int64 { return m.size.Load() }

// Len returns the number of entries (every version and tombstone counts).
func (m *Memtable) Len() int { return int(m.count.Load()) }

// Empty reports whether the memtable holds no entries.
func (m *Memtable) Empty() bool { return m.count.Load() == 0 }

// NewIter returns an iterator over the entries present now, in
// kv.CompareInternal order. Later Adds are not seen by it, and it holds no
// lock while it moves. The iterator is not safe for concurrent use; Close it
// to release its view of the tree.
func (m *Memtable) NewIter() kv.Iterator {
	tree, codec := m.snapshotTree()
	it := newIterator(tree)
	it.codec = codec
	it.mem = m
	return it
}

// snapshotTree returns a clone of the tree that nobody will ever write, and
// the codec of its entries.
func (m *Memtable) snapshotTree() (*btree.BTreeG[entry], *keyCodec) {
	m.mu.RLock()
	snap, codec := m.mu.snapshot, m.mu.codec
	m.mu.RUnlock()
	if snap != nil {
		return snap, codec
	}
	// Clone writes the tree's copy-on-write context, so it needs the
	// exclusive lock.
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.snapshot == nil {
		m.mu.snapshot = m.mu.tree.Clone()
	}
	return m.mu.snapshot, m.mu.codec
}
