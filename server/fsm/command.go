package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// CommandVersion is the first byte of every encoded command.
const CommandVersion = 1

// Op is a command's operation, its second byte. The values are part of
// the log format and never change.
type Op byte

const (
	OpPut         Op = 1  // Key = Value, with Flags PutNX, PutXX, PutGet
	OpDelete      Op = 2  // delete Key (any kind)
	OpBatch       Op = 3  // Ops (Put, Delete, DeleteRange) applied atomically, in order
	OpDeleteRange Op = 4  // delete every key in [Key, Value)
	OpMulti       Op = 5  // Ops applied in order as separate commands, each with its own result
	OpIncr        Op = 6  // add Delta to the integer string Key (absent: 0); Result.N is the new value
	OpGetDel      Op = 7  // delete the string Key, returning it in Result.Old (another kind: ErrWrongType, kept)
	OpBFReserve   Op = 16 // create the bloom filter Key
	OpBFAdd       Op = 17 // add Items to the bloom filter Key, creating it unless FlagNoCreate
	OpCFReserve   Op = 32 // create the cuckoo filter Key
	OpCFAdd       Op = 33 // add Items to the cuckoo filter Key (FlagNX: unless present)
	OpCFDel       Op = 34 // remove one copy of Items[0] from the cuckoo filter Key
	OpSetNode     Op = 48 // record that node Key serves clients at address Value
)

func (o Op) String() string {
	switch o {
	case OpPut:
		return "Put"
	case OpDelete:
		return "Delete"
	case OpBatch:
		return "Batch"
	case OpDeleteRange:
		return "DeleteRange"
	case OpMulti:
		return "Multi"
	case OpIncr:
		return "Incr"
	case OpGetDel:
		return "GetDel"
	case OpBFReserve:
		return "BFReserve"
	case OpBFAdd:
		return "BFAdd"
	case OpCFReserve:
		return "CFReserve"
	case OpCFAdd:
		return "CFAdd"
	case OpCFDel:
		return "CFDel"
	case OpSetNode:
		return "SetNode"
	}
	return fmt.Sprintf("Op(%d)", byte(o))
}

// Flags of Put, BFAdd and CFAdd.
const (
	PutNX        = 1 << 0 // Put only if Key is absent
	PutXX        = 1 << 1 // Put only if Key is present
	PutGet       = 1 << 2 // return the old string value
	FlagNoCreate = 1 << 0 // BFAdd, CFAdd: the filter must exist
	FlagNX       = 1 << 1 // CFAdd: add an item only if it is not (probably) present
)

// Command is one state-machine command: the data of a raft log entry.
// Which fields an op uses is listed with the op constants and in the
// encoding (docs/server.md at the repository root).
type Command struct {
	Op        Op
	Key       []byte
	Value     []byte
	Flags     byte
	Items     [][]byte
	ErrorRate float64 // BFReserve, BFAdd (when it creates)
	Capacity  uint64  // BFReserve, BFAdd, CFReserve, CFAdd (when they create)
	Expansion uint64  // BFReserve, BFAdd: 0 = NONSCALING; CFReserve, CFAdd: 0 = never grows
	Ops       []Command
	Delta     int64 // Incr
}

// ErrBadCommand marks log data that is not a valid command encoding.
var ErrBadCommand = errors.New("bloomkv/fsm: malformed command")

// Encode returns c's encoding (docs/server.md).
func (c *Command) Encode() []byte {
	return c.AppendEncode(make([]byte, 0, 32+len(c.Key)+len(c.Value)))
}

// AppendEncode appends c's encoding (Encode's bytes) to dst.
func (c *Command) AppendEncode(dst []byte) []byte {
	return c.appendBody(append(dst, CommandVersion))
}

// EncodeMulti returns the encoding of a Multi of the commands whose
// encodings (by Encode) are cmds, without decoding them: the same bytes as
// Command{Op: OpMulti, Ops: ...}.Encode(). A command's body follows its
// version byte unchanged inside a Multi, so the server, which has encoded
// each client's command to size it, gathers them at the cost of a copy.
func EncodeMulti(cmds [][]byte) []byte {
	size := 12
	for _, c := range cmds {
		size += len(c) - 1
	}
	dst := append(make([]byte, 0, size), CommandVersion, byte(OpMulti))
	dst = binary.AppendUvarint(dst, uint64(len(cmds)))
	for _, c := range cmds {
		dst = append(dst, c[1:]...)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

func (c *Command) appendBody(dst []byte) []byte {
	dst = append(dst, byte(c.Op))
	switch c.Op {
	case OpPut:
		dst = append(dst, c.Flags)
		dst = appendBytes(dst, c.Key)
		dst = appendBytes(dst, c.Value)
	case OpDelete, OpGetDel:
		dst = appendBytes(dst, c.Key)
	case OpIncr:
		dst = appendBytes(dst, c.Key)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(c.Delta))
	case OpDeleteRange, OpSetNode:
		dst = appendBytes(dst, c.Key)
		dst = appendBytes(dst, c.Value)
	case OpBatch, OpMulti:
		dst = binary.AppendUvarint(dst, uint64(len(c.Ops)))
		for i := range c.Ops {
			dst = c.Ops[i].appendBody(dst)
		}
	case OpBFReserve:
		dst = appendBytes(dst, c.Key)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(c.ErrorRate))
		dst = binary.AppendUvarint(dst, c.Capacity)
		dst = binary.AppendUvarint(dst, c.Expansion)
	case OpBFAdd:
		dst = appendBytes(dst, c.Key)
		dst = append(dst, c.Flags)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(c.ErrorRate))
		dst = binary.AppendUvarint(dst, c.Capacity)
		dst = binary.AppendUvarint(dst, c.Expansion)
		dst = appendItems(dst, c.Items)
	case OpCFReserve:
		dst = appendBytes(dst, c.Key)
		dst = binary.AppendUvarint(dst, c.Capacity)
		dst = binary.AppendUvarint(dst, c.Expansion)
	case OpCFAdd:
		dst = appendBytes(dst, c.Key)
		dst = append(dst, c.Flags)
		dst = binary.AppendUvarint(dst, c.Capacity)
		dst = binary.AppendUvarint(dst, c.Expansion)
		dst = appendItems(dst, c.Items)
	case OpCFDel:
		dst = appendBytes(dst, c.Key)
		var item []byte
		if len(c.Items) > 0 {
			item = c.Items[0]
		}
		dst = appendBytes(dst, item)
	}
	return dst
}

