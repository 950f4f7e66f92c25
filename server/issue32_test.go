package server

import (
	"testing"
	"time"
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
