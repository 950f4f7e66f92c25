package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/server/fsm"
	"github.com/bloomkv/bloomkv/server/raftstore"
	"github.com/hashicorp/raft"
)

// Group commit of writes, and ReadIndex rounds for linearizable reads
// (issue 29).
//
// Writes. Every connection hands its writes to one batcher, in the order
// the client sent them. While earlier groups are being committed, the
// writes that arrive queue up; the batcher then puts everything queued
// (up to groupMaxBytes and groupMaxCmds) into one raft entry, an
// fsm.OpMulti whose commands the state machine applies in order, each with
// its own result, exactly as one entry each would be applied
// (fsm.TestMultiSameAsEntries). A pipelined burst from one client, and the
// writes of many clients, so cost one log entry, one fsync and one
// replication round together rather than one per command. At most
// groupsInFlight entries are in raft at once: bounding them is what makes
// writes queue, and so group, while the log is busy. One, as Redis's event
// loop has one AOF write and fsync under way: every write that arrives
// while a group commits goes into the next group, one entry, one fsync
// and one apply. With four (the bound before, so that a group could be
// stored while the one before was applied), a group went to raft as soon
// as a slot was free, small, and raft stored it in the same fsync as its
// neighbours anyway; each still cost an entry, an apply and a wake-up of
// its own, and a write that came first after a commit went out with few
// others while the rest waited a whole fsync behind it. Measured (issue
// 29, one node, alternating, load 4-5): SET at -c 50 24k/s (median of 5)
// with four, 31k/s with one; SET -P 16 130-180k against 168-192k; three
// nodes 10-13k against 17k and 61-73k against 86-95k. A lone write on an
// idle node goes out at once, alone, encoded as it always was.
//
// Reads. A linearizable read needs a read index (the commit index when the
// read began) confirmed by a quorum still following this leader. Reads
// that arrive while a confirmation is under way wait for the next one,
// which starts after they arrived: one VerifyLeader serves every read of a
// round, however many connections they come from.

const (
	groupMaxBytes  = 1 << 20 // a group's encoded commands; one larger command goes alone
	groupMaxCmds   = 4096
	groupsInFlight = 1
)

// proposal is one client write on its way through the batcher.
type proposal struct {
	data []byte      // the command's encoding
	w    *connWrites // the connection's tracker; the completer counts p done there
	res  *fsm.Result // set before p is counted done
	err  error       // the error to give the client, likewise
	// read is when the command was read (its wait is observed when its
	// group goes to raft), answered when its group's result came (its
	// reply's delay is observed when the reply is written); metrics only.
	read, answered time.Time
}

// connWrites tracks a connection's writes in the batcher. The completer
// answers groups in log order, so a connection's writes finish in the
// order it sent them, and the connection needs to know only when none is
// left: one counter and one wake-up per burst of writes, where a channel
// per write cost two allocations and a close each (issue 29). The
// proposals and their encodings live in buffers the connection reuses
// once every write it handed over is done.
type connWrites struct {
	outstanding atomic.Int64
	wake        chan struct{} // capacity 1: a send when outstanding reaches 0
	// notify, if set, is called too when outstanding reaches 0: it wakes
	// an event loop connection (eventloop.go). Set before the first write.
	notify func()

	// Owned by whoever serves the connection (its goroutine, or the event
	// loop and its offloads in turn).
	slab []proposal // proposals not yet handed out are slab[used:]
	used int
	enc  []byte // the encodings of the proposals handed out
	lost bool   // a wait ended by shutdown: the buffers may still be in use
}

func newConnWrites() *connWrites { return &connWrites{wake: make(chan struct{}, 1)} }