func appendItems(dst []byte, items [][]byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(items)))
	for _, it := range items {
		dst = appendBytes(dst, it)
	}
	return dst
}

// DecodeCommand decodes data, an encoding made by Encode. Byte slices in
// the result point into data. Anything else, trailing bytes included, is
// an error wrapping ErrBadCommand that names the offset.
func DecodeCommand(data []byte) (Command, error) {
	d := decoder{b: data}
	if v := d.byte(); d.err == nil && v != CommandVersion {
		return Command{}, fmt.Errorf("%w: version %d at offset 0, want %d", ErrBadCommand, v, CommandVersion)
	}
	c := d.command(0)
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d trailing bytes", len(d.b)-d.off)
	}
	if d.err != nil {
		return Command{}, d.err
	}
	return c, nil
}

type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at offset %d", ErrBadCommand, fmt.Sprintf(format, args...), d.off)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) f64() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.fail("truncated float")
		return 0
	}
	d.off += 8
	return math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off-8:]))
}

func (d *decoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.fail("truncated uint64")
		return 0
	}
	d.off += 8
	return binary.LittleEndian.Uint64(d.b[d.off-8:])
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("length %d beyond the end", n)
		return nil
	}
	d.off += int(n)
	return d.b[d.off-int(n) : d.off : d.off]
}

func (d *decoder) items() [][]byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	// Every item takes at least one byte: a count beyond the rest is a lie,
	// caught before it sizes an allocation.
	if n > uint64(len(d.b)-d.off) {
		d.fail("item count %d beyond the end", n)
		return nil
	}
	items := make([][]byte, n)
	for i := range items {
		items[i] = d.bytes()
	}
	return items
}

// command decodes an op and its body. in is the op it is inside: 0 at the
// top, where anything may appear; OpMulti, whose elements may be anything
// but a Multi; OpBatch, whose elements are Put, Delete and DeleteRange.
func (d *decoder) command(in Op) Command {
	at := d.off
	c := Command{Op: Op(d.byte())}
	switch c.Op {
	case OpPut:
		c.Flags = d.byte()
		c.Key = d.bytes()
		c.Value = d.bytes()
	case OpDelete, OpGetDel:
		c.Key = d.bytes()
	case OpIncr:
		c.Key = d.bytes()
		c.Delta = int64(d.u64())
	case OpDeleteRange, OpSetNode:
		c.Key = d.bytes()
		c.Value = d.bytes()
	case OpBatch, OpMulti:
		if in == OpBatch || (in == OpMulti && c.Op == OpMulti) {
			d.off = at
			d.fail("%v inside a %v", c.Op, in)
			return c
		}
		n := d.uvarint()
		if n > uint64(len(d.b)-d.off) {
			d.fail("op count %d beyond the end", n)
			return c
		}
		c.Ops = make([]Command, 0, n)
		for range n {
			opAt := d.off
			op := d.command(c.Op)
			if d.err != nil {
				break
			}
			if c.Op == OpBatch && op.Op != OpPut && op.Op != OpDelete && op.Op != OpDeleteRange {
				d.off = opAt
				d.fail("%v inside a Batch", op.Op)
				break
			}
			c.Ops = append(c.Ops, op)
		}
	case OpBFReserve:
		c.Key = d.bytes()
		c.ErrorRate = d.f64()
		c.Capacity = d.uvarint()
		c.Expansion = d.uvarint()
	case OpBFAdd:
		c.Key = d.bytes()
		c.Flags = d.byte()
		c.ErrorRate = d.f64()
		c.Capacity = d.uvarint()
		c.Expansion = d.uvarint()
		c.Items = d.items()
	case OpCFReserve:
		c.Key = d.bytes()
		c.Capacity = d.uvarint()
		c.Expansion = d.uvarint()
	case OpCFAdd:
		c.Key = d.bytes()
		c.Flags = d.byte()
		c.Capacity = d.uvarint()
		c.Expansion = d.uvarint()
		c.Items = d.items()
	case OpCFDel:
		c.Key = d.bytes()
		c.Items = [][]byte{d.bytes()}
	default:
		if d.err == nil {
			d.off = at
			d.fail("unknown op %d", byte(c.Op))
		}
	}
	return c
}
