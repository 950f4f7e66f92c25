package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bloomkv/bloomkv"
)

// tx applies the commands of one ApplyBatch: it reads through its own
// pending writes, so a command sees every earlier one of the batch, and
// commit writes them all, with the applied index, in one bloomkv batch.
type tx struct {
	f    *FSM
	db   *bloomkv.DB
	over map[string]*value // user key -> pending value; kind KindNone = deleted
	meta map[string][]byte // metadata key -> pending value
}

func newTx(f *FSM, db *bloomkv.DB) *tx {
	return &tx{f: f, db: db, over: make(map[string]*value), meta: make(map[string][]byte)}
}

func userKey(key []byte) []byte { return append([]byte{userPrefix}, key...) }

// fatal stops the node: the state database failed under a read, or holds
// a value that does not decode. Going on could make this replica decide a
// command differently from the others.
func fatal(err error) {
	panic(fmt.Sprintf("bloomkv/fsm: cannot apply: %v", err))
}

// lookup returns key's value as the batch so far leaves it; nil if absent.
// Filters come from the cache when they are there, and are mutated in place.
func (t *tx) lookup(key []byte) *value {
	if v, ok := t.over[string(key)]; ok {
		if v.kind == KindNone {
			return nil
		}
		return v
	}
	if v, _ := t.f.cache.get(string(key)); v != nil {
		return v
	}
	switch v, hit, _ := t.f.strings.get(key); hit {
	case cacheString:
		return &value{kind: KindString, str: v}
	case cacheAbsent:
		return nil
	}
	raw, err := t.db.Get(userKey(key))
	if errors.Is(err, bloomkv.ErrNotFound) {
		return nil
	}
	if err != nil {
		fatal(err)
	}
	v, err := decodeValue(key, raw)
	if err != nil {
		fatal(err)
	}
	return v
}

// apply decodes and runs one command entry.
func (t *tx) apply(data []byte) *Result {
	c, err := DecodeCommand(data)
	if err != nil {
		return &Result{Err: errorf("%v", err)}
	}
	if c.Op == OpMulti {
		// The commands of clients that the server gathered into one log
		// entry: each runs as if it were an entry of its own, in order,
		// so a Multi decides exactly what its commands one entry each
		// would. Their number costs one raft entry, not one per command.
		r := &Result{Multi: make([]*Result, len(c.Ops))}
		for i := range c.Ops {
			r.Multi[i] = t.one(&c.Ops[i])
		}
		return r
	}
	return t.one(&c)
}

// one runs one command that is not a Multi.
func (t *tx) one(c *Command) *Result {
	if c.Op == OpBatch {
		for i := range c.Ops {
			if e := t.check(&c.Ops[i]); e != nil {
				return &Result{Err: e}
			}
		}
		var r Result
		for i := range c.Ops {
			if n := t.run(&c.Ops[i]).N; c.Ops[i].Op != OpPut {
				r.N += n // keys deleted
			}
		}
		return &r
	}
	if e := t.check(c); e != nil {
		return &Result{Err: e}
	}
	return t.run(c)
}

// check validates what does not depend on the state, so that a Batch is
// refused whole before any of it runs.
func (t *tx) check(c *Command) *Error {
	switch c.Op {
	case OpPut:
		if len(c.Value) > MaxValueSize {
			return errorf("value of %d bytes is longer than %d", len(c.Value), MaxValueSize)
		}
		if c.Flags&PutNX != 0 && c.Flags&PutXX != 0 {
			return errorf("syntax error")
		}
		return checkKey(c.Key)
	case OpDeleteRange:
		return nil // any bounds; empty means unbounded
	case OpSetNode:
		return nil
	}
	return checkKey(c.Key)
}

