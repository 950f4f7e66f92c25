package server

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The goroutine server (Config.ConnGoroutines, and the connections the
// event loop detaches; eventloop.go serves the rest): one goroutine per
// client connection reads what the client sent, runs every complete
// command in it (a pipelined burst), appends the replies to one buffer
// and writes it with one system call, then reads again. Nothing is
// allocated per command on the way in or out (issue 29; redcon, the
// library before, copied each command, built an argument slice for it
// and grew its reply buffer per burst).

// respConn is one client connection. Its fields belong to the
// connection's goroutine, except nc, which Close (Node.Close) may close
// from another.
type respConn struct {
	nc      net.Conn
	rd      *respReader
	out     []byte // replies not yet written
	state   connState
	writes  *connWrites // its writes in the batcher (propose.go)
	closing bool        // QUIT: write what is buffered, then close
}

// maxKeptOut is the reply buffer a connection keeps between bursts; a
// larger one (a KEYS reply, say) is let go after it is written.
const maxKeptOut = 64 << 10

// respServer tracks the open connections so that Close can end them.
type respServer struct {
	mu     sync.Mutex
	conns  map[*respConn]struct{} // guarded by mu
	closed bool                   // guarded by mu: no new connections
}

// serveRESP accepts connections on ln until it is closed.
func (n *Node) serveRESP(ln net.Listener) {
	delay := time.Duration(0)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait and retry,
			// rather than stop serving.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			n.cfg.Logger.Warn("bloomkv/server: accept", "err", err, "retry in", delay)
			select {
			case <-n.stop:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		if n.loop != nil {
			if err := n.loop.enroll(nc); err != nil {
				n.cfg.Logger.Warn("bloomkv/server: a connection could not join the event loop", "err", err)
			}
			continue
		}
		c := &respConn{nc: nc, rd: newRespReader(n.cfg.MaxBulk, n.cfg.MaxCommand), state: connState{stale: n.cfg.StaleReads}, writes: newConnWrites()}
		if !n.respSrv.add(c) {
			nc.Close()
			return
		}
		n.clients.Add(1)
		go n.serveConn(c)
	}
}

// add tracks c, whose nc is open, until done; false once closeConns ran.
func (s *respServer) add(c *respConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// done closes c's connection and counts the client out.
func (s *respServer) done(c *respConn, n *Node) {
	c.nc.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	n.clients.Add(-1)
}

// closeConns closes every open connection and refuses new ones.
func (s *respServer) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.nc.Close()
	}
}

// serveConn runs one connection until the client leaves, sends a
// malformed request or QUITs, or the node closes.
func (n *Node) serveConn(c *respConn) {
	defer n.respSrv.done(c, n)
	var b burst
	n.serveStream(c, &b, time.Now())
}

// serveStream runs c's commands, reading from c.nc, until the client
// leaves, sends a malformed request or QUITs, or the node closes; b holds
// the writes still owed from before, start the end of the last command.
func (n *Node) serveStream(c *respConn, b *burst, start time.Time) {
	for {
		args, err := c.rd.next()
		if err != nil {
			// The commands before the bad one are answered first.
			n.endBurst(c, b)
			c.WriteError("ERR " + err.Error())
			c.flush()
			return
		}
		if args == nil {
			n.endBurst(c, b)
			if !c.flush() || c.closing {
				return
			}
			if err := c.rd.fill(c.nc); err != nil {
				return
			}
			start = time.Now()
			continue
		}
		start = n.runCommand(c, b, args, start)
		if c.closing {
			n.endBurst(c, b)
			c.flush()
			return
		}
		// Replies beyond maxKeptOut go out before the burst ends, so that
		// a burst of GETs of large values is not answered from one buffer
		// holding them all. The buffer holds the replies of the commands
		// before any pending write (those are answered in order when a
		// later command or the burst's end waits for them), so order
		// holds.
		if len(c.out) >= maxKeptOut && !c.flush() {
			return
		}
	}
}

// flush writes the buffered replies; false if the connection failed.
func (c *respConn) flush() bool {
	if len(c.out) == 0 {
		return true
	}
	_, err := c.nc.Write(c.out)
	if cap(c.out) > maxKeptOut {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return err == nil
}

// The replies, in RESP2. Simple strings and errors are one line: CR and
// LF in them become spaces.

// Close ends the connection once the replies so far are written (QUIT).
func (c *respConn) Close() { c.closing = true }

func (c *respConn) WriteString(s string) {
	c.out = append(c.out, '+')
	c.out = appendLine(c.out, s)
}

func (c *respConn) WriteError(s string) {
	c.out = append(c.out, '-')
	c.out = appendLine(c.out, s)
}

func appendLine(b []byte, s string) []byte {
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return append(append(b, s...), '\r', '\n')
}

func (c *respConn) WriteBulk(v []byte) {
	c.out = appendHeader(c.out, '$', int64(len(v)))
	c.out = append(append(c.out, v...), '\r', '\n')
}

func (c *respConn) WriteBulkString(v string) {
	c.out = appendHeader(c.out, '$', int64(len(v)))
	c.out = append(append(c.out, v...), '\r', '\n')
}

func (c *respConn) WriteInt(v int)       { c.out = appendHeader(c.out, ':', int64(v)) }
func (c *respConn) WriteInt64(v int64)   { c.out = appendHeader(c.out, ':', v) }
func (c *respConn) WriteArray(count int) { c.out = appendHeader(c.out, '*', int64(count)) }
func (c *respConn) WriteNull()           { c.out = append(c.out, "$-1\r\n"...) }

// appendHeader appends a type byte, a number and CRLF.
func appendHeader(b []byte, kind byte, v int64) []byte {
	if 0 <= v && v <= 9 {
		return append(b, kind, byte('0'+v), '\r', '\n')
	}
	return append(strconv.AppendInt(append(b, kind), v, 10), '\r', '\n')
}
