package server

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testConfig is a node on loopback ports with raft timings short enough
// for tests on a loaded 2-core machine.
func testConfig(t testing.TB, id string) Config {
	return Config{
		ID:                 id,
		Dir:                t.TempDir(),
		RaftAddr:           "127.0.0.1:0",
		Addr:               "127.0.0.1:0",
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
		ApplyTimeout:       5 * time.Second,
		LogOutput:          io.Discard,
		LogLevel:           "error",
	}
}

func startNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// singleNode starts a one-node cluster and waits until it leads.
func singleNode(t testing.TB) (*Node, *redis.Client) {
	n := startNode(t, testConfig(t, "n1"))
	waitFor(t, "leadership", 10*time.Second, n.IsLeader)
	return n, newClient(t, n.Addr())
}

// rawConn is a plain TCP connection for byte-level protocol tests.
func rawConn(t testing.TB, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

var ctx = context.Background()
