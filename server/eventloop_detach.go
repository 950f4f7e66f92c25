//go:build unix

package server

import (
	"bytes"
	"net"
	"os"
	"time"
)

// Detaching: handing a connection of the event loop to a goroutine
// connection on a duplicate of its socket (eventloop.go, the invariants).

// detach hands a connection to a goroutine connection (serveStream) on
// a duplicate of its socket, with what it still owes: the writes waiting
// for raft, an offloaded command, the commands not yet run, the replies
// not yet written. Two cases: the client shut down its writing half
// (printf ... | nc -N: gnet closes a connection at the end of its stream),
// so that it still gets every reply; and a client past inLimit, so that
// TCP holds it back. It reports false, and the connection just closes,
// when nothing is owed (at the end of a stream) or the socket cannot be
// duplicated. Runs on the loop, in OnClose.
func (s *loopServer) detach(lc *loopConn) bool {
	c, gc := lc.c, lc.gc
	owed := lc.offloaded.Load() || len(lc.b.pending) > 0 || c.rd.buffered() || gc.InboundBuffered() > 0 || len(c.out) > 0 || lc.unsentLen() > 0
	if (!owed && !lc.demote) || lc.broken || gc.OutboundBuffered() > 0 {
		return false
	}
	fd, err := gc.Dup()
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "client")
	nc, err := net.FileConn(f) // its own duplicate: f is closed below
	f.Close()
	if err != nil {
		return false
	}
	tail, _ := gc.Next(-1)
	c.nc = nc
	if !s.n.respSrv.add(c) {
		nc.Close() // the node is closing
		return false
	}
	s.detaches.Add(1)
	d := &detached{tail: append([]byte(nil), tail...), unsent: lc.unsent[lc.sent:]}
	lc.unsent, lc.sent = nil, 0
	lc.mu.Lock()
	lc.detached = d
	running := lc.offloaded.Load() // its goroutine takes over at the end
	lc.mu.Unlock()
	if !running {
		go s.serveDetached(lc)
	}
	return true
}

// detached is what a detached connection goes on with.
type detached struct {
	tail   []byte // bytes the client sent that the reader had not taken
	unsent []byte // replies the socket had not taken
}

// serveDetached answers a detached connection's remaining commands as a
// goroutine connection does, then closes it.
func (s *loopServer) serveDetached(lc *loopConn) {
	n, c := s.n, lc.c
	lc.mu.Lock()
	d := lc.detached
	lc.mu.Unlock()
	defer n.respSrv.done(c, n)
	if _, err := c.nc.Write(d.unsent); err != nil {
		return
	}
	for r := bytes.NewReader(d.tail); r.Len() > 0; {
		if err := c.rd.fill(r); err != nil {
			return
		}
	}
	// The tail's commands start now, as the loop's do when it fills its
	// reader (serve), not when the command before them ended.
	lc.start = time.Now()
	if c.closing {
		n.endBurst(c, &lc.b)
		c.flush()
		return
	}
	// The burst's leader check covered the commands before it; the tail
	// holds bytes read after it, perhaps after the node stopped leading,
	// and the goroutine server checks anew for every read of the stream.
	lc.b.checked = false
	n.serveStream(c, &lc.b, lc.start)
}
