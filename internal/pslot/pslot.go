package pslot

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// MaxN bounds the number of slots: every sharded counter costs N cache
// lines, and beyond a few dozen cores sharing a slot between two Ps costs
// less than the memory.
const MaxN = 32

// N is the number of slots (see the package invariants).
var N = slotsFor(runtime.GOMAXPROCS(0))

// slotsFor returns the smallest power of two >= procs, within [1, MaxN].
func slotsFor(procs int) int {
	n := 1
	for n < procs && n < MaxN {
		n *= 2
	}
	return n
}

type token struct{ index int }

var (
	nextToken atomic.Uint64
	tokens    = sync.Pool{New: func() any {
		return &token{index: int(nextToken.Add(1)-1) & (N - 1)}
	}}
)

// Index returns the calling P's slot. It allocates nothing once each P
// has its token.
func Index() int {
	t := tokens.Get().(*token)
	i := t.index
	tokens.Put(t)
	return i
}

// cacheLine is the size padding assumes: 64 bytes on amd64 and most arm64
// cores; 128 would cover adjacent-line prefetching too, at twice the memory.
const cacheLine = 64

// slot is one padded counter.
type slot struct {
	n atomic.Int64
	_ [cacheLine - 8]byte
}

// Counter is an int64 split into N slots. The zero Counter is not usable;
// call Init (or use NewCounter). Safe for concurrent use.
type Counter struct {
	slots []slot // len N; constant after Init
}

// NewCounter returns a zeroed counter.
func NewCounter() *Counter {
	c := new(Counter)
	c.Init()
	return c
}

// Init allocates the slots of a zero Counter.
func (c *Counter) Init() {
	// One spare slot in front keeps slot 0 off the line of whatever the
	// allocator put before the array.
	s := make([]slot, N+1)
	c.slots = s[1:]
}

// Add adds d to slot i (an Index() the caller got, kept to undo the add
// in the same slot) and returns the slot's new value: a reference count
// whose holders undo their adds in their own slots never sees a negative
// one.
func (c *Counter) Add(i int, d int64) int64 { return c.slots[i&(N-1)].n.Add(d) }

// Sum returns the total over all slots. It reads them one after another,
// not atomically together: a Sum concurrent with Adds may see some and
// not others.
func (c *Counter) Sum() int64 {
	var t int64
	for i := range c.slots {
		t += c.slots[i].n.Load()
	}
	return t
}
