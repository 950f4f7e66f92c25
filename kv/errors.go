package kv

import "errors"

// ErrCorruption marks damaged data: a checksum mismatch, a truncated or
// malformed record or block. Every decoder of bloomkv wraps it, naming the
// file and offset, so callers test with errors.Is(err, ErrCorruption). The
// root package's ErrCorruption is this same value.
var ErrCorruption = errors.New("bloomkv: corruption")
