package sstable

import (
	"os"
	"sync/atomic"
	"testing"
)

func TestMain(m *testing.M) {
	// Every test of this package poisons recycled block buffers, so that
	// any read of a block after its last release returns garbage instead
	// of passing unnoticed.
	recycleHook = countAndPoison
	os.Exit(m.Run())
}

// recycledBuffers counts the buffers returned to the pool.
var recycledBuffers atomic.Int64

func countAndPoison(buf []byte) {
	recycledBuffers.Add(1)
	poison(buf)
}