// done counts one proposal of w answered; p's result is set before.
func (w *connWrites) done() {
	if w.outstanding.Add(-1) == 0 {
		select {
		case w.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
		if w.notify != nil {
			w.notify()
		}
	}
}

// proposalSlab is how many proposals a connection allocates at once.
const proposalSlab = 64

// group is one raft entry of proposals.
type group struct {
	props []*proposal
	f     raft.ApplyFuture
	start time.Time
}

// errWouldWait is propose's answer when the batcher's queue is full and
// the caller may not wait (the event loop).
var errWouldWait = errors.New("the batcher's queue is full")

// propose queues a write for the batcher, or refuses it when its log entry
// would be larger than the raft log stores: handed to raft, the log store
// would fail to store it and the leader would step down (issue 32). With
// wait false, a full queue returns errWouldWait and leaves w as it was.
func (n *Node) propose(w *connWrites, c *fsm.Command, read time.Time, wait bool) (*proposal, error) {
	start := len(w.enc)
	w.enc = c.AppendEncode(w.enc)
	data := w.enc[start:len(w.enc):len(w.enc)]
	if len(data) > raftstore.MaxData {
		w.enc = w.enc[:start]
		return nil, fmt.Errorf("ERR bloomkv: this command's log entry would be %d bytes, more than the %d one raft log entry holds; send it as several commands", len(data), raftstore.MaxData)
	}
	if w.used == len(w.slab) {
		// A new slab; the proposals of the old one stay where they are
		// until they are done and it is dropped.
		w.slab, w.used = make([]proposal, proposalSlab), 0
	}
	p := &w.slab[w.used]
	w.used++
	*p = proposal{data: data, w: w, read: read}
	w.outstanding.Add(1)
	if !wait {
		select {
		case n.proposals <- p:
			return p, nil
		default:
			// Undone before anyone saw it: the completer counts only
			// proposals the batcher took.
			w.outstanding.Add(-1)
			w.used--
			w.enc = w.enc[:start]
			return nil, errWouldWait
		}
	}
	select {
	case n.proposals <- p:
		return p, nil
	case <-n.stop:
		w.outstanding.Add(-1)
		return nil, errShuttingDown
	}
}

var errShuttingDown = errors.New("ERR the server is shutting down: the write may or may not be applied")

// waitWrites waits until every write w handed over is answered. It fails
// only when the node shuts down: the writes may or may not be applied,
// and the batcher may still hold them.
func (n *Node) waitWrites(w *connWrites) error {
	for w.outstanding.Load() != 0 {
		select {
		case <-w.wake:
		case <-n.stop:
			w.lost = true
			return errShuttingDown
		}
	}
	return nil
}

// reuse lets w hand out its buffers again once every write is answered
// and its reply written; never after a wait that shutdown cut short.
func (w *connWrites) reuse() {
	if w.lost || w.outstanding.Load() != 0 {
		return
	}
	clear(w.slab[:w.used]) // the results of the last burst
	w.used = 0
	if cap(w.enc) > 1<<20 { // after a large write: let it go
		w.enc = nil
	}
	w.enc = w.enc[:0]
}

// runBatcher gathers queued proposals into groups and hands each to raft.
func (n *Node) runBatcher() {
	defer n.bg.Done()
	var carry *proposal // the proposal that did not fit the last group
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-n.proposals:
			case <-n.stop:
				return
			}
		}
		// Wait for room in raft; meanwhile writes queue up.
		select {
		case n.inFlight <- struct{}{}:
		case <-n.stop:
			return
		}
		g := &group{props: []*proposal{first}}
		size := len(first.data)
	gather:
		for len(g.props) < groupMaxCmds && size < groupMaxBytes {
			select {
			case p := <-n.proposals:
				if size+len(p.data) > groupMaxBytes {
					carry = p
					break gather
				}
				g.props = append(g.props, p)
				size += len(p.data)
			default:
				break gather
			}
		}
		var data []byte
		if len(g.props) == 1 {
			// A copy: the proposal's bytes are the connection's buffer,
			// which it reuses once the write is answered, and raft must
			// own what it is handed.
			data = append([]byte(nil), first.data...)
		} else {
			encs := make([][]byte, len(g.props))
			for i, p := range g.props {
				encs[i] = p.data
			}
			data = fsm.EncodeMulti(encs)
		}
		g.start = time.Now()
		g.f = n.raft.Apply(data, n.cfg.ApplyTimeout)
		n.metrics.groupSubmitted(len(g.props), len(data))
		// After Apply, off the way to raft; the completer sees g only
		// once it is sent below.
		for _, p := range g.props {
			n.metrics.writeWait.Observe(g.start.Sub(p.read).Seconds())
		}
		select {
		case n.groups <- g:
		case <-n.stop:
			return
		}
	}
}

