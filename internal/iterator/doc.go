// Package iterator composes internal iterators into the views the read path
// and compaction need:
//
//   - NewMerging merges child iterators (memtables, tables, levels) into one
//     stream in base.CompareInternal order, forwards and backwards.
//   - NewVisible turns a merged stream of internal keys into what a user
//     sees at one sequence number: one entry per live user key, inside
//     [lower, upper). It backs the public bloomkv.Iterator.
//   - NewSliceIter is an in-memory InternalIterator, for tests here and in
//     other packages.
//
// # Invariants
//
// Merging iterator: children are given newest source first. The merged order
// is the total order (internal key, child index): if two children ever hold
// the same internal key (they should not, sequence numbers are unique), the
// earlier child's entry comes first going forwards and last going backwards,
// so a walk in one direction is exactly the reverse of a walk in the other.
// While positioned, every child that is not the current one sits on its first
// entry after the current entry (forward) or its last entry before it
// (backward); a direction switch re-establishes this before moving.
//
// Visible iterator: for each user key it shows the newest version whose
// sequence number is <= the read sequence, and hides the key when that
// version is a tombstone. Going forwards the inner iterator rests on the entry
// shown; going backwards it rests on the last entry before the shown key's
// versions, and the shown key and value are copies the Visible owns (walking
// backwards reaches the newest version of a key last, after the inner
// iterator has had to move past it). Either way Key and Value stay valid
// until the next positioning call.
//
// Exhaustion: an iterator that ran off the end (or was positioned past it)
// moves to the last entry on Prev; one that ran off the start moves to the
// first entry on Next. The merging iterator is stricter: once invalid it
// stays invalid until repositioned, as base.InternalIterator allows.
//
// No iterator here is safe for concurrent use.
package iterator
