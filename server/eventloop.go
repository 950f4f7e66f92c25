//go:build unix

package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

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
//   - A connection's reader, reply buffers and burst belong to the loop,
//     except while offloaded is set: then they belong to the one goroutine
//     running a command that has to wait (a read that needs a leadership
//     round or the state to catch up, a command after writes not yet
//     answered, a slow admin command, a write the batcher has no room
//     for). The loop leaves such a connection alone until that goroutine
//     clears offloaded and wakes it; bytes the client sends meanwhile wait
//     in gnet's buffer.
//   - The loop never waits for raft, nor for the batcher: a write is
//     handed over only if the batcher's queue has room, and the
//     connection parks until the completer counts its last outstanding
//     write done, which wakes it (connWrites.notify).
//   - Replies go out in the order of the commands, as on a goroutine:
//     a command after pending writes runs only once they are answered.
//   - The loop writes replies to the socket itself and keeps what the
//     socket does not take (unsent), never gnet: gnet drops what it holds
//     when it closes a connection at the end of its stream, and the
//     replies must survive that (detach). Connections with unsent replies
//     are woken by a ticker to write more; past loopOutLimit of them a
//     connection's commands stop running until they drain.
//   - gnet reads a connection whatever it is waiting for, and cannot be
//     told not to. A connection that has sent more than inLimit bytes the
//     loop has not taken is handed to a goroutine connection (detach),
//     which reads only as it runs commands, so the client is held back by
//     TCP, as the goroutine server holds it back.
//   - A detached connection (the end of its stream with replies owed, or
//     past inLimit) is served by Go's network poller on a duplicate of its
//     socket, as a goroutine connection, from what the loop had not yet
//     parsed or written; it is one of respServer's connections, which
//     Close closes.

const (
	loopOutLimit  = 8 << 20  // unsent replies before a connection's commands stop running
	loopInDefault = 16 << 20 // bytes not taken before a connection goes to a goroutine
	loopTickIdle  = 10 * time.Millisecond
	loopTickBusy  = time.Millisecond // while some connection has unsent replies

	// loopBackoffMax is the longest a connection whose client reads none of
	// its replies waits between the ticker's wake-ups.
	loopBackoffMax = 64 * time.Millisecond
)

// loopServer is the event loop and the connections it serves.
type loopServer struct {
	n   *Node
	cli *gnet.Client

	// inLimit is the most bytes a connection may have sent and the loop
	// not taken (loopInDefault; tests lower it before any connection).
	inLimit int

	stopOnce sync.Once

	// Counts for tests and metrics: connections whose commands stopped for
	// their unsent replies, connections handed to goroutines (past
	// inLimit, or at the end of their stream), and commands run on a
	// goroutine.
	pauses, detaches, offloads atomic.Int64

	mu       sync.Mutex
	draining map[*loopConn]struct{} // guarded by mu: connections with unsent replies
}

