package server

import (
	"fmt"
	"log/slog"
	"net"
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

func (h *loopHandler) OnClose(gc gnet.Conn, _ error) gnet.Action {
	lc := gc.Context().(*loopConn)
	if lc.open {
		lc.open = false
		h.s.n.clients.Add(-1)
		h.s.mu.Lock()
		delete(h.s.paused, lc)
		h.s.mu.Unlock()
	}
	return gnet.None
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
				s.flush(lc)
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
			s.offload(lc, func() { lc.start = n.runCommand(c, b, args, lc.start) })
			return gnet.None
		}
		if len(c.out) >= maxKeptOut {
			s.flush(lc)
		}
	}
}

// offload runs fn, which may wait, on a goroutine of its own, which then
// hands the connection back to the loop.
func (s *loopServer) offload(lc *loopConn, fn func()) {
	s.flush(lc)
	s.offloads.Add(1)
	lc.offloaded.Store(true)
	go func() {
		fn()
		lc.offloaded.Store(false)
		_ = lc.gc.Wake(nil)
	}()
}

// flush hands the buffered replies to gnet, which writes what the socket
// takes at once and keeps the rest.
func (s *loopServer) flush(lc *loopConn) {
	c := lc.c
	if len(c.out) == 0 {
		return
	}
	_, _ = lc.gc.Write(c.out) // a failed write closes the connection in gnet
	if cap(c.out) > maxKeptOut {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
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
		// Handed to the batcher, as runCommand does.
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
				n.flushWrites(c, b)
				m := n.metrics.cmdList[spec.idx]
				c.WriteError(err.Error())
				end := time.Now()
				m.observeSpan(lc.start, end)
				lc.start = end
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
