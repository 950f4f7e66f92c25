package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/server/internal/freeport"
	"github.com/redis/go-redis/v9"
)

// freeAddrs returns n loopback addresses with ports free a moment ago,
// below the ephemeral range (internal/freeport). A restarted node must
// come back on the raft address the cluster knows it by, so the cluster
// tests cannot let the kernel pick at each start.
func freeAddrs(t testing.TB, n int) []string {
	var addrs []string
	for range n {
		a, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, a)
	}
	return addrs
}

// cluster is three nodes of one cluster in this process.
type cluster struct {
	t     testing.TB
	cfgs  []Config
	nodes []*Node // nil: stopped
}

func newCluster(t testing.TB, n int, tweak func(*Config)) *cluster {
	t.Helper()
	// A port freeAddrs found free can still be taken before a node binds
	// it (by another test that picked it too, or, where freeport falls
	// back to the ephemeral range, by an outgoing connection): then the
	// whole cluster starts again on new ports.
	for attempt := 1; ; attempt++ {
		cl, err := tryCluster(t, n, tweak)
		if err == nil {
			return cl
		}
		if !strings.Contains(err.Error(), "address already in use") || attempt == 5 {
			t.Fatal(err)
		}
		t.Logf("cluster start, attempt %d: %v; again on other ports", attempt, err)
	}
}

func tryCluster(t testing.TB, n int, tweak func(*Config)) (*cluster, error) {
	cl := &cluster{t: t}
	raftAddrs := freeAddrs(t, n)
	var peers []Peer
	for i := range n {
		peers = append(peers, Peer{ID: fmt.Sprint("n", i+1), RaftAddr: raftAddrs[i]})
	}
	for i := range n {
		cfg := testConfig(t, peers[i].ID)
		cfg.RaftAddr = raftAddrs[i]
		cfg.Peers = peers
		if tweak != nil {
			tweak(&cfg)
		}
		node, err := Start(cfg)
		if err != nil {
			for _, started := range cl.nodes {
				started.Close()
			}
			return nil, err
		}
		t.Cleanup(func() { node.Close() })
		cl.cfgs = append(cl.cfgs, cfg)
		cl.nodes = append(cl.nodes, node)
	}
	return cl, nil
}

// leader waits for a leader among the running nodes, ready for reads.
func (cl *cluster) leader() (int, *Node) {
	cl.t.Helper()
	var idx int
	waitFor(cl.t, "a leader", 15*time.Second, func() bool {
		for i, n := range cl.nodes {
			if n != nil && n.IsLeader() {
				idx = i
				return true
			}
		}
		return false
	})
	return idx, cl.nodes[idx]
}

func (cl *cluster) stop(i int) {
	if err := cl.nodes[i].Close(); err != nil {
		cl.t.Fatalf("stopping %s: %v", cl.cfgs[i].ID, err)
	}
	cl.nodes[i] = nil
}

func (cl *cluster) restart(i int) *Node {
	cl.nodes[i] = startNode(cl.t, cl.cfgs[i])
	return cl.nodes[i]
}

// waitCaughtUp waits until node n has applied the leader's last index.
func waitCaughtUp(t *testing.T, n, leader *Node) {
	t.Helper()
	want := leader.Raft().AppliedIndex()
	waitFor(t, n.ID()+" catching up to index "+fmt.Sprint(want), 20*time.Second, func() bool {
		return n.FSM().Applied() >= want
	})
}

// staleClient reads a node's own state (READONLY on every connection).
func staleClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true, PoolSize: 1,
		OnConnect: func(ctx2 context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx2).Err() }})
	t.Cleanup(func() { c.Close() })
	return c
}

// write applies SETs (and DELs, for an empty value) through the leader,
// pipelined, and retries them all on another leader when leadership moves
// underneath (they are idempotent), as a client would. It returns the
// leader that acknowledged them.
func (cl *cluster) write(kvs [][2]string) *Node {
	cl.t.Helper()
	var last error
	for range 10 {
		_, leader := cl.leader()
		c := newClient(cl.t, leader.Addr())
		pipe := c.Pipeline()
		for _, kv := range kvs {
			if kv[1] == "" {
				pipe.Del(ctx, kv[0])
			} else {
				pipe.Set(ctx, kv[0], kv[1], 0)
			}
		}
		_, last = pipe.Exec(ctx)
		if last == nil {
			return leader
		}
		cl.t.Logf("retrying %d writes: %v", len(kvs), last)
		time.Sleep(100 * time.Millisecond)
	}
	cl.t.Fatalf("writes failed: %v", last)
	return nil
}

