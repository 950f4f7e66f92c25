package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPipelineOneEntry: a pipelined burst of writes from one connection
// becomes one raft entry (issue 29), and each command still gets its own
// answer, in order, errors included.
func TestPipelineOneEntry(t *testing.T) {
	n, c := singleNode(t)
	if err := c.Set(ctx, "s", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := n.Raft().LastIndex()
	groups := n.metrics.groups.Load()
	pipe := c.Pipeline()
	var sets []*redis.StatusCmd
	for i := range 200 {
		sets = append(sets, pipe.Set(ctx, fmt.Sprint("k", i), fmt.Sprint("v", i), 0))
	}
	wrong := pipe.BFAdd(ctx, "s", "item") // a string: WRONGTYPE, alone
	added := pipe.BFAdd(ctx, "bf", "item")
	again := pipe.BFAdd(ctx, "bf", "item") // sees the add before it
	del := pipe.Del(ctx, "k0", "k1", "nope")
	nx := pipe.SetNX(ctx, "k2", "other", 0)
	pipe.Exec(ctx)
	for i, s := range sets {
		if s.Err() != nil {
			t.Fatalf("SET %d: %v", i, s.Err())
		}
	}
	if err := wrong.Err(); err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
		t.Fatalf("BF.ADD on a string: %v", err)
	}
	if a, err := added.Result(); !a || err != nil {
		t.Fatalf("first BF.ADD = %v, %v", a, err)
	}
	if a, err := again.Result(); a || err != nil {
		t.Fatalf("second BF.ADD = %v, %v", a, err)
	}
	if d, err := del.Result(); d != 2 || err != nil {
		t.Fatalf("DEL = %v, %v", d, err)
	}
	if ok, err := nx.Result(); ok || err != nil {
		t.Fatalf("SET NX on a key the burst set = %v, %v", ok, err)
	}
	// 205 writes; the server may read the burst in a few reads, and the
	// batcher may send the first write alone before the rest queue. Under
	// the race detector the connection queues writes slower than raft
	// commits them, so the burst can take several entries (7 and 9 seen
	// with -race when four entries could be in flight, before issue 29's
	// one); 12 still means over 17 writes per entry, not one each.
	entries := n.Raft().LastIndex() - before
	if entries > 12 || n.metrics.groups.Load()-groups > 12 {
		t.Fatalf("205 pipelined writes took %d raft entries (%d groups), want a few", entries, n.metrics.groups.Load()-groups)
	}
	if v := c.Get(ctx, "k199").Val(); v != "v199" {
		t.Fatalf("k199 = %q", v)
	}
}

