package sstable

import (
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/kv"
)

// location names where in which file a decoder is working, so that every
// corruption error reads "bloomkv/sstable: FILE: KIND at offset N: what".
type location struct {
	file   string
	kind   blockKind
	offset uint64
}

// corruptf returns an error wrapping kv.ErrCorruption that names the file,
// block kind and offset.
func (l location) corruptf(format string, args ...any) error {
	prefix := []any{l.file, l.kind, l.offset}
	return base.CorruptionErrorf("bloomkv/sstable: %s: %s at offset %d: "+format, append(prefix, args...)...)
}

// wrapCorruption re-labels a corruption error from another package (the
// filter decoder) with this location, without repeating the marker text.
func (l location) wrapCorruption(err error) error {
	msg := strings.TrimSuffix(err.Error(), ": "+kv.ErrCorruption.Error())
	return l.corruptf("%s", msg)
}

// formatKey renders an internal key for messages; nil prints as "(none)".
func formatKey(ikey []byte) string {
	if ikey == nil {
		return "(none)"
	}
	return kv.FormatInternalKey(ikey)
}
