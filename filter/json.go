package filter

import (
	"encoding"
	"encoding/json"
	"errors"
)

// JSON: each filter marshals to a JSON string holding its binary encoding
// (MarshalBinary) in standard base64, so a filter inside a JSON document
// round-trips exactly and keeps the binary form's checksum. Without these
// methods encoding/json would write {} (the fields are unexported) and
// decode that into a zero filter.

func marshalJSON(f encoding.BinaryMarshaler) ([]byte, error) {
	bin, err := f.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(bin)
}

// unmarshalJSON decodes a JSON string of base64 into f. JSON null leaves f
// unchanged, as encoding/json does for other types; anything else that is
// not such a string wraps ErrCorruption.
func unmarshalJSON(kind filterKind, data []byte, f encoding.BinaryUnmarshaler) error {
	if string(data) == "null" {
		return nil
	}
	var bin []byte
	if err := json.Unmarshal(data, &bin); err != nil {
		return corruptf(kind, 0, "JSON value is not a base64 string of an encoding: %v", err)
	}
	return f.UnmarshalBinary(bin)
}

// MarshalJSON encodes b as a JSON string: its binary encoding in base64. It
// has a value receiver so that a Bloom held by value in a struct marshals
// too.
func (b Bloom) MarshalJSON() ([]byte, error) { return marshalJSON(&b) }

// UnmarshalJSON replaces b with the filter in a JSON string written by
// MarshalJSON; damaged input wraps ErrCorruption and leaves b as it was.
func (b *Bloom) UnmarshalJSON(data []byte) error { return unmarshalJSON(kindBloom, data, b) }

// MarshalJSON encodes c as a JSON string: its binary encoding in base64.
func (c *Counting) MarshalJSON() ([]byte, error) { return marshalJSON(c) }

// UnmarshalJSON replaces c with the filter in a JSON string written by
// MarshalJSON; damaged input wraps ErrCorruption and leaves c as it was.
func (c *Counting) UnmarshalJSON(data []byte) error { return unmarshalJSON(kindCounting, data, c) }

// MarshalJSON encodes c as a JSON string: its binary encoding in base64.
func (c *Cuckoo) MarshalJSON() ([]byte, error) { return marshalJSON(c) }

// UnmarshalJSON replaces c with the filter in a JSON string written by
// MarshalJSON; damaged input wraps ErrCorruption and leaves c as it was.
func (c *Cuckoo) UnmarshalJSON(data []byte) error { return unmarshalJSON(kindCuckoo, data, c) }

// MarshalJSON encodes s as a JSON string: its binary encoding in base64.
func (s *Scalable) MarshalJSON() ([]byte, error) { return marshalJSON(s) }

// UnmarshalJSON replaces s with the filter in a JSON string written by
// MarshalJSON; damaged input wraps ErrCorruption and leaves s as it was.
func (s *Scalable) UnmarshalJSON(data []byte) error { return unmarshalJSON(kindScalable, data, s) }

// ErrZeroFilter is what encoding a zero-value filter returns, and what the
// panic of any other call on one carries: a zero Bloom, Counting, Cuckoo
// or Scalable has no size, so it can hold no key. Answering "maybe" to
// every key (what a zero Bloom once did) or "absent" would both be wrong
// without a word; build filters with their New functions, or decode into
// a zero one.
var ErrZeroFilter = errors.New("bloomkv/filter: zero-value filter: build it with a New function or decode into it")