// runCompleter answers the groups' proposals in log order as raft
// applies them, and makes room for the next group.
func (n *Node) runCompleter() {
	defer n.bg.Done()
	for {
		var g *group
		select {
		case g = <-n.groups:
		case <-n.stop:
			return
		}
		err := g.f.Error()
		answered := time.Now()
		n.metrics.groupDone(answered.Sub(g.start), err)
		<-n.inFlight
		if err != nil {
			err = n.applyErr(err)
			for _, p := range g.props {
				p.err = err
				p.answered = answered
				p.w.done()
			}
			continue
		}
		r, _ := g.f.Response().(*fsm.Result)
		for i, p := range g.props {
			switch {
			case r == nil:
				p.err = errors.New("ERR internal: no result")
			case len(g.props) == 1:
				p.res = r
			case len(r.Multi) != len(g.props):
				p.err = fmt.Errorf("ERR internal: %d results for %d commands", len(r.Multi), len(g.props))
			default:
				p.res = r.Multi[i]
			}
			p.answered = answered
			p.w.done()
		}
	}
}

// readRound is one leadership confirmation shared by the reads that
// joined it before it started.
type readRound struct {
	done  chan struct{}
	index uint64 // the read index: the commit index when the round began
	at    uint64 // the election barrier's index the round was confirmed under
	err   error
}

// readGate runs one confirmation round at a time; the reads that arrive
// meanwhile gather in next.
type readGate struct {
	mu      sync.Mutex
	next    *readRound // guarded by mu
	running bool       // guarded by mu: a goroutine runs rounds
}

// readIndex joins the next confirmation round and returns it once done.
func (n *Node) readIndex() *readRound {
	g := &n.reads
	g.mu.Lock()
	if g.next == nil {
		g.next = &readRound{done: make(chan struct{})}
	}
	r := g.next
	if !g.running {
		g.running = true
		go n.runReadRounds()
	}
	g.mu.Unlock()
	<-r.done
	return r
}

