// Package rangedel forwards to the public package rangedel for the
// packages that still import it by its old path (sstable, whose signatures
// are being reworked separately). New code imports
// github.com/bloomkv/bloomkv/rangedel; delete this package once nothing
// imports it.
package rangedel

import "github.com/bloomkv/bloomkv/rangedel"

type (
	// Tombstone is rangedel.Tombstone.
	Tombstone = rangedel.Tombstone
	// Span is rangedel.Span.
	Span = rangedel.Span
	// List is rangedel.List.
	List = rangedel.List
	// DecodeError is rangedel.DecodeError.
	DecodeError = rangedel.DecodeError
)

// ErrMalformed is rangedel.ErrMalformed.
var ErrMalformed = rangedel.ErrMalformed

// Encode is rangedel.Encode.
func Encode(dst []byte, spans []Span) []byte { return rangedel.Encode(dst, spans) }

// Decode is rangedel.Decode.
func Decode(b []byte, maxKey int) (*List, error) { return rangedel.Decode(b, maxKey) }

// NewList is rangedel.NewList.
func NewList(spans []Span) *List { return rangedel.NewList(spans) }

// Fragment is rangedel.Fragment.
func Fragment(ts []Tombstone) *List { return rangedel.Fragment(ts) }

// Merge is rangedel.Merge.
func Merge(lists ...*List) *List { return rangedel.Merge(lists...) }

// InclusiveEnd is rangedel.InclusiveEnd.
func InclusiveEnd(end []byte) []byte { return rangedel.InclusiveEnd(end) }
