package fsm

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bloomkv/bloomkv"
	"github.com/bloomkv/bloomkv/filter"
)

// Kind is the type of the value under a user key: its value's first byte.
// The values are part of the state format and never change.
type Kind byte

const (
	KindNone   Kind = 0   // no such key
	KindString Kind = 's' // a byte string
	KindBloom  Kind = 'B' // a (scalable) bloom filter: BF.*
	KindCuckoo Kind = 'C' // a cuckoo filter: CF.*
)

// TypeName is the name Redis's TYPE command gives a kind (RedisBloom's
// module type names for the filters).
func (k Kind) TypeName() string {
	switch k {
	case KindString:
		return "string"
	case KindBloom:
		return "MBbloom--"
	case KindCuckoo:
		return "MBbloomCF"
	}
	return "none"
}

// Limits of what the state machine stores.
const (
	// MaxKeySize is the longest user key: bloomkv's limit less the one
	// byte of the key-space prefix.
	MaxKeySize = bloomkv.MaxKeySize - 1
	// MaxValueSize is the longest string value: bloomkv's limit less the
	// kind byte.
	MaxValueSize = bloomkv.MaxValueSize - 1
	// MaxCapacity bounds a filter's capacity argument, before the size
	// check (Options.MaxFilterBytes).
	MaxCapacity = 1 << 40
	// CuckooErrorRate is the false-positive rate cuckoo filters are sized
	// for (CF.RESERVE takes no rate): 10-bit fingerprints.
	CuckooErrorRate = 0.01
	// MaxCuckooExpansion bounds CF.RESERVE's EXPANSION (RedisBloom's limit).
	MaxCuckooExpansion = 32768
)

// Error is a command's failure. It is decided by the state machine alone,
// so every replica reaches the same one, and the command changed nothing.
// Messages are in the form Redis clients expect ("ERR ...", "WRONGTYPE ...").
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// The errors of commands, in RedisBloom's words where it has them, with
// or without the "ERR " code exactly as RedisBloom sends them.
var (
	ErrWrongType      = &Error{"WRONGTYPE Operation against a key holding the wrong kind of value"}
	ErrItemExists     = &Error{"ERR item exists"}
	ErrNotInteger     = &Error{"ERR value is not an integer or out of range"} // Incr on a string that is not one
	ErrNotFound       = &Error{"ERR not found"}
	ErrNonScalingFull = &Error{"ERR non scaling filter is full"}
	ErrCuckooFull     = &Error{"Filter is full"}
	// ErrCFDelNotFound is CF.DEL's answer for a missing filter (the other
	// commands answer ErrNotFound).
	ErrCFDelNotFound = &Error{"Not found"}
)

func errorf(format string, args ...any) *Error {
	return &Error{"ERR " + fmt.Sprintf(format, args...)}
}

// Result is what a command entry returns (the raft ApplyFuture's Response).
type Result struct {
	Err      error     // the command failed and changed nothing (an *Error)
	N        int64     // Put: 1 if set; Delete, Batch, DeleteRange, GetDel: keys deleted; CFDel: 1 if removed
	Ints     []int64   // BFAdd, CFAdd: per item, 1 added, 0 not
	ItemErrs []error   // BFAdd, CFAdd: per item, nil or why it was not added
	Old      []byte    // Put with PutGet, GetDel: the previous value
	OldFound bool      // Put with PutGet, GetDel: there was a previous value
	Multi    []*Result // Multi: the result of each of its commands, in order
}

// bloomFilter is a BF.* value: a scalable bloom filter and its expansion,
// 0 for NONSCALING (one layer, refusing keys past its capacity).
type bloomFilter struct {
	expansion uint64
	sf        *filter.Scalable
}

// value is a decoded user value.
type value struct {
	kind Kind
	str  []byte
	bf   *bloomFilter
	cf   *cuckooChain
	enc  []byte // cf's encoding when already made
}

func (v *value) size() int {
	switch v.kind {
	case KindBloom:
		return v.bf.sf.SizeBytes()
	case KindCuckoo:
		return v.cf.SizeBytes()
	}
	return len(v.str)
}

// encode returns v's stored form (doc.go): the kind byte, then
//
//	string: the bytes
//	bloom:  uvarint expansion (0 = NONSCALING), then filter.Scalable's encoding
//	cuckoo: the chain of filter.Cuckoo encodings (cuckoo.go)
func (v *value) encode() []byte {
	switch v.kind {
	case KindString:
		return append([]byte{byte(KindString)}, v.str...)
	case KindBloom:
		enc, _ := v.bf.sf.MarshalBinary()
		out := binary.AppendUvarint(make([]byte, 0, len(enc)+11), v.bf.expansion)
		return append(append([]byte{byte(KindBloom)}, out...), enc...)
	case KindCuckoo:
		enc := v.enc
		if enc == nil {
			enc = v.cf.encode()
		}
		return append([]byte{byte(KindCuckoo)}, enc...)
	}
	panic("bloomkv/fsm: encoding a deleted value")
}

