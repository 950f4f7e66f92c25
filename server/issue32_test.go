package server

import (
	"bytes"
	"fmt"
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
