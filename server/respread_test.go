package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// chunkReader returns the given chunks in turn, one per Read (as much of
// it as fits), then io.EOF.
type chunkReader struct {
	chunks [][]byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

// readAll parses what src delivers until it ends or a protocol error:
// the commands (copied: the reader's slices do not outlive the next
// call), the error, and whether a command was cut off by the end.
func readAll(src io.Reader, maxBulk, maxCommand int) (cmds [][]string, cut bool, err error) {
	rd := newRespReader(maxBulk, maxCommand)
	for {
		args, err := rd.next()
		if err != nil {
			return cmds, false, err
		}
		if args == nil {
			if err := rd.fill(src); err != nil {
				return cmds, rd.buffered(), nil
			}
			continue
		}
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = string(a)
		}
		cmds = append(cmds, cmd)
	}
}

// TestReaderDropsEmptyRequests: "*0" and "*-N" lines are skipped however
// reads cut the stream, and every command around them comes out whole
// (Redis ignores them; the guard before this reader removed them).
func TestReaderDropsEmptyRequests(t *testing.T) {
	in := resp("SET", "k", "v") + "*0\r\n" + resp("GET", "k") + "*-1\r\n" + "PING\r\n" +
		"*-12\r\n*0\r\n" + resp("ECHO", strings.Repeat("x", 100)) + "*0\r\n"
	want := [][]string{{"SET", "k", "v"}, {"GET", "k"}, {"PING"}, {"ECHO", strings.Repeat("x", 100)}}
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j += 3 {
			src := &chunkReader{chunks: [][]byte{[]byte(in[:i]), []byte(in[i:j]), []byte(in[j:])}}
			got, cut, err := readAll(src, 1<<20, 1<<20)
			if err != nil || cut || !reflect.DeepEqual(got, want) {
				t.Fatalf("cut at %d and %d: %q, cut %v, %v", i, j, got, cut, err)
			}
		}
	}
}

// TestReaderProtocolErrors: each malformed or oversized request is the
// error Redis gives (the server sends it and closes the connection), and
// a limit is enforced at the header, before the bytes it announces.
func TestReaderProtocolErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"*x\r\n", "invalid multibulk length"},
		{"*\r\n", "invalid multibulk length"},
		{"*-\r\n", "invalid multibulk length"},
		{"*+1\r\n", "invalid multibulk length"},
		{"*1\n", "invalid multibulk length"},
		{"*1048577\r\n", "invalid multibulk length"},
		{"*" + strings.Repeat("1", 30), "invalid multibulk length"}, // no end in sight
		{"*1\r\n$-1\r\n", "invalid bulk length"},
		{"*1\r\n$x\r\n", "invalid bulk length"},
		{"*1\r\n$\r\n", "invalid bulk length"},
		{"*1\r\n$1025\r\n", "invalid bulk length"},                  // past maxBulk (1024 here), nothing of it sent
		{"*1\r\n$999999999999999999999\r\n", "invalid bulk length"}, // too long to be a number
		{"*1\r\n$3\r\nGETxx", "invalid bulk length"},                // no CRLF after the bytes
		{"*2\r\n$3\r\nGET\r\n:1\r\n", "expected '$', got ':'"},
		{"*3\r\n$3\r\nDEL\r\n$1000\r\n" + strings.Repeat("x", 1000) + "\r\n$1000\r\n", "command too big (commands are limited to 1500 bytes)"},
		{strings.Repeat("A", maxInline+1), "too big inline request"},
		{"SET \"a\r\n", "unbalanced quotes in request"},
		{"SET \"a\"b\r\n", "unbalanced quotes in request"},
		{"SET 'a\r\n", "unbalanced quotes in request"},
		{resp("PING") + "*1\r\n$x\r\n", "invalid bulk length"}, // after a good command
	} {
		got, _, err := readAll(&chunkReader{chunks: [][]byte{[]byte(tc.in)}}, 1024, 1500)
		var pe protocolError
		if !errors.As(err, &pe) || string(pe) != tc.want {
			t.Errorf("%q: %v, want protocol error %q", clip([]byte(tc.in)), err, tc.want)
		}
		if strings.HasPrefix(tc.in, resp("PING")) && (len(got) != 1 || got[0][0] != "PING") {
			t.Errorf("%q: the good command before the bad one: %q", clip([]byte(tc.in)), got)
		}
	}
}

