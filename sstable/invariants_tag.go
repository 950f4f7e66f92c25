//go:build invariants

package sstable

// Building with -tags invariants poisons recycled block buffers, so that a
// read of a block after its release shows up as wrong values
// (block_recycle.go).
func init() { recycleHook = poison }
