// Package pslot spreads counters that every read updates over slots, one
// per P (the Go scheduler's processor) where it can, so that readers on
// different cores write different cache lines.
//
// A counter shared by all readers costs little on one core and much on
// several: each atomic add pulls the cache line from the core that wrote
// it last. A Get increments a handful of counters and reference counts;
// shared, they made two readers slower than one. Here each such counter is
// split into N slots on separate cache lines, a reader adds to the slot of
// Index(), and whoever needs the total sums the slots.
//
// # Slots and Ps
//
// Index returns a slot that stays with the calling P: it is the index of a
// token held in a sync.Pool, whose Get and Put take the current P's private
// item without writing anything shared. Tokens are numbered round robin
// modulo N, so the first N Ps get distinct slots. A token the garbage
// collector drops from the pool is replaced by a new one with the next
// number; the slot is only a hint for locality. Correctness never depends
// on which slot a goroutine uses, nor on two goroutines using different
// ones: every slot is updated atomically, and a goroutine that moves to
// another P between taking and dropping a reference must drop it in the
// slot it took it in (callers keep the index).
//
// # Invariants
//
//   - N is a power of two, at least runtime.GOMAXPROCS(0) at start-up (up
//     to MaxN), constant after package initialization.
//   - Index() is in [0, N).
//   - A Counter's slots never share a cache line with each other (nor with
//     anything else allocated beside them).
package pslot