// TestReaderInline: inline commands split as redis-cli and Redis split
// them.
func TestReaderInline(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"PING\r\n", []string{"PING"}},
		{"PING\n", []string{"PING"}},
		{"  SET  k \t v  \r\n", []string{"SET", "k", "v"}},
		{`SET k "a b"` + "\r\n", []string{"SET", "k", "a b"}},
		{`SET k "a\r\n\t\"\x41\x4a\\z"` + "\r\n", []string{"SET", "k", "a\r\n\t\"AJ\\z"}},
		{`SET k "\xZZ"` + "\r\n", []string{"SET", "k", "xZZ"}}, // not hex: the escaped byte itself
		{`SET k 'it\'s "x"'` + "\r\n", []string{"SET", "k", `it's "x"`}},
		{`SET k '\n'` + "\r\n", []string{"SET", "k", `\n`}},
		{`SET k ""` + "\r\n", []string{"SET", "k", ""}},
		{`SET k a"b c"` + "\r\n", []string{"SET", "k", "ab c"}}, // a quote inside a word opens quoting
	} {
		got, cut, err := readAll(&chunkReader{chunks: [][]byte{[]byte(tc.in)}}, 1024, 4096)
		if err != nil || cut || len(got) != 1 || !reflect.DeepEqual(got[0], tc.want) {
			t.Errorf("%q: %q, cut %v, %v; want %q", tc.in, got, cut, err, tc.want)
		}
	}
	// Empty lines are skipped.
	got, _, err := readAll(&chunkReader{chunks: [][]byte{[]byte("\r\n\n  \r\nPING\r\n")}}, 1024, 4096)
	if err != nil || !reflect.DeepEqual(got, [][]string{{"PING"}}) {
		t.Errorf("empty lines then PING: %q, %v", got, err)
	}
}

// TestReaderBigCommand: a command larger than the buffer arrives in small
// reads and comes out whole, and the buffer shrinks back after it.
func TestReaderBigCommand(t *testing.T) {
	var args []string
	args = append(args, "BF.MADD", "f")
	for i := range 50000 {
		args = append(args, strings.Repeat(string(rune('a'+i%26)), i%7))
	}
	big := strings.Repeat("v", 3*readBufSize+5)
	in := resp(args...) + resp("SET", "k", big) + resp("PING")
	var chunks [][]byte
	for b := []byte(in); len(b) > 0; {
		k := min(len(b), 1000)
		chunks = append(chunks, b[:k])
		b = b[k:]
	}
	rd := newRespReader(1<<20, 1<<22)
	src := &chunkReader{chunks: chunks}
	var got [][]string
	for len(got) < 3 {
		a, err := rd.next()
		if err != nil {
			t.Fatal(err)
		}
		if a == nil {
			if err := rd.fill(src); err != nil {
				t.Fatalf("after %d commands: %v", len(got), err)
			}
			continue
		}
		cmd := make([]string, len(a))
		for i := range a {
			cmd[i] = string(a[i])
		}
		got = append(got, cmd)
	}
	if !reflect.DeepEqual(got, [][]string{args, {"SET", "k", big}, {"PING"}}) {
		t.Fatalf("the commands came out changed (%d, %d, %d arguments)", len(got[0]), len(got[1]), len(got[2]))
	}
	if err := rd.fill(src); err != io.EOF {
		t.Fatalf("fill at the end: %v", err)
	}
	if len(rd.buf) != readBufSize || cap(rd.args) > 1024 {
		t.Fatalf("buffers kept after the big commands: %d bytes, %d arguments", len(rd.buf), cap(rd.args))
	}
}

