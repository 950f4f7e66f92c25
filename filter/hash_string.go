package filter

import "github.com/cespare/xxhash/v2"

// HashString returns Hash([]byte(s)) without copying s. Pass it to the
// ...Hash methods (AddHash, MayContainHash) to use string keys, or to hash a
// key once and probe several filters with it.
func HashString(s string) uint64 { return xxhash.Sum64String(s) }
