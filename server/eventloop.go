package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/panjf2000/gnet/v2"
)

// The event loop: every client connection served by one goroutine over
// epoll (github.com/panjf2000/gnet/v2), as Redis serves its clients from
// one thread, instead of a goroutine per connection (respconn.go, which
// Config.ConnGoroutines keeps).
//
// Why (issue 29, docs/server.md "Throughput against Redis"): with one
// request per round trip (redis-benchmark -c 50), a connection goroutine
// costs three system calls a request (the read, the reply's write, and
// the read that finds nothing before Go's poller parks it) and a wake-up
// of a goroutine and often of a second thread, which on a small machine
// takes CPU time from the clients. The loop reads a ready connection once
// and writes its replies once, and one epoll_wait serves every connection
// that became ready meanwhile.
//
// Invariants:
//
//   - A connection's reader, reply buffer and burst belong to the loop,
//     except while offloaded is set: then they belong to the one goroutine
//     running a command that has to wait (a read that needs a leadership
//     round or the state to catch up, a command after writes not yet
//     answered, a slow admin command). The loop leaves such a connection
//     alone until that goroutine clears offloaded and wakes it; bytes the
//     client sends meanwhile wait in gnet's buffer.
//   - The loop never waits for raft. A write is handed to the batcher
//     (propose.go) and the connection parks until the completer counts
//     its last outstanding write done, which wakes it (connWrites.notify).
//     The batcher's channel can fill, and then the hand-off waits for
//     the batcher, which never waits for the loop.
//   - Replies go out in the order of the commands, as on a goroutine:
//     a command after pending writes runs only once they are answered.
//   - A client that sends faster than it reads its replies is paused
//     once loopOutLimit bytes of replies wait in gnet's buffer; a ticker
//     wakes paused connections to see whether the buffer drained. What it
//     sends meanwhile is buffered up to loopInLimit, past which the
//     connection is closed, as Redis closes a client past its
//     client-query-buffer-limit.

const (
	loopOutLimit  = 8 << 20 // replies buffered for one connection before it is paused
	loopTick      = 10 * time.Millisecond
	loopInDefault = 1 << 30 // Redis's client-query-buffer-limit
)

// loopServer is the event loop and the connections it serves.
type loopServer struct {
	n   *Node
	cli *gnet.Client

	// inLimit is the most bytes a connection may have sent and not had
	// parsed while it waits (loopInDefault; tests lower it).
	inLimit int

	stopOnce sync.Once

	// Counts for tests and metrics: connections paused for their replies,
	// closed past inLimit, and commands run on a goroutine.
	pauses, overLimit, offloads atomic.Int64

	mu     sync.Mutex
	paused map[*loopConn]struct{} // guarded by mu: waiting for their replies to drain
}

// loopConn is one client connection of the event loop.
type loopConn struct {
	c     *respConn
	gc    gnet.Conn
	b     burst
	start time.Time // the end of the last command (runCommand)

	offloaded atomic.Bool // a goroutine owns c and b (see the invariants)
	open      bool        // between OnOpen and OnClose; loop-owned
	paused    bool        // in loopServer.paused; loop-owned

	// mu orders the end of an offload against OnClose detaching the
	// connection (detach): whichever comes second serves it detached.
	mu       sync.Mutex
	detached *detached // guarded by mu

	// A write refused (bad arguments, too large) while earlier writes
	// wait: its error, answered by the offload after their replies.
	refused       error
	refusedMetric *cmdMetric
}

type loopHandler struct {
	gnet.BuiltinEventEngine
	s *loopServer
}

// startLoop starts the event loop; connections join it with serveLoop.
func (n *Node) startLoop() error {
	s := &loopServer{n: n, inLimit: loopInDefault, paused: make(map[*loopConn]struct{})}
	cli, err := gnet.NewClient(&loopHandler{s: s},
		gnet.WithMulticore(false),
		gnet.WithNumEventLoop(1),
		gnet.WithTicker(true),
		gnet.WithLogger(gnetLogger{n.cfg.Logger}),
	)
	if err != nil {
		return fmt.Errorf("bloomkv/server: event loop: %w", err)
	}
	if err := cli.Start(); err != nil {
		return fmt.Errorf("bloomkv/server: event loop: %w", err)
	}
	s.cli = cli
	n.loop = s
	return nil
}