// decodeValue decodes a stored user value; key is for the error.
func decodeValue(key, raw []byte) (*value, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: bloomkv/fsm: empty value under %q", bloomkv.ErrCorruption, key)
	}
	v := &value{kind: Kind(raw[0])}
	body := raw[1:]
	switch v.kind {
	case KindString:
		v.str = body
	case KindBloom:
		exp, n := binary.Uvarint(body)
		if n <= 0 {
			return nil, fmt.Errorf("%w: bloomkv/fsm: bad expansion in the bloom filter %q", bloomkv.ErrCorruption, key)
		}
		sf := new(filter.Scalable)
		if err := sf.UnmarshalBinary(body[n:]); err != nil {
			return nil, fmt.Errorf("bloomkv/fsm: bloom filter %q: %w", key, err)
		}
		v.bf = &bloomFilter{expansion: exp, sf: sf}
	case KindCuckoo:
		cf, err := decodeCuckooChain(key, body)
		if err != nil {
			return nil, err
		}
		v.cf = cf
	default:
		return nil, fmt.Errorf("%w: bloomkv/fsm: unknown kind %d under %q", bloomkv.ErrCorruption, raw[0], key)
	}
	return v, nil
}

// bloomBytes estimates the bytes of a bloom layer for capacity keys at
// rate: m = -n ln(p) / (ln 2)^2 bits.
func bloomBytes(capacity uint64, rate float64) float64 {
	return -float64(capacity) * math.Log(rate) / (math.Ln2 * math.Ln2) / 8
}

// cuckooBytes estimates a cuckoo filter's bytes for capacity keys at
// CuckooErrorRate: slots for 90% load, fingerprints of log2(8/rate) bits.
func cuckooBytes(capacity uint64) float64 {
	return float64(capacity) / 0.9 * math.Ceil(math.Log2(8/CuckooErrorRate)) / 8
}

func checkKey(key []byte) *Error {
	if len(key) == 0 {
		return errorf("empty key")
	}
	if len(key) > MaxKeySize {
		return errorf("key of %d bytes is longer than %d", len(key), MaxKeySize)
	}
	return nil
}

// newBloom makes a BF.* value, checking the parameters as BF.RESERVE does.
func (f *FSM) newBloom(rate float64, capacity, expansion uint64) (*bloomFilter, *Error) {
	if !(rate > 0 && rate < 1) {
		return nil, errorf("(0 < error rate range < 1)")
	}
	if capacity == 0 || capacity > MaxCapacity {
		return nil, errorf("(capacity should be larger than 0)")
	}
	if expansion > 1<<16 {
		return nil, errorf("expansion must be between 1 and 65536")
	}
	if b := bloomBytes(capacity, rate); b > float64(f.opts.MaxFilterBytes) {
		return nil, errorf("a filter of capacity %d at error rate %g needs about %.0f bytes, above this server's limit of %d", capacity, rate, b, f.opts.MaxFilterBytes)
	}
	opts := []filter.ScalableOption{}
	if expansion > 0 {
		opts = append(opts, filter.WithGrowth(float64(expansion)))
	}
	sf, err := filter.NewScalable(int(capacity), rate, opts...)
	if err != nil {
		return nil, errorf("%v", err)
	}
	return &bloomFilter{expansion: expansion, sf: sf}, nil
}

// bloomAdd adds item to bf as RedisBloom's BF.ADD does: 0 if it may be
// present, 1 if added, an error if a NONSCALING filter is full or growing
// would pass the size limit.
//
// Every decision reads exact, stored state only: the bits, and the items
// each layer accepted (Added; filter.Scalable's encoding carries each
// layer's count). Never Count, an estimate that adds the items presumed
// lost to false positives: a filter built item by item and one decoded
// from the database (after a restart, a restore or a cache eviction)
// round that estimate differently, and replicas would disagree (issue 32).
// As in RedisBloom, a layer is full when it has accepted its capacity, so
// a NONSCALING filter of capacity n takes exactly n items.
func (f *FSM) bloomAdd(bf *bloomFilter, item []byte) (int64, error) {
	h := filter.Hash(item)
	if bf.sf.MayContainHash(h) {
		return 0, nil
	}
	// Earlier layers hold exactly their capacity, so this is the newest
	// layer being full: the filter's own rule for adding a layer.
	if bf.sf.Added() >= bf.sf.Capacity() { // this add starts a new layer
		if bf.expansion == 0 {
			return 0, ErrNonScalingFull
		}
		if grown := float64(bf.sf.SizeBytes()) * (1 + 1.2*float64(bf.expansion)); grown > float64(f.opts.MaxFilterBytes) {
			return 0, errorf("filter is full: growing it would pass this server's limit of %d bytes", f.opts.MaxFilterBytes)
		}
	}
	if bf.sf.AddHash(h) {
		return 1, nil
	}
	return 0, nil
}
