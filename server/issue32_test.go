package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/server/raftstore"
	"github.com/redis/go-redis/v9"
)

// TestReadAfterRestartNoWrite: after a restart, a one-node cluster's
// commit index counts raft's no-op and the election barrier, entries that
// never reach the state machine. A linearizable read must not wait for the
// state machine to reach them (it waited the whole apply timeout and
// answered TRYAGAIN until some write was applied).
func TestReadAfterRestartNoWrite(t *testing.T) {
	cfg := testConfig(t, "n1")
	addrs := freeAddrs(t, 2)
	// The same client address after the restart: the leader finds it
	// registered and writes no SetNode, which would close the gap.
	cfg.RaftAddr, cfg.Addr = addrs[0], addrs[1]
	n := startNode(t, cfg)
	waitFor(t, "leadership", 10*time.Second, n.IsLeader)
	c := newClient(t, n.Addr())
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: each restart adds a no-op and a barrier
		c.Close()
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		n = startNode(t, cfg)
		waitFor(t, "leadership after the restart", 10*time.Second, n.IsLeader)
		if ci, fa := n.Raft().CommitIndex(), n.FSM().Applied(); ci <= fa {
			t.Fatalf("commit index %d, state machine %d: no gap, the test tests nothing", ci, fa)
		}
		c = newClient(t, n.Addr())
		start := time.Now()
		v, err := c.Get(ctx, "k").Result()
		if took := time.Since(start); err != nil || v != "v" || took > time.Second {
			t.Fatalf("GET after the restart: %q, %v, in %v", v, err, took)
		}
	}
}

// TestLargestCommand: a command is sized as its raft log entry before it
// reaches raft. BF.MADD whose entry is exactly raftstore.MaxData bytes is
// applied; one byte more is refused with an error, and the leader stays
// leader (the log store used to refuse the entry, and the leader stepped
// down: any client could unseat it at will). Both commands are within the
// bulk and command limits.
func TestLargestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("sends two 64 MiB commands")
	}
	n, _ := singleNode(t)
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, MaxRetries: -1, DisableIdentity: true,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { c.Close() })

	// Five items: four of 13 MiB, the last sized so that the entry is
	// exactly MaxData bytes.
	const each = 13 << 20
	items := make([][]byte, 5)
	for i := range 4 {
		items[i] = bytes.Repeat([]byte{byte('a' + i)}, each)
	}
	items[4] = []byte{}
	base := len(bfAddCommand([]byte("big"), items).Encode())
	// The last item's length takes 4 bytes, not 1, once it is ~13 MiB.
	items[4] = bytes.Repeat([]byte{'e'}, raftstore.MaxData-base-3)
	if got := len(bfAddCommand([]byte("big"), items).Encode()); got != raftstore.MaxData {
		t.Fatalf("the entry is %d bytes, want %d", got, raftstore.MaxData)
	}
	args := func() []any {
		a := []any{"BF.MADD", "big"}
		for _, it := range items {
			a = append(a, it)
		}
		return a
	}
	term := n.Raft().Stats()["term"]

	got, err := c.Do(ctx, args()...).Int64Slice()
	if err != nil || fmt.Sprint(got) != "[1 1 1 1 1]" {
		t.Fatalf("the largest command: %v, %v", got, err)
	}
	items[4] = append(items[4], 'e') // one byte more
	err = c.Do(ctx, args()...).Err()
	if err == nil || !strings.Contains(err.Error(), "log entry would be") {
		t.Fatalf("one byte more: %v", err)
	}
	if !n.IsLeader() || n.Raft().Stats()["term"] != term {
		t.Fatalf("the leader stepped down: leader %v, term %s (was %s)", n.IsLeader(), n.Raft().Stats()["term"], term)
	}
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a step-down would show by now
	if !n.IsLeader() || n.Raft().Stats()["term"] != term {
		t.Fatalf("the leader stepped down: term %s (was %s)", n.Raft().Stats()["term"], term)
	}
}