// enroll hands an accepted connection to the loop; nc is closed either way
// (the loop holds a duplicate of its descriptor).
func (s *loopServer) enroll(nc net.Conn) error {
	n := s.n
	lc := &loopConn{
		c:     &respConn{rd: newRespReader(n.cfg.MaxBulk, n.cfg.MaxCommand), state: connState{stale: n.cfg.StaleReads}, writes: newConnWrites()},
		start: time.Now(),
	}
	_, err := s.cli.EnrollContext(nc, lc)
	return err
}

// stop closes every connection of the loop and stops it; once.
func (s *loopServer) stop() {
	s.stopOnce.Do(func() {
		if err := s.cli.Stop(); err != nil {
			s.n.cfg.Logger.Warn("bloomkv/server: stopping the event loop", "err", err)
		}
	})
}

func (h *loopHandler) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	lc := gc.Context().(*loopConn)
	lc.gc, lc.open = gc, true
	lc.c.writes.notify = func() { _ = gc.Wake(nil) }
	h.s.n.clients.Add(1)
	return nil, gnet.None
}

func (h *loopHandler) OnClose(gc gnet.Conn, err error) gnet.Action {
	lc := gc.Context().(*loopConn)
	if !lc.open {
		return gnet.None
	}
	lc.open = false
	h.s.setPaused(lc, false)
	if errors.Is(err, io.EOF) && h.s.detach(lc) {
		return gnet.None // the detached goroutine counts the client out
	}
	h.s.n.clients.Add(-1)
	return gnet.None
}

