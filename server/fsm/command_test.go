package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

var sampleCommands = []Command{
	{Op: OpPut, Key: []byte("k"), Value: []byte("v")},
	{Op: OpPut, Flags: PutNX | PutGet, Key: []byte("k"), Value: []byte{}},
	{Op: OpDelete, Key: []byte("gone")},
	{Op: OpDeleteRange, Key: []byte("a"), Value: []byte("m")},
	{Op: OpBatch, Ops: []Command{
		{Op: OpPut, Key: []byte("a"), Value: []byte("1")},
		{Op: OpDelete, Key: []byte("b")},
		{Op: OpDeleteRange, Key: []byte("c"), Value: nil},
	}},
	{Op: OpBFReserve, Key: []byte("bf"), ErrorRate: 0.001, Capacity: 1000, Expansion: 4},
	{Op: OpBFAdd, Key: []byte("bf"), Flags: FlagNoCreate, ErrorRate: 0.01, Capacity: 100, Expansion: 0, Items: [][]byte{[]byte("x"), {}, []byte("zz")}},
	{Op: OpCFReserve, Key: []byte("cf"), Capacity: 1 << 20},
	{Op: OpCFAdd, Key: []byte("cf"), Flags: FlagNX, Capacity: 1024, Items: [][]byte{[]byte("x")}},
	{Op: OpCFDel, Key: []byte("cf"), Items: [][]byte{[]byte("x")}},
	{Op: OpSetNode, Key: []byte("n1"), Value: []byte("127.0.0.1:6379")},
	{Op: OpIncr, Key: []byte("n"), Delta: -7},
	{Op: OpGetDel, Key: []byte("g")},
	{Op: OpMulti, Ops: []Command{
		{Op: OpPut, Key: []byte("a"), Value: []byte("1")},
		{Op: OpBatch, Ops: []Command{{Op: OpDelete, Key: []byte("b")}}},
		{Op: OpBFAdd, Key: []byte("bf"), ErrorRate: 0.01, Capacity: 100, Expansion: 2, Items: [][]byte{[]byte("x")}},
		{Op: OpCFDel, Key: []byte("cf"), Items: [][]byte{[]byte("x")}},
	}},
}

// normalize makes empty slices nil, as decoding leaves them, for DeepEqual.
func normalize(c Command) Command {
	if len(c.Key) == 0 {
		c.Key = nil
	}
	if len(c.Value) == 0 {
		c.Value = nil
	}
	for i := range c.Items {
		if len(c.Items[i]) == 0 {
			c.Items[i] = nil
		}
	}
	for i := range c.Ops {
		c.Ops[i] = normalize(c.Ops[i])
	}
	if len(c.Ops) == 0 {
		c.Ops = nil
	}
	return c
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range sampleCommands {
		enc := c.Encode()
		got, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("%v: %v", c.Op, err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(c)) {
			t.Fatalf("%v: round trip\n got %+v\nwant %+v", c.Op, got, c)
		}
		// Every strict prefix is malformed, never a panic or a wrong command.
		for n := range len(enc) {
			if _, err := DecodeCommand(enc[:n]); !errors.Is(err, ErrBadCommand) {
				t.Fatalf("%v cut to %d bytes: %v", c.Op, n, err)
			}
		}
		if _, err := DecodeCommand(append(enc, 0)); !errors.Is(err, ErrBadCommand) {
			t.Fatalf("%v with a trailing byte: %v", c.Op, err)
		}
	}
}