// TestManyClientsShareEntries: writes from many connections at once share
// raft entries, and linearizable reads from many connections share
// leadership confirmations. Three nodes: the only voter of a one-node
// cluster confirms nothing (TestSoleVoterReads).
func TestManyClientsShareEntries(t *testing.T) {
	cl := newCluster(t, 3, nil)
	_, n := cl.leader()
	const clients, each = 32, 25
	before := n.Raft().LastIndex()
	rounds := n.metrics.readRounds.Load()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, PoolSize: 1, DisableIdentity: true})
			defer c.Close()
			for j := range each {
				k := fmt.Sprintf("c%d-%d", i, j)
				if err := c.Set(ctx, k, k, 0).Err(); err != nil {
					errs <- err
					return
				}
				if v, err := c.Get(ctx, k).Result(); v != k || err != nil {
					errs <- fmt.Errorf("GET %s after its SET = %q, %v", k, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries := n.Raft().LastIndex() - before
	reads := n.metrics.readRounds.Load() - rounds
	t.Logf("%d writes in %d raft entries; %d reads in %d leadership confirmations", clients*each, entries, clients*each, reads)
	// Sequential clients would need one entry per write; any sharing
	// shows here, and on a loaded machine there is plenty.
	if entries >= clients*each*9/10 {
		t.Fatalf("%d writes took %d entries: writes of different connections do not share entries", clients*each, entries)
	}
	if reads == 0 || reads >= clients*each*9/10 {
		t.Fatalf("%d reads took %d confirmation rounds: reads do not share them", clients*each, reads)
	}
}

// TestSoleVoterReads: the only voter serves linearizable reads without a
// ReadIndex round; once a second voter joins, every run of reads is
// confirmed by a round again, and reads still see every acknowledged
// write.
func TestSoleVoterReads(t *testing.T) {
	n, c := singleNode(t)
	if err := c.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if v, err := c.Get(ctx, "k").Result(); v != "1" || err != nil {
			t.Fatalf("GET k = %q, %v", v, err)
		}
	}
	if r, s := n.metrics.readRounds.Load(), n.metrics.soleVoterReads.Load(); r != 0 || s != 10 {
		t.Fatalf("one voter: %d rounds, %d sole-voter checks for 10 reads; want 0 and 10", r, s)
	}

	cfg := testConfig(t, "n2")
	cfg.Join = n.Addr()
	n2 := startNode(t, cfg)
	waitFor(t, "n2 as a voter", 10*time.Second, func() bool {
		f := n.Raft().GetConfiguration()
		return f.Error() == nil && len(f.Configuration().Servers) == 2
	})
	if err := c.Set(ctx, "k", "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sole := n.metrics.soleVoterReads.Load()
	for range 10 {
		if v, err := c.Get(ctx, "k").Result(); v != "2" || err != nil {
			t.Fatalf("GET k with two voters = %q, %v", v, err)
		}
	}
	if r, s := n.metrics.readRounds.Load(), n.metrics.soleVoterReads.Load()-sole; r < 1 || s != 0 {
		t.Fatalf("two voters: %d rounds, %d sole-voter checks for 10 reads; want >= 1 and 0", r, s)
	}
	waitCaughtUp(t, n2, n)

	// Back to one voter: the reads skip the rounds again (the check is
	// asked again after the change, voterCheck).
	if err := c.Do(ctx, "RAFT.REMOVE", n2.ID()).Err(); err != nil {
		t.Fatal(err)
	}
	rounds := n.metrics.readRounds.Load()
	for range 10 {
		if v, err := c.Get(ctx, "k").Result(); v != "2" || err != nil {
			t.Fatalf("GET k after the removal = %q, %v", v, err)
		}
	}
	if r := n.metrics.readRounds.Load() - rounds; r != 0 {
		t.Fatalf("one voter again: %d rounds for 10 reads, want 0", r)
	}

	// A voter added on Node.Raft directly, bypassing RAFT.JOIN, ends the
	// check as well (raft's PeerObservation); the address need not
	// answer for the configuration to name it, and what soleVoterNow must
	// check is only the latest configuration: raft (v1.7.2) appends it
	// before AddVoter answers, whether or not it commits.
	if !n.soleVoterNow() {
		t.Fatal("one voter, before n3: soleVoterNow false")
	}
	err := n.Raft().AddVoter("n3", "127.0.0.1:1", 0, time.Second).Error()
	latest := n.Raft().GetConfiguration().Configuration()
	if len(latest.Servers) != 2 {
		t.Fatalf("AddVoter n3: %v; configuration %+v, want two voters", err, latest)
	}
	if n.soleVoterNow() {
		t.Fatal("the latest configuration names n3 as a voter, and soleVoterNow still says this node is the only one")
	}
}

// TestConnWritesReused: a connection reuses its proposals and their
// encodings once every write it handed over is answered (propose.go,
// connWrites). Bursts of more writes than one slab holds, from several
// connections at once, with SET ... GET replies that carry the value
// before: every reply and every stored value is the one written, burst
// after burst; a reuse while a write was in flight would show another
// burst's bytes (and the race detector would see it).
func TestConnWritesReused(t *testing.T) {
	n, _ := singleNode(t)
	var wg sync.WaitGroup
	for cl := range 3 {
		c := newClient(t, n.Addr())
		wg.Go(func() {
			for round := range 4 {
				pipe := c.Pipeline()
				var olds []*redis.StatusCmd
				for i := range 150 {
					key := fmt.Sprint("c", cl, "k", i)
					olds = append(olds, pipe.SetArgs(ctx, key, fmt.Sprint("r", round, "-", i), redis.SetArgs{Get: true}))
				}
				if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
					t.Error(err)
					return
				}
				for i, o := range olds {
					want := fmt.Sprint("r", round-1, "-", i)
					if round == 0 {
						want = ""
					}
					if o.Val() != want {
						t.Errorf("client %d round %d: SET GET c%dk%d returned %q, want %q", cl, round, cl, i, o.Val(), want)
						return
					}
				}
			}
			for i := range 150 {
				if v := c.Get(ctx, fmt.Sprint("c", cl, "k", i)).Val(); v != fmt.Sprint("r3-", i) {
					t.Errorf("client %d: c%dk%d = %q", cl, cl, i, v)
					return
				}
			}
		})
	}
	wg.Wait()
}
