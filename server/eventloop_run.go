//go:build unix

package server

import (
	"time"

	"github.com/hashicorp/raft"
)

// Running commands on the event loop: what can run without waiting runs
// there; the rest goes to an offload goroutine (eventloop.go).

// runCommandNow runs one command on the loop if it can do so without
// waiting, as runCommand would, and reports false, having done nothing,
// if it cannot.
func (n *Node) runCommandNow(lc *loopConn, args [][]byte) bool {
	c, b := lc.c, &lc.b
	var lower [24]byte
	spec := lookupCommand(args[0], &lower)
	waits := len(b.pending) > 0 && c.writes.outstanding.Load() != 0
	switch {
	case spec == nil || !spec.arityOK(len(args)):
		if waits {
			return false
		}
	case spec.slow:
		return false
	case spec.kind == kindWrite:
		// Handed to the batcher, as runCommand does; a write refused
		// before it gets there is answered after the writes before it.
		m := n.metrics.cmdList[spec.idx]
		err := n.proposeWrite(c, b, spec, m, args, lc.start, false)
		switch {
		case err == nil:
		case err == errWouldWait:
			return false // runCommand waits for room on a goroutine
		case waits:
			lc.refused, lc.refusedMetric = err, m
			return false
		default:
			n.flushWrites(c, b) // nothing outstanding: does not wait
			lc.answerError(m, err)
		}
		return true
	case spec.kind == kindRead:
		if waits {
			return false
		}
		if !c.state.stale && !b.checked {
			err, ok := n.readBarrierNow()
			if !ok {
				return false
			}
			if err != nil {
				n.flushWrites(c, b) // nothing outstanding: does not wait
				lc.answerError(n.metrics.cmdList[spec.idx], err)
				return true
			}
			b.checked = true
		}
	default:
		if waits {
			return false
		}
	}
	lc.start = n.runSpec(c, b, spec, args, lc.start)
	return true
}

// runCommandWaiting runs, on an offload goroutine, the command that
// runCommandNow could not run on the loop.
func (n *Node) runCommandWaiting(lc *loopConn, args [][]byte) {
	if err := lc.refused; err != nil {
		lc.refused = nil
		n.flushWrites(lc.c, &lc.b)
		lc.answerError(lc.refusedMetric, err)
		return
	}
	lc.start = n.runCommand(lc.c, &lc.b, args, lc.start)
}

// answerError writes err as the reply of the command that began at
// lc.start.
func (lc *loopConn) answerError(m *cmdMetric, err error) {
	lc.c.WriteError(err.Error())
	end := time.Now()
	m.observeSpan(lc.start, end)
	lc.start = end
}

// readBarrierNow is readBarrier where it needs no wait: on the only voter
// of its cluster (no leadership round) whose state has reached the read
// index. ok is false when readBarrier would wait.
func (n *Node) readBarrierNow() (err error, ok bool) {
	if n.readyAt.Load() == 0 {
		if n.raft.State() == raft.Leader {
			return nil, false // readBarrier waits for the election barrier
		}
		return n.errNotLeader(), true
	}
	if n.raft.State() != raft.Leader {
		return n.errNotLeader(), true
	}
	r, sole := n.soleVoterRead()
	if !sole {
		return nil, false
	}
	if r.err != nil {
		return r.err, true
	}
	if r.index <= r.at || n.fsm.Applied() >= r.index {
		return nil, true
	}
	return nil, false
}
