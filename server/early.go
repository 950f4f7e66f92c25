package server

import (
	"github.com/bloomkv/bloomkv/server/fsm"
	"github.com/bloomkv/bloomkv/server/raftstore"
	"github.com/hashicorp/raft"
)

// Replies once durable (issue 29). On a leader that is the only voter of
// its cluster, a write entry is committed the moment the leader's own log
// has it on disk: a majority of one. A plain SET's reply is OK whatever the
// state holds, so it can be sent then, before raft hands the entry to
// the state machine and the state machine applies it, which on one node
// took a sixth of the commit cycle (docs/server.md, "Replies once
// durable"). Every other write is answered after it is applied, as its
// reply depends on the state.
//
// Invariants:
//
//   - Only a plain SET (no NX, XX or GET: proposal.early) is answered
//     early, only for the write group in flight (inFlightGroup), only
//     when this node leads, is ready and is the only voter of the latest
//     configuration, and only after the log store returned from the fsync
//     of that group's entry.
//   - durableIndex is raised to the entry's index before any of its
//     replies is counted done, and every linearizable read takes its read
//     index as at least durableIndex (soleVoterRead, confirmLeadership),
//     so a read that begins after an early reply waits until the state
//     machine has applied that write.
//   - The group records which proposals it answered (acked); the
//     completer answers only the others. It must not look at an answered
//     proposal: its connection may already be reusing it.
//   - The entry is committed (the only voter has it on disk), so a crash
//     after the reply loses nothing: at restart the node commits and
//     applies its log.

// setOK is the result of every plain SET.
var setOK = &fsm.Result{N: 1}

// durableStore is the raft log store with the early replies hooked in
// after StoreLogs.
type durableStore struct {
	*raftstore.Store
	n *Node
}

func (s durableStore) StoreLogs(logs []*raft.Log) error {
	if err := s.Store.StoreLogs(logs); err != nil {
		return err
	}
	s.n.answerDurable(logs)
	return nil
}

// answerDurable answers the plain SETs of the group in flight if logs
// holds its entry and this node is the only voter. It runs in raft's
// leader loop, right after the fsync.
func (n *Node) answerDurable(logs []*raft.Log) {
	g := n.inFlightGroup.Load()
	if g == nil || g.early == 0 || len(g.data) == 0 {
		return
	}
	var index uint64
	for _, l := range logs {
		if l.Type == raft.LogCommand && len(l.Data) == len(g.data) && &l.Data[0] == &g.data[0] {
			index = l.Index
		}
	}
	if index == 0 || n.readyAt.Load() == 0 || !n.soleVoterNow() {
		return
	}
	for {
		cur := n.durableIndex.Load()
		if index <= cur || n.durableIndex.CompareAndSwap(cur, index) {
			break
		}
	}
	acked := make([]bool, len(g.props))
	for i, p := range g.props {
		acked[i] = p.early
	}
	g.acked = acked
	for i, p := range g.props {
		if acked[i] {
			p.res = setOK
			p.w.done()
		}
	}
	n.metrics.earlyReplies.Add(uint64(g.early))
}
