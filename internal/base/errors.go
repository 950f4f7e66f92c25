package base

import (
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
)

// ErrCorruption marks damaged on-disk data (kv.ErrCorruption, the same
// value). Every decoder wraps it, naming the file and offset, so callers test
// with errors.Is(err, ErrCorruption).
var ErrCorruption = kv.ErrCorruption

// CorruptionErrorf returns an error wrapping ErrCorruption. Callers put the
// package, file and offset in the message, for example
// CorruptionErrorf("bloomkv/record: %s at offset %d: checksum mismatch", name, off).
func CorruptionErrorf(format string, args ...any) error {
	return &corruptionError{msg: fmt.Sprintf(format, args...)}
}

type corruptionError struct{ msg string }

func (e *corruptionError) Error() string { return e.msg + ": " + ErrCorruption.Error() }
func (e *corruptionError) Unwrap() error { return ErrCorruption }