// detach hands a connection whose client has shut down its writing half
// (printf ... | nc -N: an end of stream gnet closes the connection at) to
// a goroutine that answers what it still owes: the writes waiting for
// raft, an offloaded command, the commands not yet run. Go's network
// poller serves the rest on a duplicate of the socket, as a goroutine
// connection (serveStream); the client reads the replies and then the
// end. It reports false, and the connection just closes, when nothing is
// owed, or when gnet still holds replies the socket did not take: gnet
// writes those after this returns, and later replies must not overtake
// them. Runs on the loop, in OnClose.
func (s *loopServer) detach(lc *loopConn) bool {
	c, gc := lc.c, lc.gc
	owed := lc.offloaded.Load() || len(lc.b.pending) > 0 || c.rd.buffered() || gc.InboundBuffered() > 0 || len(c.out) > 0
	if !owed || gc.OutboundBuffered() > 0 {
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
	d := &detached{nc: nc, tail: append([]byte(nil), tail...)}
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
	nc   net.Conn
	tail []byte // bytes the client sent that the reader had not taken
}

// serveDetached answers a detached connection's remaining commands as a
// goroutine connection does, then closes it.
func (s *loopServer) serveDetached(lc *loopConn) {
	n, c := s.n, lc.c
	lc.mu.Lock()
	d := lc.detached
	lc.mu.Unlock()
	defer func() {
		d.nc.Close()
		n.clients.Add(-1)
	}()
	c.nc = d.nc
	for r := bytes.NewReader(d.tail); r.Len() > 0; {
		if err := c.rd.fill(r); err != nil {
			return
		}
	}
	if c.closing {
		n.endBurst(c, &lc.b)
		c.flush()
		return
	}
	n.serveStream(c, &lc.b, lc.start)
}

func (h *loopHandler) OnTraffic(gc gnet.Conn) gnet.Action {
	lc := gc.Context().(*loopConn)
	if lc.offloaded.Load() {
		return h.s.holdInput(lc)
	}
	return h.s.serve(lc)
}

// OnTick wakes the paused connections (it runs beside the loop, not in
// it: Wake is safe from any goroutine).
func (h *loopHandler) OnTick() (time.Duration, gnet.Action) {
	s := h.s
	s.mu.Lock()
	for lc := range s.paused {
		_ = lc.gc.Wake(nil)
	}
	s.mu.Unlock()
	return loopTick, gnet.None
}

// holdInput leaves what the client sent in gnet's buffer for later, or
// closes the connection once it holds more than inLimit.
func (s *loopServer) holdInput(lc *loopConn) gnet.Action {
	if lc.gc.InboundBuffered() > s.inLimit {
		s.overLimit.Add(1)
		s.n.cfg.Logger.Warn("bloomkv/server: closing a client past the query buffer limit", "addr", lc.gc.RemoteAddr(), "limit", s.inLimit)
		return gnet.Close
	}
	return gnet.None
}

// serve runs the connection's complete commands until it has to wait:
// for its writes, for a goroutine running a command that blocks, for its
// replies to drain, or for more bytes from the client.
func (s *loopServer) serve(lc *loopConn) gnet.Action {
	n, c, b := s.n, lc.c, &lc.b
	for {
		if c.closing {
			s.flush(lc)
			return gnet.Close
		}
		if lc.gc.OutboundBuffered() > loopOutLimit {
			s.setPaused(lc, true)
			return s.holdInput(lc)
		}
		s.setPaused(lc, false)
		args, err := c.rd.next()
		if err != nil {
			// The commands before the bad one are answered first.
			s.offload(lc, func() {
				n.endBurst(c, b)
				c.WriteError("ERR " + err.Error())
				c.Close()
			})
			return gnet.None
		}
		if args == nil {
			if len(b.pending) > 0 && c.writes.outstanding.Load() != 0 {
				// The completer wakes the connection once its writes are
				// answered; the replies before them go out now.
				if !s.flush(lc) {
					return gnet.None
				}
				return s.holdInput(lc)
			}
			n.endBurst(c, b) // answered: does not wait
			if lc.gc.InboundBuffered() > 0 {
				if err := c.rd.fill(lc.gc); err != nil {
					return gnet.Close
				}
				continue
			}
			s.flush(lc)
			return gnet.None
		}
		if !n.runCommandNow(lc, args) {
			// args stay valid: nothing reads into c.rd until the goroutine
			// hands the connection back.
			s.offload(lc, func() { n.runCommandWaiting(lc, args) })
			return gnet.None
		}
		if len(c.out) >= maxKeptOut && !s.flush(lc) {
			return gnet.None
		}
	}
}

// offload runs fn, which may wait, on a goroutine of its own, which then
// hands the connection back to the loop.
func (s *loopServer) offload(lc *loopConn, fn func()) {
	if !s.flush(lc) {
		return
	}
	s.offloads.Add(1)
	lc.offloaded.Store(true)
	go func() {
		fn()
		lc.mu.Lock()
		if lc.detached != nil {
			// The client shut down its writing half meanwhile, and the
			// loop has let the connection go.
			lc.mu.Unlock()
			s.serveDetached(lc)
			return
		}
		lc.offloaded.Store(false)
		lc.mu.Unlock()
		_ = lc.gc.Wake(nil)
	}()
}

// flush hands the buffered replies to gnet, which writes what the socket
// takes at once and keeps the rest.
//
// It reports whether the connection is still open: a write that fails
// closes it in gnet at once (OnClose runs inside the call), and after that
// nothing may touch gc, whose descriptor a new connection may already
// have.
func (s *loopServer) flush(lc *loopConn) bool {
	c := lc.c
	if len(c.out) == 0 {
		return lc.open
	}
	_, _ = lc.gc.Write(c.out)
	if cap(c.out) > maxKeptOut {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return lc.open
}

func (s *loopServer) setPaused(lc *loopConn, paused bool) {
	if lc.paused == paused {
		return
	}
	lc.paused = paused
	s.mu.Lock()
	if paused {
		s.pauses.Add(1)
		s.paused[lc] = struct{}{}
	} else {
		delete(s.paused, lc)
	}
	s.mu.Unlock()
}

// runCommandNow runs one command on the loop if it can do so without
// waiting, as runCommand would, and reports false, having done nothing,
// if it cannot.
func (n *Node) runCommandNow(lc *loopConn, args [][]byte) bool {
	c, b := lc.c, &lc.b
	var lower [24]byte
	spec := lookupCommand(args[0], &lower)
	waits := len(b.pending) > 0 && c.writes.outstanding.Load() != 0
	switch {
	case spec == nil || (spec.arity > 0 && len(args) != spec.arity) || (spec.arity < 0 && len(args) < -spec.arity):
		if waits {
			return false
		}
	case spec.slow:
		return false
	case spec.kind == kindWrite:
		// Handed to the batcher, as runCommand does; a write refused
		// before it gets there is answered after the writes before it.
		m := n.metrics.cmdList[spec.idx]
		err := n.proposeWrite(c, b, spec, m, args, lc.start)
		switch {
		case err == nil:
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
	lc.start = n.runCommand(c, b, args, lc.start)
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

// gnetLogger passes gnet's warnings and errors to the node's logger and
// drops its chatter.
type gnetLogger struct{ l *slog.Logger }

func (gnetLogger) Debugf(string, ...any) {}
func (gnetLogger) Infof(string, ...any)  {}
func (g gnetLogger) Warnf(format string, args ...any) {
	g.l.Warn("bloomkv/server: event loop: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Errorf(format string, args ...any) {
	g.l.Error("bloomkv/server: event loop: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Fatalf(format string, args ...any) {
	g.l.Error("bloomkv/server: event loop: " + fmt.Sprintf(format, args...))
}
