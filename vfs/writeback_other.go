//go:build !linux

package vfs

import "os"

// startWriteback has nothing to call outside Linux: the later Sync does all
// the writeback.
func startWriteback(*os.File, int64, int64) error { return nil }