// loopConn is one client connection of the event loop.
type loopConn struct {
	c     *respConn
	gc    gnet.Conn
	b     burst
	start time.Time // the end of the last command (runCommand)

	offloaded atomic.Bool   // a goroutine owns c and b (see the invariants)
	open      bool          // between OnOpen and OnClose; loop-owned
	draining  bool          // in loopServer.draining; loop-owned
	unsent    []byte        // replies the socket has not taken: unsent[sent:]; loop-owned
	sent      int           // bytes of unsent already written
	broken    bool          // a write failed: the connection is to close; loop-owned
	demote    bool          // past inLimit: OnClose detaches it; loop-owned
	stopped   bool          // commands stopped for unsent replies; loop-owned
	backoff   time.Duration // between wake-ups while the socket takes nothing; loop-owned
	wakeAt    atomic.Int64  // UnixNano before which the ticker leaves it be

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

// startLoop starts the event loop; connections join it with enroll.
func (n *Node) startLoop() error {
	s := &loopServer{n: n, inLimit: loopInDefault, draining: make(map[*loopConn]struct{})}
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

// counts are the loop's counters for metrics (zero without a loop).
func (s *loopServer) counts() (offloads, detaches, pauses int64) {
	if s == nil {
		return 0, 0, 0
	}
	return s.offloads.Load(), s.detaches.Load(), s.pauses.Load()
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
	h.s.setDraining(lc, false)
	if (lc.demote || errors.Is(err, io.EOF)) && h.s.detach(lc) {
		return gnet.None // the detached goroutine counts the client out
	}
	h.s.n.clients.Add(-1)
	return gnet.None
}

func (h *loopHandler) OnTraffic(gc gnet.Conn) gnet.Action {
	lc := gc.Context().(*loopConn)
	if lc.offloaded.Load() {
		return h.s.hold(lc)
	}
	return h.s.serve(lc)
}

// OnTick wakes the connections with unsent replies to write more (it
// runs beside the loop, not in it: Wake is safe from any goroutine).
func (h *loopHandler) OnTick() (time.Duration, gnet.Action) {
	s := h.s
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for lc := range s.draining {
		if now >= lc.wakeAt.Load() {
			_ = lc.gc.Wake(nil)
		}
	}
	if len(s.draining) > 0 {
		return loopTickBusy, gnet.None
	}
	return loopTickIdle, gnet.None
}

// hold leaves what the client sent in gnet's buffer for later, or, past
// inLimit, has the connection detached to a goroutine (OnClose, after
// gnet closes its side).
func (s *loopServer) hold(lc *loopConn) gnet.Action {
	if lc.gc.InboundBuffered() > s.inLimit {
		lc.demote = true
		return gnet.Close
	}
	return gnet.None
}

// serve runs the connection's complete commands until it has to wait:
// for its writes, for a goroutine running a command that blocks, for its
// replies to drain, or for more bytes from the client.
func (s *loopServer) serve(lc *loopConn) gnet.Action {
	n, c, b := s.n, lc.c, &lc.b
	if lc.unsentLen() > 0 && !s.flush(lc) {
		return gnet.Close
	}
	for {
		if c.closing {
			if !s.flush(lc) {
				return gnet.Close
			}
			if lc.unsentLen() == 0 {
				drainInput(lc.gc.Fd())
				return gnet.Close
			}
			// The ticker wakes it to write the rest. Nothing after QUIT or
			// a protocol error runs: what the client sends is dropped, not
			// held.
			_, _ = lc.gc.Discard(-1)
			return gnet.None
		}
		if lc.unsentLen() > loopOutLimit {
			if !lc.stopped {
				lc.stopped = true
				s.pauses.Add(1)
			}
			return s.hold(lc)
		}
		lc.stopped = false
		args, err := c.rd.next()
		if err != nil {
			// The commands before the bad one are answered first.
			if !s.offload(lc, func() {
				n.endBurst(c, b)
				c.WriteError("ERR " + err.Error())
				c.Close()
			}) {
				return gnet.Close
			}
			return gnet.None
		}
		if args == nil {
			if len(b.pending) > 0 && c.writes.outstanding.Load() != 0 {
				// The completer wakes the connection once its writes are
				// answered; the replies before them go out now.
				if !s.flush(lc) {
					return gnet.Close
				}
				return s.hold(lc)
			}
			n.endBurst(c, b) // answered: does not wait
			if lc.gc.InboundBuffered() > 0 {
				if err := c.rd.fill(lc.gc); err != nil {
					return gnet.Close
				}
				// A command's time starts when it is read, not when the
				// one before it ended: the client may have been idle
				// since (as serveStream).
				lc.start = time.Now()
				continue
			}
			if !s.flush(lc) {
				return gnet.Close
			}
			return gnet.None
		}
		if !n.runCommandNow(lc, args) {
			// args stay valid: nothing reads into c.rd until the goroutine
			// hands the connection back.
			if !s.offload(lc, func() { n.runCommandWaiting(lc, args) }) {
				return gnet.Close
			}
			return gnet.None
		}
		if len(c.out) >= maxKeptOut && !s.flush(lc) {
			return gnet.Close
		}
	}
}

// offload runs fn, which may wait, on a goroutine of its own, which then
// hands the connection back to the loop; false if the connection broke
// writing the replies before it.
func (s *loopServer) offload(lc *loopConn, fn func()) bool {
	if !s.flush(lc) {
		return false
	}
	s.offloads.Add(1)
	lc.offloaded.Store(true)
	go func() {
		fn()
		lc.mu.Lock()
		if lc.detached != nil {
			// The connection was detached meanwhile: the loop has let it
			// go.
			lc.mu.Unlock()
			s.serveDetached(lc)
			return
		}
		lc.offloaded.Store(false)
		lc.mu.Unlock()
		_ = lc.gc.Wake(nil)
	}()
	return true
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