// checkKeys checks that every key of want has its value on c.
func checkKeys(t *testing.T, c *redis.Client, who string, want map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	for len(keys) > 0 {
		batch := keys[:min(200, len(keys))]
		keys = keys[len(batch):]
		vals, err := c.MGet(ctx, batch...).Result()
		if err != nil {
			t.Fatalf("%s: MGET: %v", who, err)
		}
		for i, k := range batch {
			if v, _ := vals[i].(string); v != want[k] {
				t.Fatalf("%s: %s = %v, want %q (an acknowledged write is missing)", who, k, vals[i], want[k])
			}
		}
	}
}

// TestClusterFailover: writes through the leader; a follower sends
// writers to the leader; the leader stops while a client writes; a new
// leader is elected and holds every acknowledged write, filters included;
// the old leader restarts and catches up through a snapshot, because the
// survivors truncated their logs past what it has.
func TestClusterFailover(t *testing.T) {
	cl := newCluster(t, 3, func(c *Config) {
		c.SnapshotThreshold = 64
		c.TrailingLogs = 16
		c.SnapshotInterval = 50 * time.Millisecond
	})
	acked := make(map[string]string)

	// Pipelined writes, all acknowledged.
	var kvs [][2]string
	for i := range 200 {
		kvs = append(kvs, [2]string{fmt.Sprint("k", i), fmt.Sprint("v", i)})
		acked[fmt.Sprint("k", i)] = fmt.Sprint("v", i)
	}
	cl.write(kvs)
	for {
		_, leader := cl.leader()
		added, err := newClient(t, leader.Addr()).BFAdd(ctx, "bf", "x").Result()
		if err == nil {
			if !added {
				t.Fatal("BF.ADD of a new item = 0")
			}
			break
		}
		t.Logf("retrying BF.ADD: %v", err)
	}

	// A follower answers a write with the leader's client address, and a
	// linearizable read the same way; with READONLY it reads its state.
	// (Retried if an election comes between: the race detector slows the
	// nodes down enough for one now and then.)
	var li, fi int
	var leader *Node
	for try := 0; ; try++ {
		li, leader = cl.leader()
		fi = (li + 1) % 3
		fc := newClient(t, cl.nodes[fi].Addr())
		werr, rerr := fc.Set(ctx, "x", "y", 0).Err(), fc.Get(ctx, "k1").Err()
		if werr != nil && werr.Error() == "NOTLEADER "+leader.Addr() && rerr != nil && rerr.Error() == werr.Error() && leader.IsLeader() {
			break
		}
		if try == 5 {
			t.Fatalf("SET, GET on a follower: %v, %v; want NOTLEADER %s", werr, rerr, leader.Addr())
		}
	}
	lc := newClient(t, leader.Addr())
	waitCaughtUp(t, cl.nodes[fi], leader)
	if v, err := staleClient(t, cl.nodes[fi].Addr()).Get(ctx, "k1").Result(); v != "v1" || err != nil {
		t.Fatalf("READONLY GET on a follower = %q, %v", v, err)
	}
	if lc.Exists(ctx, "x").Val() != 0 || staleClient(t, cl.nodes[fi].Addr()).Exists(ctx, "x").Val() != 0 {
		t.Fatal("the refused write was applied")
	}

	// A client writes one key at a time while the leader stops: every
	// write acknowledged before the stop must survive.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			k, v := fmt.Sprint("during", i), fmt.Sprint("d", i)
			if err := lc.Set(ctx, k, v, 0).Err(); err != nil {
				return
			}
			mu.Lock()
			acked[k] = v
			mu.Unlock()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	cl.stop(li)
	wg.Wait()
	oldLast := leader.Raft().LastIndex()
	mu.Lock()
	t.Logf("%d writes acknowledged before the leader stopped", len(acked))
	mu.Unlock()

	ni, newLeader := cl.leader()
	if ni == li {
		t.Fatal("the stopped node leads")
	}
	nc := newClient(t, newLeader.Addr())
	checkKeys(t, nc, "new leader", acked)
	if ok, err := nc.BFExists(ctx, "bf", "x").Result(); !ok || err != nil {
		t.Fatalf("BF.EXISTS on the new leader = %v, %v", ok, err)
	}
	other := 3 - li - ni
	waitCaughtUp(t, cl.nodes[other], newLeader)
	checkKeys(t, staleClient(t, cl.nodes[other].Addr()), "the other survivor", acked)

	// Writes while the old leader is down, then a snapshot on both
	// survivors, which truncates their logs past the old leader's.
	kvs = kvs[:0]
	for i := range 300 {
		kvs = append(kvs, [2]string{fmt.Sprint("after", i), fmt.Sprint("a", i)})
		acked[fmt.Sprint("after", i)] = fmt.Sprint("a", i)
	}
	kvs = append(kvs, [2]string{"k0", ""})
	delete(acked, "k0")
	// A pipeline's writes share one log entry (issue 29): 31 pipelines
	// make the 31 entries that carry the log past TrailingLogs.
	for len(kvs) > 0 {
		b := min(10, len(kvs))
		newLeader = cl.write(kvs[:b])
		kvs = kvs[b:]
	}
	ni = slices.Index(cl.nodes, newLeader)
	other = 3 - li - ni
	for _, i := range []int{ni, other} {
		waitCaughtUp(t, cl.nodes[i], newLeader)
		if err := newClient(t, cl.nodes[i].Addr()).Do(ctx, "RAFT.SNAPSHOT").Err(); err != nil {
			t.Fatalf("RAFT.SNAPSHOT on %s: %v", cl.cfgs[i].ID, err)
		}
	}
	if first, _ := newLeader.logs.FirstIndex(); first <= oldLast+1 {
		t.Fatalf("the leader's log starts at %d, the stopped node's ends at %d: no snapshot needed", first, oldLast)
	}

	// The old leader restarts, catches up, and its state was installed
	// from a snapshot.
	old := cl.restart(li)
	of, _ := old.logs.FirstIndex()
	ol, _ := old.logs.LastIndex()
	waitCaughtUp(t, old, newLeader)
	if m := old.FSM().Metrics(); m.Restores == 0 {
		var bounds []string
		for i, n := range cl.nodes {
			f, _ := n.logs.FirstIndex()
			l, _ := n.logs.LastIndex()
			bounds = append(bounds, fmt.Sprintf("%s(%d): log %d-%d leader=%v", cl.cfgs[i].ID, i, f, l, n.IsLeader()))
		}
		t.Fatalf("the restarted node caught up without a snapshot install: %+v; oldLast %d, restarted log %d-%d; li %d ni %d; %v", m, oldLast, of, ol, li, ni, bounds)
	}
	oc := staleClient(t, old.Addr())
	checkKeys(t, oc, "the restarted node", acked)
	if n := oc.Exists(ctx, "k0").Val(); n != 0 {
		t.Fatal("a key deleted while the node was down is back")
	}
	if ok, _ := oc.BFExists(ctx, "bf", "x").Result(); !ok {
		t.Fatal("the restarted node lost the filter")
	}
	// It is a follower now and sends writers to the leader.
	if err := newClient(t, old.Addr()).Set(ctx, "x", "y", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOTLEADER ") {
		t.Fatalf("SET on the restarted follower: %v", err)
	}
}