// TestGlobEdges: SCAN MATCH patterns at the edges of Redis's glob syntax,
// each with the answer Redis's stringmatchlen gives (redis-server 7.0).
// The ones marked * answered differently before issue 32.
func TestGlobEdges(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"a[b", "ab", true},    // * an unclosed class takes what it has
		{"a[b", "a[b", false},  // *
		{"a[bc", "ac", true},   // *
		{"[", "[", false},      // * an unclosed empty class matches nothing
		{"*[", "a[", false},    // *
		{"[^]", "x", true},     // * ] right after [^ closes: any byte
		{"[^]", "]", true},     // *
		{"x[^", "xy", true},    // * unclosed and negated
		{"[]", "]", false},     // ] right after [ closes: nothing
		{"[]a]", "a]", false},  //
		{"[a-]", "]", true},    // * the range runs from ']' to 'a', unclosed
		{"[a-]", "_", true},    // *
		{"[a-]", "-", false},   // *
		{"[a-]", "b", false},   //
		{`a\`, `a\`, true},     // * a trailing backslash is itself
		{`a\`, "a", false},     //
		{`[\]]`, "]", true},    // an escaped ] in a class
		{`[\`, `\`, true},      // * a class ending in a lone backslash
		{`[a\-z]`, "-", true},  // an escaped - is no range
		{`[a\-z]`, "b", false}, //
		{"[-a]", "-", true},    //
		{"[z-a]", "m", true},   // a range in either order
		{"[^a-c]", "d", true},  //
		{"[^a-c]", "b", false}, //
		{"[!a]", "!", true},    // ! does not negate
		{"[!a]", "b", false},   //
		{`\*`, "*", true},      //
		{`\*`, "a", false},     //
		{"a*a", "aa", true},    //
		{"a*a", "a", false},    //
		{"*?", "a", true},      //
		{"?", "", false},       //
	} {
		if got := globMatch([]byte(tc.p), []byte(tc.s)); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, Redis says %v", tc.p, tc.s, got, tc.want)
		}
	}
}

// readWhole reads one whole RESP reply, its lines joined by "|".
func readWhole(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line := readReply(t, r)
	if len(line) > 0 && line[0] == '*' {
		n, _ := strconv.Atoi(line[1:])
		parts := []string{line}
		for range n {
			parts = append(parts, readWhole(t, r))
		}
		return strings.Join(parts, "|")
	}
	if len(line) > 0 && line[0] == '$' && line != "$-1" {
		return line + "|" + readReply(t, r)
	}
	return line
}

// TestRedisReplies: replies where kvserver used to differ from Redis
// 7.0 and RedisBloom (issue 32, section 4), each with the reply they give.
// Every case but the ones marked "same" failed before.
func TestRedisReplies(t *testing.T) {
	n, _ := singleNode(t)
	conn := rawConn(t, n.Addr())
	r := bufio.NewReader(conn)
	const wrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, tc := range []struct {
		req  string // raw bytes
		want string // the whole reply, lines joined by "|"
	}{
		{resp("SET", "s", "v"), "+OK"}, // same
		// Reserve on a key of another kind: WRONGTYPE, not "item exists".
		{resp("BF.RESERVE", "s", "0.1", "100"), wrongType},
		{resp("CF.RESERVE", "s", "100"), wrongType},
		{resp("BF.RESERVE", "b", "0.1", "10"), "+OK"},              // same
		{resp("BF.RESERVE", "b", "0.1", "10"), "-ERR item exists"}, // same
		{resp("CF.RESERVE", "b", "100"), wrongType},
		// CF.RESERVE: capacity at least bucket size x 2, errors without a code.
		{resp("CF.RESERVE", "c", "7"), "-Capacity must be at least (BucketSize * 2)"},
		{resp("CF.RESERVE", "c", "0"), "-Capacity must be at least (BucketSize * 2)"},
		{resp("CF.RESERVE", "c", "x"), "-Bad capacity"},
		{resp("CF.RESERVE", "c", "8", "EXPANSION", "x"), "-Couldn't parse EXPANSION"},
		{resp("CF.RESERVE", "c", "8", "EXPANSION", "-1"), "-EXPANSION parameter needs to be a non-negative integer"},
		{resp("CF.RESERVE", "c", "8", "EXPANSION"), "-ERR wrong number of arguments for 'cf.reserve' command"},
		{resp("CF.RESERVE", "c", "8"), "+OK"},
		{resp("CF.RESERVE", "c", "8"), "-ERR item exists"}, // same
		{resp("CF.DEL", "none", "x"), "-Not found"},
		{resp("CF.INFO", "none"), "-ERR not found"},
		// BF.RESERVE's EXPANSION without a value; with NONSCALING.
		{resp("BF.RESERVE", "e", "0.1", "10", "EXPANSION"), "-ERR no expansion"},
		{resp("BF.RESERVE", "e", "0.1", "10", "EXPANSION", "2", "NONSCALING"), "-Nonscaling filters cannot expand"},
		// A full NONSCALING filter: the reply ends at the first error.
		{resp("BF.RESERVE", "ns", "0.01", "2", "NONSCALING"), "+OK"}, // same
		{resp("BF.MADD", "ns", "a", "b", "c", "d"), "*3|:1|:1|-ERR non scaling filter is full"},
		{resp("BF.MADD", "ns", "a", "c", "d"), "*2|:0|-ERR non scaling filter is full"},
		{resp("BF.INSERT", "ns", "ITEMS", "e", "f"), "*1|-ERR non scaling filter is full"},
		{resp("BF.ADD", "ns", "g"), "-ERR non scaling filter is full"}, // same
		{resp("BF.CARD", "ns"), ":2"}, // same
		// BF.INSERT's errors, as RedisBloom words them.
		{resp("BF.INSERT", "i", "CAPACITY", "x", "ITEMS", "a"), "-Bad capacity"},
		{resp("BF.INSERT", "i", "ERROR", "x", "ITEMS", "a"), "-Bad error rate"},
		{resp("BF.INSERT", "i", "EXPANSION", "x", "ITEMS", "a"), "-Bad expansion"},
		{resp("BF.INSERT", "i", "ERROR", "2", "ITEMS", "a"), "-Bad argument received"},
		{resp("BF.INSERT", "i", "CAPACITY", "0", "ITEMS", "a"), "-Bad argument received"},
		{resp("BF.INSERT", "i", "FOO", "ITEMS", "a"), "-Unknown argument received"},
		{resp("BF.INSERT", "i", "CAPACITY", "10", "ITEMS"), "-ERR wrong number of arguments for 'bf.insert' command"},
		{resp("BF.INSERT", "i", "NONSCALING", "EXPANSION", "3", "ITEMS", "a"), "*1|:1"},
		{resp("BF.INFO", "i", "EXPANSION"), "*1|$-1"},
		// Requests Redis ignores.
		{"*0\r\n" + resp("PING"), "+PONG"},
		{"*-1\r\n" + resp("PING"), "+PONG"},
		{"*-7\r\n*0\r\n" + resp("ECHO", "x"), "$1|x"},
		// An unknown command names its first arguments.
		{resp("FOO", "a", "b"), "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' "},
		{resp("foo"), "-ERR unknown command 'foo', with args beginning with: "},
		{resp("FOO", "a\r\nb"), "-ERR unknown command 'FOO', with args beginning with: 'a  b' "},
		{resp("FOO", strings.Repeat("x", 200), "y"), "-ERR unknown command 'FOO', with args beginning with: '" + strings.Repeat("x", 128) + "' "},
		// DEL of the empty key: it does not exist.
		{resp("DEL", ""), ":0"},
		{resp("DEL", "", "s", ""), ":1"},
		{resp("EXISTS", ""), ":0"}, // same
		// SCAN COUNT that is not a number; one below 1.
		{resp("SCAN", "0", "COUNT", "x"), "-ERR value is not an integer or out of range"},
		{resp("SCAN", "0", "COUNT", "0"), "-ERR syntax error"}, // same
		{resp("SET", "_", "1"), "+OK"},                         // same
		{resp("SCAN", "0", "MATCH", "[a-]", "COUNT", "100"), "*2|$1|0|*1|$1|_"},
	} {
		if _, err := io.WriteString(conn, tc.req); err != nil {
			t.Fatal(err)
		}
		if got := readWhole(t, r); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", clip([]byte(tc.req)), got, tc.want)
		}
	}

	// A "*-1" cut between two reads is still ignored.
	io.WriteString(conn, "*")
	time.Sleep(20 * time.Millisecond)
	io.WriteString(conn, "-1\r")
	time.Sleep(20 * time.Millisecond)
	io.WriteString(conn, "\n"+resp("PING"))
	if got := readWhole(t, r); got != "+PONG" {
		t.Errorf("*-1 in three reads, then PING: %q", got)
	}

	// A full cuckoo filter that does not grow: "Filter is full", no code.
	io.WriteString(conn, resp("CF.RESERVE", "full", "8", "EXPANSION", "0"))
	readWhole(t, r)
	var got string
	for i := 0; i < 100 && !strings.HasPrefix(got, "-"); i++ {
		io.WriteString(conn, resp("CF.ADD", "full", fmt.Sprint(i)))
		got = readWhole(t, r)
	}
	if got != "-Filter is full" {
		t.Errorf("CF.ADD to a full filter: %q", got)
	}

	// Bad lengths: Redis's protocol errors, then the connection closes.
	for req, want := range map[string]string{
		"*2\r\n$3\r\nGET\r\n$-5\r\n": "-ERR Protocol error: invalid bulk length",
		"*2\r\n$3\r\nGET\r\n$x\r\n":  "-ERR Protocol error: invalid bulk length",
		"*x\r\n":                     "-ERR Protocol error: invalid multibulk length",
		"*\r\n":                      "-ERR Protocol error: invalid multibulk length",
		"*99999999\r\n":              "-ERR Protocol error: invalid multibulk length",
	} {
		c := rawConn(t, n.Addr())
		io.WriteString(c, req)
		r := bufio.NewReader(c)
		if got := readReply(t, r); got != want {
			t.Errorf("%q: %q, want %q", req, got, want)
		}
		expectClosed(t, r)
	}
}