func (t *tx) run(c *Command) *Result {
	switch c.Op {
	case OpPut:
		return t.put(c)
	case OpDelete:
		n := int64(0)
		if t.lookup(c.Key) != nil {
			n = 1
		}
		t.over[string(c.Key)] = &value{}
		return &Result{N: n}
	case OpDeleteRange:
		return &Result{N: t.deleteRange(c.Key, c.Value)}
	case OpGetDel:
		old := t.lookup(c.Key)
		switch {
		case old == nil:
			return &Result{}
		case old.kind != KindString:
			return &Result{Err: ErrWrongType}
		}
		t.over[string(c.Key)] = &value{}
		return &Result{N: 1, Old: old.str, OldFound: true}
	case OpIncr:
		return t.incr(c)
	case OpBFReserve:
		if e := reserveConflict(t.lookup(c.Key), KindBloom); e != nil {
			return &Result{Err: e}
		}
		bf, e := t.f.newBloom(c.ErrorRate, c.Capacity, c.Expansion)
		if e != nil {
			return &Result{Err: e}
		}
		t.over[string(c.Key)] = &value{kind: KindBloom, bf: bf}
		return &Result{}
	case OpBFAdd:
		return t.bfAdd(c)
	case OpCFReserve:
		if e := reserveConflict(t.lookup(c.Key), KindCuckoo); e != nil {
			return &Result{Err: e}
		}
		cf, e := t.f.newCuckoo(c.Capacity, c.Expansion)
		if e != nil {
			return &Result{Err: e}
		}
		t.over[string(c.Key)] = &value{kind: KindCuckoo, cf: cf}
		return &Result{}
	case OpCFAdd:
		return t.cfAdd(c)
	case OpCFDel:
		v := t.lookup(c.Key)
		if v == nil {
			return &Result{Err: ErrCFDelNotFound}
		}
		if v.kind != KindCuckoo {
			return &Result{Err: ErrWrongType}
		}
		if !v.cf.remove(c.Items[0]) {
			return &Result{N: 0}
		}
		v.enc = nil
		t.over[string(c.Key)] = v
		return &Result{N: 1}
	case OpSetNode:
		t.meta[string(append(append([]byte{}, nodeKeyPrefix...), c.Key...))] = append([]byte{}, c.Value...)
		return &Result{}
	}
	return &Result{Err: errorf("%v is not allowed here", c.Op)}
}

// reserveConflict is why a reserve of kind want cannot create key, whose
// value is v: as RedisBloom, "item exists" for a filter of that kind,
// WRONGTYPE for any other value.
func reserveConflict(v *value, want Kind) *Error {
	switch {
	case v == nil:
		return nil
	case v.kind == want:
		return ErrItemExists
	}
	return ErrWrongType
}

// putDone is the result of every put without flags. Results are never
// modified once returned, so they can share one: a put is the most
// frequent command, and this is one allocation fewer for each.
var putDone = &Result{N: 1}

func (t *tx) put(c *Command) *Result {
	if c.Flags&(PutNX|PutXX|PutGet) == 0 {
		t.over[string(c.Key)] = &value{kind: KindString, str: c.Value}
		return putDone
	}
	var r Result
	old := t.lookup(c.Key)
	if c.Flags&PutGet != 0 && old != nil {
		if old.kind != KindString {
			return &Result{Err: ErrWrongType}
		}
		r.Old, r.OldFound = old.str, true
	}
	if (c.Flags&PutNX != 0 && old != nil) || (c.Flags&PutXX != 0 && old == nil) {
		return &r
	}
	t.over[string(c.Key)] = &value{kind: KindString, str: c.Value}
	r.N = 1
	return &r
}

// incr adds c.Delta to the integer that the string at c.Key holds (an
// absent key counts as 0), as Redis's INCRBY: a value that is not a
// base-10 int64 in Redis's strict form, or a sum that overflows, is an
// error and changes nothing. Decided from the stored bytes and the
// command alone, so every replica decides alike.
func (t *tx) incr(c *Command) *Result {
	var cur int64
	if v := t.lookup(c.Key); v != nil {
		if v.kind != KindString {
			return &Result{Err: ErrWrongType}
		}
		n, ok := ParseRedisInt(v.str)
		if !ok {
			return &Result{Err: ErrNotInteger}
		}
		cur = n
	}
	sum := cur + c.Delta
	if (c.Delta > 0 && sum < cur) || (c.Delta < 0 && sum > cur) {
		return &Result{Err: errorf("increment or decrement would overflow")}
	}
	t.over[string(c.Key)] = &value{kind: KindString, str: strconv.AppendInt(nil, sum, 10)}
	return &Result{N: sum}
}

