package server

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// TestEarlyReplyReadSeesWrite: a plain SET answered once durable (before
// it is applied) is seen by any linearizable read that begins after the
// reply, on another connection, while other clients keep the state
// machine busy (early.go: the read index is at least durableIndex).
func TestEarlyReplyReadSeesWrite(t *testing.T) {
	n, _ := singleNode(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := rawConn(t, n.Addr())
			r := bufio.NewReader(c)
			burst := strings.Repeat(fmt.Sprintf("SET load%d %s\r\n", w, strings.Repeat("x", 512)), 64)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := io.WriteString(c, burst); err != nil {
					return
				}
				for range 64 {
					if _, err := r.ReadSlice('\n'); err != nil {
						return
					}
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	a, b := rawConn(t, n.Addr()), rawConn(t, n.Addr())
	ar, br := bufio.NewReader(a), bufio.NewReader(b)
	before := n.metrics.earlyReplies.Load()
	for i := range 500 {
		if _, err := fmt.Fprintf(a, "SET k v%d\r\n", i); err != nil {
			t.Fatal(err)
		}
		if got := string(readReplies(t, ar, 1)); got != "+OK\r\n" {
			t.Fatalf("SET %d: %q", i, got)
		}
		if _, err := io.WriteString(b, "GET k\r\n"); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("v%d", i)
		if got := string(readReplies(t, br, 1)); got != fmt.Sprintf("$%d\r\n%s\r\n", len(want), want) {
			t.Fatalf("GET after the reply to SET k %s: %q", want, got)
		}
	}
	if early := n.metrics.earlyReplies.Load() - before; early < 500 {
		t.Fatalf("%d replies once durable, want every SET's (>= 500)", early)
	}
}

// TestEarlyReplyOnlyPlainSet: only a plain SET is answered before it is
// applied; SET NX/XX/GET, DEL and INCR, whose replies depend on the state,
// are answered after, with their results.
func TestEarlyReplyOnlyPlainSet(t *testing.T) {
	n, _ := singleNode(t)
	c := rawConn(t, n.Addr())
	r := bufio.NewReader(c)
	do := func(req, want string) {
		t.Helper()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		if got := string(readReplies(t, r, 1)); got != want {
			t.Fatalf("%q: %q, want %q", req, got, want)
		}
	}
	do("SET a 1\r\n", "+OK\r\n")
	before := n.metrics.earlyReplies.Load()
	do("SET a 2 NX\r\n", "$-1\r\n")
	do("SET a 3 XX GET\r\n", "$1\r\n1\r\n")
	do("INCR a\r\n", ":4\r\n")
	do("DEL a\r\n", ":1\r\n")
	do("SET b 1 XX\r\n", "$-1\r\n")
	if got := n.metrics.earlyReplies.Load() - before; got != 0 {
		t.Fatalf("%d early replies to writes whose replies depend on the state", got)
	}
	do("SET b 1\r\n", "+OK\r\n")
	if got := n.metrics.earlyReplies.Load() - before; got != 1 {
		t.Fatalf("%d early replies to one plain SET", got)
	}
}

// TestNoEarlyReplyWithPeers: with other voters, a write is committed only
// when a majority has it, so nothing is answered before it is applied.
func TestNoEarlyReplyWithPeers(t *testing.T) {
	cl := newCluster(t, 3, nil)
	_, leader := cl.leader()
	c := newClient(t, leader.Addr())
	for i := range 20 {
		if err := c.Set(ctx, fmt.Sprint("k", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := leader.metrics.earlyReplies.Load(); got != 0 {
		t.Fatalf("%d early replies on a leader with two other voters", got)
	}
}
