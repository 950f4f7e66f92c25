package compaction

import (
	"bytes"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/kv"
)

// Input is what a compaction reads: its input tables merged into one
// stream of internal keys in kv.CompareInternal order, read forward once
// (First, then Next until it returns false, then Error). Every kv.Iterator
// is an Input.
type Input interface {
	First() bool
	Next() bool
	Valid() bool
	// Key returns the current internal key; Key and Value stay valid
	// until the next call to First or Next.
	Key() []byte
	Value() []byte
	Error() error
}

// Iter is the merge filter described in the package doc. It is
// forward only and not safe for concurrent use.
type Iter struct {
	in         Input
	snapshots  []uint64 // ascending
	bottommost func(ukey []byte) bool
	err        error

	valid      bool
	key, value []byte // the entry shown

	// advance is set when the entry shown is the input's current entry, so
	// the next call first steps the input past it.
	advance bool
	// held is set when the input's current entry (a value) has already been
	// processed and must be shown next, after the pending tombstone shown
	// now.
	held bool

	// The user key being processed and the stripe of its last kept version.
	curKey    []byte
	curStripe int
	haveCur   bool

	// A kept tombstone waiting for the next older kept version of its key,
	// which decides whether it is written. Owned copies: the input moves on
	// before the decision.
	pendingKey, pendingValue []byte
	pending                  bool
}

// NewIter wraps a merged input (internal keys in order) and yields
// only the entries an output table must keep:
//   - for each user key, the newest version, plus, for each snapshot in
//     snapshots (sorted ascending sequence numbers of live snapshots), the
//     newest version visible at that snapshot (a version is visible at
//     snapshot s if its seq <= s);
//   - a tombstone is dropped when it is the oldest kept version of its key,
//     no older snapshot stripe needs it, AND bottommost(userKey) reports that
//     no older data for the key can exist in levels below the output (elide
//     tombstones at the bottom). A tombstone directly above another kept
//     tombstone is dropped too, since the older one hides the same data.
//
// A nil bottommost means older data may always exist below (no tombstone is
// elided for lack of older versions). snapshots must not change while the
// iterator is in use.
//
// Forward only: First then Next. Key/Value valid until the next call. The
// caller keeps ownership of in (Iter has no Close).
func NewIter(in Input, snapshots []uint64,
	bottommost func(ukey []byte) bool) *Iter {
	if bottommost == nil {
		// Without the callback assume older data may exist below: always safe.
		bottommost = func([]byte) bool { return false }
	}
	return &Iter{in: in, snapshots: snapshots, bottommost: bottommost}
}

// First positions the iterator on the first entry to keep.
func (c *Iter) First() bool {
	c.advance, c.held, c.haveCur, c.pending, c.err = false, false, false, false, nil
	c.in.First()
	return c.findNext()
}

// Next moves to the next entry to keep.
func (c *Iter) Next() bool {
	if !c.valid {
		return false
	}
	if c.advance {
		c.advance = false
		c.in.Next()
	}
	return c.findNext()
}

// Valid reports whether the iterator is on an entry.
func (c *Iter) Valid() bool { return c.valid }

// Key returns the current internal key.
func (c *Iter) Key() []byte { return c.key }

// Value returns the current value.
func (c *Iter) Value() []byte { return c.value }

// Error returns the input's error or a corruption found in it.
func (c *Iter) Error() error { return c.err }

// stripe returns the index of the snapshot stripe holding seq: the first
// snapshot >= seq, or len(snapshots) for versions newer than every snapshot.
func (c *Iter) stripe(seq uint64) int { return Stripe(c.snapshots, seq) }

// findNext reads the input from its current entry until it can show an
// entry.
func (c *Iter) findNext() bool {
	if c.held {
		c.held = false
		return c.showInput()
	}
	for c.in.Valid() {
		ikey := c.in.Key()
		ukey, seq, kind, ok := kv.ParseInternalKey(ikey)
		if !ok {
			return c.fail(base.CorruptionErrorf(
				"bloomkv/compaction: malformed internal key %s (%d bytes) in compaction input",
				kv.FormatInternalKey(ikey), len(ikey)))
		}
		stripe := c.stripe(seq)
		if c.haveCur && bytes.Equal(ukey, c.curKey) {
			if stripe == c.curStripe {
				c.in.Next() // shadowed by a newer version in the same stripe
				continue
			}
		} else {
			// A new user key: the previous key's pending tombstone has no
			// older kept version. Decide it before looking at this entry,
			// which stays unprocessed for the next call if we show it.
			if c.pending && c.flushPendingOldest() {
				return true
			}
			c.curKey = append(c.curKey[:0], ukey...)
			c.haveCur = true
		}
		c.curStripe = stripe
		if kind == kv.KindSet {
			if c.pending {
				// The tombstone hides this value from its stripe: write it,
				// then this value.
				c.pending, c.held = false, true
				return c.show(c.pendingKey, c.pendingValue)
			}
			return c.showInput()
		}
		// A kept tombstone replaces any pending newer one (which would hide
		// only what this one hides) and waits for the next kept version.
		c.pendingKey = append(c.pendingKey[:0], ikey...)
		c.pendingValue = append(c.pendingValue[:0], c.in.Value()...)
		c.pending = true
		c.in.Next()
	}
	if err := c.in.Error(); err != nil {
		return c.fail(err)
	}
	if c.pending && c.flushPendingOldest() {
		return true
	}
	c.valid = false
	return false
}

// flushPendingOldest decides the pending tombstone once it is known to be the
// oldest kept version of its key, and reports whether it is shown.
func (c *Iter) flushPendingOldest() bool {
	c.pending = false
	if c.bottommost(kv.UserKey(c.pendingKey)) {
		return false
	}
	return c.show(c.pendingKey, c.pendingValue)
}

func (c *Iter) showInput() bool {
	c.advance = true
	return c.show(c.in.Key(), c.in.Value())
}

func (c *Iter) show(key, value []byte) bool {
	c.key, c.value, c.valid = key, value, true
	return true
}

func (c *Iter) fail(err error) bool {
	c.err, c.valid, c.pending, c.held = err, false, false, false
	return false
}
