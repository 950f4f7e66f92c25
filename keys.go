package bloomkv

import "fmt"

// MaxKeySize and MaxValueSize bound what Put, Delete and Batch accept.
const (
	MaxKeySize   = 64 << 10
	MaxValueSize = 64 << 20
)

// checkKey rejects a key the engine does not store: empty, or longer than
// MaxKeySize.
func checkKey(key []byte) error {
	switch {
	case len(key) == 0:
		return fmt.Errorf("%w: bloomkv: empty key", ErrInvalidArgument)
	case len(key) > MaxKeySize:
		return fmt.Errorf("%w: bloomkv: key of %d bytes exceeds the %d-byte limit", ErrInvalidArgument, len(key), MaxKeySize)
	}
	return nil
}

// checkValue rejects a value longer than MaxValueSize.
func checkValue(value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: bloomkv: value of %d bytes exceeds the %d-byte limit", ErrInvalidArgument, len(value), MaxValueSize)
	}
	return nil
}