// ParseRedisInt parses b as Redis parses an integer value (string2ll): an
// optional minus, then digits without leading zeros, no sign '+', no
// spaces, within int64.
func ParseRedisInt(b []byte) (int64, bool) {
	s := string(b)
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] < '0' || digits[0] > '9' || (digits[0] == '0' && len(digits) > 1) || (digits == "0" && s != "0") {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// deleteRange deletes every user key in [start, end) (empty end: no upper
// bound) and returns how many there were.
func (t *tx) deleteRange(start, end []byte) int64 {
	o := &bloomkv.IterOptions{LowerBound: userKey(start), UpperBound: []byte{userPrefix + 1}}
	if len(end) > 0 {
		o.UpperBound = userKey(end)
	}
	var n int64
	it := t.db.NewIterator(o)
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key()[1:])
		if _, pending := t.over[k]; !pending {
			t.over[k] = &value{}
			n++
		}
	}
	if err := it.Error(); err != nil {
		fatal(err)
	}
	if err := it.Close(); err != nil {
		fatal(err)
	}
	for k, v := range t.over {
		if k >= string(start) && (len(end) == 0 || k < string(end)) && v.kind != KindNone {
			t.over[k] = &value{}
			n++
		}
	}
	return n
}

func (t *tx) bfAdd(c *Command) *Result {
	v := t.lookup(c.Key)
	created := false
	if v == nil {
		if c.Flags&FlagNoCreate != 0 {
			return &Result{Err: ErrNotFound}
		}
		bf, e := t.f.newBloom(c.ErrorRate, c.Capacity, c.Expansion)
		if e != nil {
			return &Result{Err: e}
		}
		v, created = &value{kind: KindBloom, bf: bf}, true
	} else if v.kind != KindBloom {
		return &Result{Err: ErrWrongType}
	}
	// As RedisBloom, the first item that fails (a NONSCALING filter that
	// is full, growth past the size limit) ends the command: the reply
	// has one element per item up to and including it.
	r := &Result{Ints: make([]int64, 0, len(c.Items))}
	changed := created
	for _, item := range c.Items {
		n, err := t.f.bloomAdd(v.bf, item)
		r.Ints = append(r.Ints, n)
		changed = changed || n == 1
		if err != nil {
			r.ItemErrs = make([]error, len(r.Ints))
			r.ItemErrs[len(r.Ints)-1] = err
			break
		}
	}
	if changed {
		t.over[string(c.Key)] = v
	}
	return r
}

func (t *tx) cfAdd(c *Command) *Result {
	v := t.lookup(c.Key)
	if v == nil {
		if c.Flags&FlagNoCreate != 0 {
			return &Result{Err: ErrNotFound}
		}
		cf, e := t.f.newCuckoo(c.Capacity, c.Expansion)
		if e != nil {
			return &Result{Err: e}
		}
		v = &value{kind: KindCuckoo, cf: cf}
		t.over[string(c.Key)] = v
	} else if v.kind != KindCuckoo {
		return &Result{Err: ErrWrongType}
	}
	r := &Result{Ints: make([]int64, len(c.Items))}
	changed := false
	for i, item := range c.Items {
		added, drew, err := t.f.cuckooAdd(v.cf, item, c.Flags&FlagNX != 0)
		if added {
			r.Ints[i] = 1
		}
		if err != nil {
			if r.ItemErrs == nil {
				r.ItemErrs = make([]error, len(c.Items))
			}
			r.ItemErrs[i] = err
		}
		changed = changed || added || drew
	}
	if changed {
		// A cuckoo filter's eviction choices come from a generator that
		// its encoding does not carry: a filter decoded from the database
		// starts it afresh. Re-decoding after every command that may have
		// drawn from it (an add that succeeded, or one that walked a whole
		// eviction chain and undid it) keeps this replica's filters the
		// ones every other replica has, whichever commands shared its
		// batches and whether it restarted between (TestDeterminismFullCuckoo).
		// A failed add rewrites the unchanged filter; that is the price.
		enc := v.cf.encode()
		fresh, err := decodeCuckooChain(c.Key, enc)
		if err != nil {
			fatal(err)
		}
		v = &value{kind: KindCuckoo, cf: fresh, enc: enc}
		t.over[string(c.Key)] = v
	}
	return r
}