func (n *Node) runReadRounds() {
	g := &n.reads
	for {
		g.mu.Lock()
		r := g.next
		g.next = nil
		if r == nil {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		start := time.Now()
		r.index, r.at, r.err = n.confirmLeadership()
		n.metrics.readRoundDone(time.Since(start))
		close(r.done)
	}
}

// waitReady lets a read that reaches a leader between its election and
// its election barrier wait for the barrier (bounded by the apply
// timeout) rather than answer TRYAGAIN: writes are taken in that window,
// so a client that just wrote and then reads would otherwise be refused
// (TestSingleNodeDefault saw it after a restart). It polls: the window is
// short and rare, and a notification would add state for no gain.
func (n *Node) waitReady() {
	if n.readyAt.Load() != 0 || n.raft.State() != raft.Leader {
		return
	}
	deadline := time.Now().Add(n.cfg.ApplyTimeout)
	for n.readyAt.Load() == 0 && n.raft.State() == raft.Leader && time.Now().Before(deadline) {
		select {
		case <-n.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// confirmLeadership notes the commit index, then has a quorum confirm
// that this node still leads (VerifyLeader): no other leader can have
// committed anything the read index misses.
func (n *Node) confirmLeadership() (index, at uint64, err error) {
	at = n.readyAt.Load()
	if at == 0 || n.raft.State() != raft.Leader {
		return 0, 0, n.errNotLeader()
	}
	index = n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return 0, 0, n.errNotLeader()
	}
	if n.readyAt.Load() != at {
		// Re-elected in between: index may count the new term's no-op
		// and barrier, which at does not cover.
		return 0, 0, errors.New("TRYAGAIN leadership changed during the read; retry")
	}
	return index, at, nil
}

// soleVoterRead is the read index of a leader that is the only voter of
// its latest configuration, taken without a round, or ok false when the
// configuration has other voters.
//
// With one voter, raft's VerifyLeader asks no one either: the quorum is
// the leader itself, and it answers as soon as its leader loop sees the
// request. What that hop establishes, that the node leads at a moment
// after the read began, the state read after the commit index here does
// too. No other node can have committed an entry this one lacks: a
// commit needs a majority of the committing leader's configuration, and
// the latest configuration, which raft takes as soon as a change is
// appended and before it commits, names this node alone, so a voter
// added later can win an election only after this node stops leading.
// readyAt unchanged across the check rules out a re-election in between,
// as in confirmLeadership. The saving is the hand-off to the round
// goroutine and raft's leader loop and back, for every read of a
// one-node cluster (docs/server.md, "Throughput against Redis").
//
// Whether this node is the only voter comes from soleVoterCheck, which
// asks raft once per term and membership change (voterCheck).
func (n *Node) soleVoterRead() (*readRound, bool) {
	at := n.readyAt.Load()
	index := n.raft.CommitIndex()
	if !n.soleVoterNow() {
		return nil, false
	}
	if at == 0 || n.raft.State() != raft.Leader || n.readyAt.Load() != at {
		return &readRound{err: n.errNotLeader()}, true
	}
	n.metrics.soleVoterReads.Add(1)
	return &readRound{index: index, at: at}, true
}

// voterCheck is what soleVoterNow found out about the latest
// configuration: whether it names this node its only voter, while this
// node led in term, with no membership change begun since cfgGen was gen.
//
// raft's GetConfiguration allocates a future and a channel per call, 5.5%
// of the CPU time of a one-node cluster under GET load (issue 29), and
// the answer changes only in two ways. On a leader, only by a membership
// change this leader appends: Node makes those (RAFT.JOIN, RAFT.REMOVE)
// through changeMembership, which makes cfgGen odd before it asks raft
// and even again after raft answered, by which time raft has taken the
// new configuration; the PeerObservation raft emits as it starts or
// stops replicating to a peer also moves cfgGen, for a change made on
// Node.Raft directly. On a follower, by the entries of another leader;
// to lead again after them, this node must win a later term. A check is
// therefore good for as long as cfgGen is unchanged and even and the node
// leads in the same term: one node leads at most once per term.
type voterCheck struct {
	term uint64
	gen  uint64
	sole bool
}

// soleVoterNow reports whether the latest configuration, at a moment
// after the call began, names this node its only voter; false also when
// the node does not lead (the caller checks leadership after).
func (n *Node) soleVoterNow() bool {
	if c := n.voters.Load(); c != nil {
		// State before term: raft sets a new term before it makes the
		// node a candidate, and a candidate before a leader, so a leader
		// seen here with the check's term is the leader of that term.
		if n.raft.State() == raft.Leader && n.raft.CurrentTerm() == c.term && n.cfgGen.Load() == c.gen {
			return c.sole
		}
	}
	gen := n.cfgGen.Load()
	term := n.raft.CurrentTerm()
	if n.raft.State() != raft.Leader {
		return false
	}
	cfg := n.raft.GetConfiguration() // answered at once from a copy (raft v1.7.2)
	if cfg.Error() != nil {
		return false
	}
	voters, self := 0, false
	for _, s := range cfg.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || s.ID == n.id
		}
	}
	sole := voters == 1 && self
	// Leader in term both before and after the configuration was read:
	// the same leadership throughout, so only changeMembership can have
	// changed it, and cfgGen says whether one began.
	if gen%2 == 0 && n.raft.State() == raft.Leader && n.raft.CurrentTerm() == term {
		n.voters.Store(&voterCheck{term: term, gen: gen, sole: sole})
	}
	return sole
}

// changeMembership runs one membership change (AddVoter, RemoveServer) and
// waits for raft's answer, with cfgGen odd meanwhile (voterCheck).
func (n *Node) changeMembership(change func() raft.Future) error {
	n.cfgMu.Lock()
	defer n.cfgMu.Unlock()
	n.cfgGen.Add(1)
	defer n.cfgGen.Add(1)
	return change().Error()
}

// readBarrier makes a linearizable read safe: the node is the leader,
// still (a quorum answered after the read began), and its state includes
// every entry committed before the read began (the read index).
//
// The commit index also counts entries that never reach the state
// machine: raft's no-op at the start of each term and the election
// barrier. The state machine's applied index therefore stops short of the
// commit index until the next write, and waiting for it to get there
// stalled every read after a restart or an election (issue 32). A read
// index at or below the election barrier is covered by it (raft answers
// a barrier once the state machine has applied everything before it);
// one above it is a command or configuration entry of this term, which
// the state machine does apply, so waiting for it ends.
func (n *Node) readBarrier() error {
	n.waitReady()
	if n.readyAt.Load() == 0 || n.raft.State() != raft.Leader {
		return n.errNotLeader() // no round needed to say so
	}
	r, ok := n.soleVoterRead()
	if !ok {
		r = n.readIndex()
	}
	if r.err != nil {
		return r.err
	}
	if r.index <= r.at || n.fsm.Applied() >= r.index {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	if err := n.fsm.WaitApplied(ctx, r.index); err != nil {
		return fmt.Errorf("TRYAGAIN the state did not catch up with the commit index in time")
	}
	return nil
}