// TestJoin: a one-node cluster grows by -join: the new node asks through
// the leader's address, is added as a voter, receives the state, and a
// third node joining through the second is sent on to the leader
// (NOTLEADER) and added too. The second runs with -stale-reads.
func TestJoin(t *testing.T) {
	first := startNode(t, testConfig(t, "n1"))
	waitFor(t, "leadership", 10*time.Second, first.IsLeader)
	c := newClient(t, first.Addr())
	for i := range 50 {
		if err := c.Set(ctx, fmt.Sprint("k", i), fmt.Sprint(i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cfg2 := testConfig(t, "n2")
	cfg2.Join = first.Addr()
	cfg2.StaleReads = true // -stale-reads: every connection reads locally
	second := startNode(t, cfg2)
	cfg3 := testConfig(t, "n3")
	cfg3.Join = second.Addr() // a follower: the join is redirected
	third := startNode(t, cfg3)

	cf := first.Raft().GetConfiguration()
	if err := cf.Error(); err != nil {
		t.Fatal(err)
	}
	if n := len(cf.Configuration().Servers); n != 3 {
		t.Fatalf("%d servers in the configuration, want 3", n)
	}
	c.Set(ctx, "late", "x", 0)
	// n2 serves reads without READONLY; n3 (linearizable by default)
	// sends them to the leader (checked once it has caught up, so it
	// knows the leader).
	for _, n := range []*Node{second, third} {
		waitCaughtUp(t, n, first)
		sc := staleClient(t, n.Addr())
		if n == second {
			sc = newClient(t, n.Addr())
		}
		if v, err := sc.Get(ctx, "k49").Result(); v != "49" || err != nil {
			t.Fatalf("%s: k49 = %q, %v", n.ID(), v, err)
		}
		if v, _ := sc.Get(ctx, "late").Result(); v != "x" {
			t.Fatalf("%s: late = %q", n.ID(), v)
		}
	}
	if err := newClient(t, third.Addr()).Get(ctx, "k1").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOTLEADER ") {
		t.Fatalf("GET on a follower without -stale-reads: %v", err)
	}
}