// commit writes the batch's changes and the applied index atomically, then
// updates the filter cache.
func (t *tx) commit(applied uint64) error {
	f := t.f
	b := &f.batch
	b.Reset()
	size := 0 // about the bytes the batch holds
	for k, v := range t.over {
		size += len(k) + len(v.str) + 16
		// Put and Delete copy their arguments into the batch, so the
		// scratch buffers may be reused for the next key.
		f.keyBuf = append(append(f.keyBuf[:0], userPrefix), k...)
		switch v.kind {
		case KindNone:
			b.Delete(f.keyBuf)
		case KindString:
			f.vBuf = append(append(f.vBuf[:0], byte(KindString)), v.str...)
			b.Put(f.keyBuf, f.vBuf)
		default:
			enc := v.encode()
			size += len(enc)
			b.Put(f.keyBuf, enc)
		}
	}
	for k, v := range t.meta {
		b.Put([]byte(k), v)
	}
	b.Put(appliedKey, binary.LittleEndian.AppendUint64(nil, applied))
	t.stringsBefore()
	if err := t.db.Apply(b, nil); err != nil {
		return err
	}
	if size > 1<<20 || cap(f.vBuf) > 1<<20 {
		// A batch of large filters or values: let its memory go rather
		// than keep it for the ordinary batches after.
		f.batch, f.vBuf = bloomkv.Batch{}, nil
	}
	c := &t.f.cache
	c.mu.Lock()
	for k, v := range t.over {
		if v.kind == KindBloom || v.kind == KindCuckoo {
			c.putLocked(k, v)
		} else {
			c.deleteLocked(k)
		}
	}
	c.epoch++
	c.evictLocked()
	c.mu.Unlock()
	// The batch's keys left the string cache before it was applied
	// (stringsBefore); now that the database has it, its strings go in
	// (the cache is written through), and fills may resume.
	sc := &t.f.strings
	sc.mu.Lock()
	if sc.limit > 0 {
		for k, v := range t.over {
			if v.kind == KindString {
				sc.t.insertString(k, v.str)
				sc.bytes += entrySize(len(k), len(v.str))
			}
		}
		for sc.bytes > sc.limit && sc.t.len() > 0 {
			sc.bytes -= entrySize(sc.t.evictOne())
		}
	}
	sc.epoch++
	sc.busy = false
	sc.mu.Unlock()
	return nil
}

// stringsBefore drops the batch's keys from the string cache before the
// database has the batch, and holds fills off (busy) until commit has
// applied it, so that a reader never goes back in time
// (TestStringCacheFresh): a reader finds a key of the batch either in the
// cache with the value from before the batch, while the database still
// has that value too, or not at all, and then reads the database, which
// goes from old to new once; a fill that read the database before the
// batch landed is refused (busy, or the epoch moved). commit puts the
// batch's strings back once the database has them (write-through): with
// the string cache's own table that costs about 5% of a pipelined SET's
// CPU time, and a GET after a SET of its key then skips the database
// (issue 29: pipelined GETs right after SETs of the same keys took 17%
// less CPU time each). With a Go map it had cost 17% per SET and was left
// out.
func (t *tx) stringsBefore() {
	sc := &t.f.strings
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.t.len() > 0 {
		for k := range t.over {
			sc.dropLocked(k)
		}
	}
	sc.epoch++
	sc.busy = true
}
