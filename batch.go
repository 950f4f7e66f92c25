package bloomkv

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/batchrep"
	"github.com/bloomkv/bloomkv/memtable"
)

// Batches: building them (Put, Delete, DeleteRange), the limits on keys
// and values, and applying their encoding (internal/batchrep) to
// memtables.

// Batch is a set of Puts, Deletes and DeleteRanges applied atomically by DB.Write: all of
// them or none, also across a crash. Within a batch a later operation on the
// same key wins. A Batch copies the keys and values it is given. It is not
// safe for concurrent use.
//
// A batch's bytes are, as they are, one record of the write-ahead log:
// a sequence and a count, then each operation. Package internal/batchrep
// owns that encoding (its doc gives the byte layout, which never changes).
type Batch struct {
	rep []byte
	// err is the first invalid operation; Write rejects the whole batch.
	err error
	// ops counts the Put, Delete and DeleteRange calls since the last Reset, valid or
	// not: the index the next one gets in an error.
	ops int
}

const batchHeaderLen = batchrep.HeaderLen

// batchLimits are the engine's limits on what a batch holds: a decoded
// batch beyond them was not written by the engine.
var batchLimits = batchrep.Limits{MaxKey: MaxKeySize, MaxValue: MaxValueSize}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

func (b *Batch) init() {
	if len(b.rep) < batchHeaderLen {
		b.rep = make([]byte, batchHeaderLen, 256)
	}
}

// Put adds a set of key to value. An empty or oversize key or an oversize
// value makes the whole batch invalid: Write will reject it, with an error
// that names the operation (its index among the batch's Puts and Deletes,
// from 0, and its kind).
func (b *Batch) Put(key, value []byte) {
	b.init()
	what := keyProblem(key)
	if what == "" {
		what = valueProblem(value)
	}
	if what != "" {
		b.reject("Put", what)
		return
	}
	b.ops++
	b.rep = batchrep.AppendSet(b.rep, key, value)
}

// Delete adds a deletion of key. An empty or oversize key makes the whole
// batch invalid, as in Put.
func (b *Batch) Delete(key []byte) {
	b.init()
	if what := keyProblem(key); what != "" {
		b.reject("Delete", what)
		return
	}
	b.ops++
	b.rep = batchrep.AppendDelete(b.rep, key)
}

// reject records the first invalid operation; it is not added, but it
// counts for the index of later ones, so each index is where the caller
// made that call.
func (b *Batch) reject(kind, what string) {
	b.setErr(invalidf("batch operation %d (%s): %s", b.ops, kind, what))
	b.ops++
}

// setErr records err as the batch's error unless one is recorded already.
func (b *Batch) setErr(err error) {
	if b.err == nil {
		b.err = err
	}
}

// DeleteRange adds a deletion of every key in [start, end): the keys
// written before the batch (and by earlier operations of it) are gone for
// reads that see the batch. start == end deletes nothing and adds no
// operation; start > end, or an empty or oversize key, makes the whole
// batch invalid.
func (b *Batch) DeleteRange(start, end []byte) {
	b.init()
	if what := rangeProblem(start, end); what != "" {
		b.reject("DeleteRange", what)
		return
	}
	b.ops++ // an empty range adds nothing, but it is a call
	if bytes.Equal(start, end) {
		return
	}
	b.rep = batchrep.AppendDeleteRange(b.rep, start, end)
}

// rangeProblem says what is wrong with the bounds of a range deletion, or
// "" when nothing is.
func rangeProblem(start, end []byte) string {
	if what := keyProblem(start); what != "" {
		return "start: " + what
	}
	if what := keyProblem(end); what != "" {
		return "end: " + what
	}
	if bytes.Compare(start, end) > 0 {
		return fmt.Sprintf("start %q > end %q", start, end)
	}
	return ""
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int {
	if len(b.rep) < batchHeaderLen {
		return 0
	}
	return int(b.count())
}

// Reset empties the batch (keeping its memory) and clears any error.
func (b *Batch) Reset() {
	if b.rep != nil {
		b.rep = b.rep[:batchHeaderLen]
		clear(b.rep)
	}
	b.err = nil
	b.ops = 0
}

func (b *Batch) count() uint32 { return batchrep.Count(b.rep) }

// addToMemtable applies one operation of a batch to mem (for a range
// deletion, op.Value is the end key).
func addToMemtable(mem *memtable.Memtable, op batchrep.Op) {
	if op.Kind == base.KindRangeDelete {
		mem.AddRangeDel(op.Seq, op.Key, op.Value)
		return
	}
	mem.Add(op.Seq, op.Kind, op.Key, op.Value)
}

// applyBatch calls fn for each operation of rep, a batch already known to
// be well formed (encoded by this process, or validated when read back):
// one pass, no validation.
func applyBatch(rep []byte, fn func(op batchrep.Op)) {
	r := batchrep.NewReader(rep, batchLimits)
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		fn(op)
	}
}

// decodeBatch validates a batch encoding (as read back from a log) and calls
// fn for each operation. Slices alias rep. Malformed input returns a
// *batchrep.CorruptionError, wrapping ErrCorruption; fn is not called at all
// then, so a damaged batch is never half applied.
func decodeBatch(rep []byte, fn func(op batchrep.Op)) error {
	if _, _, err := batchrep.Validate(rep, batchLimits); err != nil {
		return err
	}
	applyBatch(rep, fn)
	return nil
}
