package server

import (
	"errors"
	"fmt"
	"io"
	"net"
)

// The RESP parser (redcon) buffers a whole command before the handler sees
// it and has no limit of its own: a client declaring a bulk string of a
// terabyte would have the server grow its buffer for as long as bytes
// arrive. guardConn follows the request stream's framing as it is read and
// refuses what is too big before it is buffered, as Redis does with
// proto-max-bulk-len: the client gets "-ERR Protocol error: ..." and is
// disconnected.

const (
	maxArgs   = 1 << 20  // arguments of one command (Redis: 1024*1024)
	maxInline = 64 << 10 // an inline (non-RESP) command line
	// maxCountLine bounds a "*count" line, which a read may cut and the
	// guard then holds back: '*', a sign, the digits and CR.
	maxCountLine = 32
)

type guardListener struct {
	net.Listener
	maxBulk, maxCommand int64
}

func (l *guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardConn{Conn: c, g: respGuard{maxBulk: l.maxBulk, maxCommand: l.maxCommand}}, nil
}

type guardConn struct {
	net.Conn
	g    respGuard
	held []byte // the start of a "*count" line cut by the last read
	err  error
}

// errRefused ends the connection after the protocol error was sent.
var errRefused = errors.New("bloomkv/server: request refused")

func (c *guardConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) <= len(c.held) {
		return 0, io.ErrShortBuffer
	}
	for {
		// Bytes held back from the last read go first, and are parsed again.
		k := copy(p, c.held)
		c.held = c.held[:0]
		n, err := c.Conn.Read(p[k:])
		m, hold, gerr := c.g.feed(p[:k+n])
		if gerr != nil {
			// redcon has flushed every earlier reply before it reads again, so
			// this error goes out after them.
			io.WriteString(c.Conn, "-ERR Protocol error: "+gerr.Error()+"\r\n")
			c.err = errRefused
			return 0, io.EOF
		}
		c.held = append(c.held, p[m:m+hold]...)
		if m > 0 || err != nil {
			return m, err
		}
	}
}

// respGuard tracks where the request stream is in the RESP framing:
//
//	'*' count CRLF, then count times: '$' length CRLF, length bytes, CRLF
//
// or an inline command line. It checks lengths against the limits; the
// parser itself still rejects what is malformed. It also drops the
// requests Redis ignores and redcon refuses: a "*count" line with a count
// of 0 or less ("*0", "*-1") is not a command.
type respGuard struct {
	maxBulk, maxCommand int64

	state    guardState
	num      int64 // the number being read
	digits   int   // digits of it so far
	neg      bool  // it has a minus sign
	args     int64 // arguments left in the command
	skip     int64 // bulk bytes (and CRLF) left
	cmdBytes int64 // bulk bytes of the command so far
	line     int   // bytes of the inline line so far
}

type guardState uint8

const (
	gStart  guardState = iota // before a command
	gCount                    // in "*count\r\n"
	gDollar                   // expecting '$'
	gLen                      // in "$len\r\n"
	gBody                     // in a bulk string and its CRLF
	gInline                   // in an inline command line
)

// feed follows p and removes the ignored "*count" lines from it in place.
// It returns the bytes to pass on, p[:m], and how many bytes after them
// start a "*count" line that p cuts: the caller feeds those again, in
// front of the next read, so that the line can be judged whole. The
// error texts are Redis's.
func (g *respGuard) feed(p []byte) (m, hold int, err error) {
	w := 0          // p[:w] is the output so far
	lineStart := -1 // where in the output the current "*count" line starts
	for i := 0; i < len(p); i++ {
		b := p[i]
		p[w] = b
		w++
		switch g.state {
		case gStart:
			switch b {
			case '*':
				g.state, g.num, g.digits, g.neg, g.cmdBytes = gCount, 0, 0, false, 0
				lineStart = w - 1
			case '\r', '\n':
			default:
				g.state, g.line = gInline, 1
			}
		case gCount, gLen:
			if g.state == gCount && w-lineStart > maxCountLine {
				return 0, 0, errors.New("invalid multibulk length")
			}
			switch {
			case b >= '0' && b <= '9':
				g.num = g.num*10 + int64(b-'0')
				g.digits++
				if g.state == gCount && g.num > maxArgs && !g.neg {
					return 0, 0, errors.New("invalid multibulk length")
				}
				if g.state == gLen && g.num > g.maxBulk {
					return 0, 0, errors.New("invalid bulk length")
				}
				if g.num > 1<<40 { // a negative count with too many digits
					return 0, 0, errors.New("invalid multibulk length")
				}
			case b == '-' && g.state == gCount && g.digits == 0 && !g.neg:
				g.neg = true
			case b == '\r':
			case b == '\n':
				if g.state == gCount {
					if g.digits == 0 {
						return 0, 0, errors.New("invalid multibulk length")
					}
					if g.neg || g.num == 0 {
						w, lineStart = lineStart, -1 // ignored, as Redis does
						g.state = gStart
						break
					}
					g.args, g.state, lineStart = g.num, gDollar, -1
					break
				}
				if g.digits == 0 {
					return 0, 0, errors.New("invalid bulk length")
				}
				if g.cmdBytes += g.num; g.cmdBytes > g.maxCommand {
					return 0, 0, fmt.Errorf("command too big (commands are limited to %d bytes)", g.maxCommand)
				}
				g.skip, g.state = g.num+2, gBody
			default:
				if g.state == gCount {
					return 0, 0, errors.New("invalid multibulk length")
				}
				return 0, 0, errors.New("invalid bulk length")
			}
		case gDollar:
			if b != '$' {
				return 0, 0, fmt.Errorf("expected '$', got '%c'", b)
			}
			g.state, g.num, g.digits = gLen, 0, 0
		case gBody:
			n := min(g.skip, int64(len(p)-i))
			if w != i+1 { // something was dropped before: move the body down
				copy(p[w:], p[i+1:i+int(n)])
			}
			w += int(n) - 1
			g.skip -= n
			i += int(n) - 1
			if g.skip == 0 {
				if g.args--; g.args == 0 {
					g.state = gStart
				} else {
					g.state = gDollar
				}
			}
		case gInline:
			if b == '\n' {
				g.state = gStart
			} else if g.line++; g.line > maxInline {
				return 0, 0, errors.New("too big inline request")
			}
		}
	}
	if lineStart >= 0 { // a "*count" line not yet ended: judge it whole later
		g.state = gStart
		return lineStart, w - lineStart, nil
	}
	return w, 0, nil
}