// TestCommandGolden pins the byte layouts of docs/server.md ("The command in a raft log entry").
func TestCommandGolden(t *testing.T) {
	for _, tc := range []struct {
		c    Command
		want []byte
	}{
		{Command{Op: OpPut, Key: []byte("k"), Value: []byte("vv")},
			[]byte{1, 1, 0, 1, 'k', 2, 'v', 'v'}},
		{Command{Op: OpDelete, Key: []byte("k")},
			[]byte{1, 2, 1, 'k'}},
		{Command{Op: OpBatch, Ops: []Command{{Op: OpPut, Key: []byte("a"), Value: []byte("1")}, {Op: OpDelete, Key: []byte("b")}}},
			[]byte{1, 3, 2, 1, 0, 1, 'a', 1, '1', 2, 1, 'b'}},
		{Command{Op: OpBFAdd, Key: []byte("f"), ErrorRate: 0.5, Capacity: 300, Expansion: 2, Items: [][]byte{[]byte("x")}},
			[]byte{1, 17, 1, 'f', 0, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 0xac, 0x02, 2, 1, 1, 'x'}},
		{Command{Op: OpCFDel, Key: []byte("c"), Items: [][]byte{[]byte("x")}},
			[]byte{1, 34, 1, 'c', 1, 'x'}},
		{Command{Op: OpIncr, Key: []byte("n"), Delta: -2},
			[]byte{1, 6, 1, 'n', 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{Command{Op: OpGetDel, Key: []byte("k")},
			[]byte{1, 7, 1, 'k'}},
		{Command{Op: OpMulti, Ops: []Command{{Op: OpPut, Key: []byte("a"), Value: []byte("1")}, {Op: OpDelete, Key: []byte("b")}}},
			[]byte{1, 5, 2, 1, 0, 1, 'a', 1, '1', 2, 1, 'b'}},
	} {
		if got := tc.c.Encode(); !bytes.Equal(got, tc.want) {
			t.Errorf("%v: %x, want %x", tc.c.Op, got, tc.want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":           {},
		"version":         {2, 2, 1, 'k'},
		"unknown op":      {1, 99},
		"nested batch":    {1, 3, 1, 3, 0},
		"filter in batch": {1, 3, 1, 34, 1, 'c', 1, 'x'},
		"nested multi":    {1, 5, 1, 5, 0},
		"multi in batch":  {1, 3, 1, 5, 0},
		"getdel in batch": {1, 3, 1, 7, 1, 'k'},
		"huge length":     {1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge count":      {1, 17, 1, 'f', 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"bad uvarint":     {1, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
	} {
		if _, err := DecodeCommand(data); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range sampleCommands {
		f.Add(c.Encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			return
		}
		// What decodes re-encodes to a command that decodes the same
		// (compared as bytes: a NaN error rate is not equal to itself).
		enc := c.Encode()
		c2, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("re-encoding of %x: %v", data, err)
		}
		if enc2 := c2.Encode(); !bytes.Equal(enc2, enc) {
			t.Fatalf("re-encoding of %x is unstable: %x then %x", data, enc, enc2)
		}
	})
}

func TestEncodeMulti(t *testing.T) {
	var ops []Command
	var encs [][]byte
	for _, c := range sampleCommands {
		if c.Op == OpMulti {
			continue
		}
		ops = append(ops, c)
		encs = append(encs, c.Encode())
	}
	want := (&Command{Op: OpMulti, Ops: ops}).Encode()
	if got := EncodeMulti(encs); !bytes.Equal(got, want) {
		t.Fatalf("EncodeMulti: %x\nwant %x", got, want)
	}
	if _, err := DecodeCommand(want); err != nil {
		t.Fatal(err)
	}
}

func TestIncr(t *testing.T) {
	m := newMachine(t)
	incr := func(k string, d int64) *Result { return m.one(Command{Op: OpIncr, Key: []byte(k), Delta: d}) }
	if r := incr("n", 5); r.Err != nil || r.N != 5 {
		t.Fatalf("INCRBY on an absent key: %+v", r)
	}
	if r := incr("n", -7); r.Err != nil || r.N != -2 {
		t.Fatalf("DECRBY: %+v", r)
	}
	if _, v := m.get("n"); v != "-2" {
		t.Fatalf("stored %q", v)
	}
	for _, bad := range []string{"", " 1", "+1", "01", "-0", "1.5", "x", "99999999999999999999"} {
		m.one(put("s", bad))
		if r := incr("s", 1); r.Err != ErrNotInteger {
			t.Fatalf("INCR on %q: %+v", bad, r)
		}
	}
	m.one(put("max", "9223372036854775807"))
	if r := incr("max", 1); r.Err == nil {
		t.Fatal("INCR past int64 succeeded")
	}
	if _, v := m.get("max"); v != "9223372036854775807" {
		t.Fatalf("a refused INCR changed the value to %q", v)
	}
	m.one(bfAdd("bf", "x"))
	if r := incr("bf", 1); r.Err != ErrWrongType {
		t.Fatalf("INCR on a filter: %+v", r)
	}
}

func TestGetDel(t *testing.T) {
	m := newMachine(t)
	getDel := func(k string) *Result { return m.one(Command{Op: OpGetDel, Key: []byte(k)}) }
	m.one(put("s", "abc"))
	if r := getDel("s"); r.Err != nil || !r.OldFound || string(r.Old) != "abc" || r.N != 1 {
		t.Fatalf("GETDEL of a string: %+v", r)
	}
	if kind, _ := m.get("s"); kind != KindNone {
		t.Fatal("GETDEL left the key")
	}
	if r := getDel("s"); r.Err != nil || r.OldFound || r.N != 0 {
		t.Fatalf("GETDEL of an absent key: %+v", r)
	}
	m.one(bfAdd("bf", "x"))
	if r := getDel("bf"); r.Err != ErrWrongType {
		t.Fatalf("GETDEL of a filter: %+v", r)
	}
	if r := m.one(Command{Op: OpBFAdd, Key: []byte("bf"), Flags: FlagNoCreate, Items: [][]byte{[]byte("y")}}); r.Err != nil {
		t.Fatalf("the filter is gone after a refused GETDEL: %+v", r)
	}
}