// TestReaderNoAllocs: a pipelined burst is parsed without allocating.
func TestReaderNoAllocs(t *testing.T) {
	var b strings.Builder
	for range 16 {
		b.WriteString(resp("SET", "key:000000012345", "xxx"))
		b.WriteString(resp("GET", "key:000000012345"))
	}
	in := []byte(b.String())
	rd := newRespReader(1<<20, 1<<20)
	src := &bytes.Reader{}
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(in)
		if err := rd.fill(src); err != nil {
			t.Fatal(err)
		}
		for k := 0; ; k++ {
			a, err := rd.next()
			if err != nil || (a == nil && k != 32) {
				t.Fatalf("command %d: %v", k, err)
			}
			if a == nil {
				break
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per burst of 32 commands", allocs)
	}
}

// FuzzRESPReader: any bytes, cut into reads anywhere, give the same
// commands and the same error as the bytes read at once, and never a
// panic; and commands built from the input, encoded in RESP, come back
// as they were.
func FuzzRESPReader(f *testing.F) {
	for _, s := range []string{
		resp("SET", "k", "v") + resp("GET", "k"),
		"*0\r\n*-1\r\nPING\r\n" + resp("ECHO", "x"),
		"*2\r\n$3\r\nGET\r\n$-5\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$999999999999\r\n",
		`SET k "a\x41 \"b" 'c\'d'` + "\r\n",
		"SET \"a\r\n",
		"*1\r\n$3\r\nGETxx",
		"*2\r\n$1\r\na\r\n$1\r\n",
		strings.Repeat("A", 300),
	} {
		f.Add([]byte(s), uint16(7), uint16(40))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16) {
		const maxBulk, maxCommand = 512, 1024
		whole, wcut, werr := readAll(&chunkReader{chunks: [][]byte{bytes.Clone(data)}}, maxBulk, maxCommand)
		i := min(int(cut1), len(data))
		j := min(i+int(cut2), len(data))
		var chunks [][]byte
		for _, part := range [][]byte{data[:i], data[i:j], data[j:]} {
			for len(part) > 0 { // reads of at most 13 bytes in the middle part too
				k := min(len(part), 13+int(cut1%512))
				chunks = append(chunks, bytes.Clone(part[:k]))
				part = part[k:]
			}
		}
		split, scut, serr := readAll(&chunkReader{chunks: chunks}, maxBulk, maxCommand)
		if !reflect.DeepEqual(whole, split) || wcut != scut || fmt.Sprint(werr) != fmt.Sprint(serr) {
			t.Fatalf("at once: %q cut %v err %v\nin reads: %q cut %v err %v", whole, wcut, werr, split, scut, serr)
		}
		for _, cmd := range whole {
			if len(cmd) == 0 {
				t.Fatal("a command without arguments")
			}
		}
		// Round trip: the input's bytes as arguments (split at each 0xff).
		args := strings.Split(string(data), "\xff")
		if len(args) > 200 {
			args = args[:200]
		}
		enc := resp(args...) + resp("PING")
		got, cut, err := readAll(&chunkReader{chunks: [][]byte{[]byte(enc)}}, 1<<20, 1<<20)
		if err != nil || cut || len(got) != 2 || !reflect.DeepEqual(got[0], args) {
			t.Fatalf("round trip of %q: %q, cut %v, %v", args, got, cut, err)
		}
	})
}

// TestLargeRepliesInOrder: a pipeline whose replies outgrow the reply
// buffer (GETs of a 100 KB value, with writes between them) is answered
// whole and in order: replies are written before the burst ends, pending
// writes still answered in their place.
func TestLargeRepliesInOrder(t *testing.T) {
	_, c := singleNode(t)
	big := strings.Repeat("b", 100<<10)
	if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := c.Pipeline()
	var gets []*redis.StringCmd
	var sets []*redis.StatusCmd
	for i := range 30 {
		gets = append(gets, pipe.Get(ctx, "big"))
		sets = append(sets, pipe.Set(ctx, fmt.Sprint("n", i), fmt.Sprint(i), 0))
		gets = append(gets, pipe.Get(ctx, fmt.Sprint("n", i)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range sets {
		if s.Val() != "OK" {
			t.Fatalf("SET n%d: %q", i, s.Val())
		}
		if v := gets[2*i].Val(); v != big {
			t.Fatalf("GET big #%d: %d bytes", i, len(v))
		}
		if v := gets[2*i+1].Val(); v != fmt.Sprint(i) {
			t.Fatalf("GET n%d after its SET: %q", i, v)
		}
	}
}
