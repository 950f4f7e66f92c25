//go:build unix

package server

import (
	"time"

	"golang.org/x/sys/unix"
)

// Writing replies: the event loop writes to the socket itself and keeps
// what the socket does not take (eventloop.go, the invariants).

// flush writes the buffered replies to the socket, as much as it takes
// now, and keeps the rest in unsent (the ticker wakes the connection to
// write more). It reports false when a write failed: the caller closes
// the connection.
func (s *loopServer) flush(lc *loopConn) bool {
	c := lc.c
	if lc.broken {
		return false
	}
	out := c.out
	data := out
	queued := lc.unsentLen() > 0
	if queued {
		lc.unsent = append(lc.unsent, out...)
		data = lc.unsent[lc.sent:]
	}
	written, err := writeSome(lc.gc.Fd(), data)
	switch {
	case len(data) == 0:
	case written == 0:
		// The client reads nothing: wake it half as often, down to
		// loopBackoffMax, rather than every tick (a thousand stalled
		// clients would otherwise cost the loop a core).
		lc.backoff = min(max(2*lc.backoff, loopTickBusy), loopBackoffMax)
		lc.wakeAt.Store(time.Now().Add(lc.backoff).UnixNano())
	case lc.backoff != 0:
		lc.backoff = 0
		lc.wakeAt.Store(0)
	}
	switch {
	case err != nil:
		lc.broken = true
	case queued:
		lc.sent += written
		if lc.sent == len(lc.unsent) {
			lc.unsent, lc.sent = lc.unsent[:0], 0
			if cap(lc.unsent) > maxKeptOut {
				lc.unsent = nil
			}
		} else if lc.sent > len(lc.unsent)/2 {
			// Moved down once half is written: each byte moves at most
			// once on average.
			lc.unsent = lc.unsent[:copy(lc.unsent, lc.unsent[lc.sent:])]
			lc.sent = 0
		}
	case written < len(data):
		lc.unsent = append(lc.unsent[:0], data[written:]...)
		lc.sent = 0
	}
	if cap(out) > maxKeptOut {
		c.out = nil
	} else {
		c.out = out[:0]
	}
	s.setDraining(lc, lc.unsentLen() > 0)
	return !lc.broken
}

// unsentLen is how many bytes of replies wait for the socket.
func (lc *loopConn) unsentLen() int { return len(lc.unsent) - lc.sent }

// writeSome writes b to the non-blocking socket fd until it is written or
// the socket's buffer is full.
func writeSome(fd int, b []byte) (int, error) {
	written := 0
	for written < len(b) {
		n, err := unix.Write(fd, b[written:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return written, nil
		case err != nil:
			return written, err
		}
		written += n
	}
	return written, nil
}

func (s *loopServer) setDraining(lc *loopConn, draining bool) {
	if lc.draining == draining {
		return
	}
	lc.draining = draining
	s.mu.Lock()
	if draining {
		s.draining[lc] = struct{}{}
	} else {
		delete(s.draining, lc)
	}
	s.mu.Unlock()
}

// drainMax bounds what drainInput reads: a client that keeps sending
// after QUIT is not waited for.
const drainMax = 16 << 20

// drainInput reads and drops what the client sent that is already in the
// socket, before the loop closes a connection whose replies are all
// written: closing a socket with unread input sends a reset instead of
// the end of the stream, and the client's system may then drop replies
// it had received but its program not yet read (a client that pipelined
// commands after QUIT lost the tail of the replies before it:
// TestLoopQuitDropsLaterInput, CI at 7df1105).
func drainInput(fd int) {
	var buf [64 << 10]byte
	for read := 0; read < drainMax; {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return
		}
		read += n
	}
}
