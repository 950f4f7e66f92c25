package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// readReply reads one RESP reply line (the first line of it).
func readReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a reply: %v (got %q)", err, line)
	}
	return strings.TrimRight(line, "\r\n")
}

// expectClosed checks that the server closes the connection (after any
// replies still buffered).
func expectClosed(t *testing.T, r *bufio.Reader) {
	t.Helper()
	for {
		_, err := r.ReadString('\n')
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the connection stayed open")
		}
		return
	}
}

func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// TestBadInput: wrong arity, non-numeric arguments, unknown commands,
// oversized and malformed requests, connections closed mid-command. Each
// gets a RESP error or a closed connection; the server keeps serving, and
// nothing is half applied.
func TestBadInput(t *testing.T) {
	n := startNode(t, func() Config {
		cfg := testConfig(t, "n1")
		cfg.MaxBulk = 1 << 20
		cfg.MaxCommand = 4 << 20
		return cfg
	}())
	waitFor(t, "leadership", 10*time.Second, n.IsLeader)
	c := newClient(t, n.Addr())
	c.Set(ctx, "a", "1", 0)
	c.Set(ctx, "b", "2", 0)

	// Errors on a connection that stays usable.
	conn := rawConn(t, n.Addr())
	r := bufio.NewReader(conn)
	for _, tc := range []struct {
		req  string
		want string
	}{
		{resp("GET"), "-ERR wrong number of arguments for 'get' command"},
		{resp("GET", "a", "b"), "-ERR wrong number of arguments for 'get' command"},
		{resp("SET", "a"), "-ERR wrong number of arguments for 'set' command"},
		{resp("BF.ADD", "bf"), "-ERR wrong number of arguments for 'bf.add' command"},
		{resp("CF.DEL", "cf", "x", "y"), "-ERR wrong number of arguments for 'cf.del' command"},
		{resp("NOSUCH", "x"), "-ERR unknown command 'NOSUCH', with args beginning with: 'x' "},
		{resp("BF.RESERVE", "r", "x", "10"), "-ERR bad error rate"},
		{resp("BF.RESERVE", "r", "0.1", "1e3"), "-ERR bad capacity"},
		{resp("CF.RESERVE", "r", "-1"), "-Capacity must be at least (BucketSize * 2)"},
		{resp("SCAN", "-1"), "-ERR invalid cursor"},
		{resp("SCAN", "0", "COUNT", "ten"), "-ERR value is not an integer or out of range"},
		{resp("SET", "a", "x", "NX", "XX"), "-ERR syntax error"},
		{resp("SELECT", "one"), "-ERR value is not an integer or out of range"},
		{resp("SET", "", "x"), "-ERR bloomkv: empty keys are not supported"},
		{resp("SET", strings.Repeat("k", 70000), "x"), "-ERR bloomkv: key of 70000 bytes"},
		// A multi-key delete with one bad key deletes nothing.
		{resp("DEL", "a", strings.Repeat("k", 70000), "b"), "-ERR bloomkv: key of 70000 bytes"},
		{resp("MGET", "a", "b"), "*2"},
	} {
		if _, err := io.WriteString(conn, tc.req); err != nil {
			t.Fatal(err)
		}
		if got := readReply(t, r); !strings.HasPrefix(got, tc.want) {
			t.Fatalf("%q: reply %q, want %q", clip([]byte(tc.req)), got, tc.want)
		}
	}
	if got := readReply(t, r) + readReply(t, r) + readReply(t, r) + readReply(t, r); got != "$11$12" {
		t.Fatalf("a and b after the refused DEL: %q", got)
	}

	// Too big: refused before it is buffered, and the connection closed.
	for name, req := range map[string]string{
		"huge bulk length":       "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$999999999999\r\n",
		"bulk just past the max": "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n",
		"too many arguments":     "*99999999\r\n",
		"command too big":        "*6\r\n$3\r\nDEL\r\n" + strings.Repeat("$1000000\r\n"+strings.Repeat("x", 1000000)+"\r\n", 5),
		"negative length":        "*2\r\n$3\r\nGET\r\n$-5\r\n",
		"not a number":           "*2\r\n$3\r\nGET\r\n$abc\r\n",
		"count not a number":     "*x\r\n",
		"long inline line":       strings.Repeat("A", 70<<10),
	} {
		conn := rawConn(t, n.Addr())
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, req)
		r := bufio.NewReader(conn)
		line, err := r.ReadString('\n')
		if err == nil && !strings.HasPrefix(line, "-ERR") {
			t.Fatalf("%s: reply %q, want an error", name, line)
		}
		expectClosed(t, r)
	}
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatal("a refused SET was applied")
	}

	// The server's own reader (issue 29): a protocol error after good
	// pipelined commands answers them first, then the error, then closes;
	// inline commands split as Redis splits them; QUIT answers, closes,
	// and runs nothing pipelined after it.
	for _, tc := range []struct{ name, req, want string }{
		{"good then bad", resp("SET", "pb", "1") + resp("GET", "pb") + "*2\r\n$3\r\nGET\r\n:1\r\n",
			"+OK|$1|1|-ERR Protocol error: expected '$', got ':'"},
		{"unbalanced quotes", "PING\r\nSET k \"v\r\n", "+PONG|-ERR Protocol error: unbalanced quotes in request"},
		{"inline", "SET inl \"a b\\x41\"\r\nGET inl\r\nQUIT\r\nSET after 1\r\n", "+OK|$4|a bA|+OK"},
		{"no CRLF after a bulk", "*1\r\n$4\r\nPINGxx", "-ERR Protocol error: invalid bulk length"},
	} {
		conn := rawConn(t, n.Addr())
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, tc.req)
		r := bufio.NewReader(conn)
		var got []string
		for range strings.Count(tc.want, "|") + 1 {
			got = append(got, readReply(t, r))
		}
		if strings.Join(got, "|") != tc.want {
			t.Fatalf("%s: %q, want %q", tc.name, strings.Join(got, "|"), tc.want)
		}
		expectClosed(t, r)
	}
	if n := c.Exists(ctx, "after").Val(); n != 0 {
		t.Fatal("a SET pipelined after QUIT was applied")
	}

	// A connection closed in the middle of a command: the command is not
	// applied, complete commands before it are, and the server goes on.
	conn = rawConn(t, n.Addr())
	io.WriteString(conn, resp("SET", "whole", "1")+"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$5\r\nval")
	time.Sleep(50 * time.Millisecond)
	conn.Close()
	conn = rawConn(t, n.Addr())
	io.WriteString(conn, "*3\r\n$3\r\nSET\r\n$5\r\nhalf2") // inside a key
	conn.Close()
	waitFor(t, "the whole SET", 5*time.Second, func() bool { return c.Exists(ctx, "whole").Val() == 1 })
	if n := c.Exists(ctx, "half", "half2").Val(); n != 0 {
		t.Fatal("a command cut short was applied")
	}
	if v, err := c.Ping(ctx).Result(); v != "PONG" || err != nil {
		t.Fatalf("PING after bad input: %q, %v", v, err)
	}
	// A client that sends a pipeline of writes and goes away before the
	// replies: the writes are applied or not, each whole, and nothing
	// crashes.
	conn = rawConn(t, n.Addr())
	var b strings.Builder
	for i := range 200 {
		b.WriteString(resp("SET", fmt.Sprint("p", i), strings.Repeat("v", 100)))
	}
	io.WriteString(conn, b.String())
	conn.Close()
	time.Sleep(100 * time.Millisecond)
	vals, err := c.MGet(ctx, "p0", "p199").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if v != nil && v != strings.Repeat("v", 100) {
			t.Fatalf("a pipelined write applied in part: %q", v)
		}
	}
	if v, err := c.Ping(ctx).Result(); v != "PONG" || err != nil {
		t.Fatalf("PING at the end: %q, %v", v, err)
	}
}
